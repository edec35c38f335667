#include "cluster/cluster.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "cluster/arrivals.h"
#include "cluster/intercepts.h"
#include "cluster/lockstep.h"
#include "cluster/planning.h"
#include "cluster/roles.h"
#include "cluster/run_limit.h"
#include "cluster/tiers.h"
#include "cluster/transfers.h"

namespace isim::cluster {

Cluster::~Cluster() = default;

Cluster::Cluster(const trace::Trace& trace, std::vector<ReplicaSpec> replicas, Router& router,
                 Checks checks, const DisaggConfig& disagg, Planner* planner)
    : fleet_(trace, std::move(replicas), router, checks.engines, this),
      sampler_(fleet_),
      checker_(fleet_, checks) {
  Parts& parts = fleet_.parts();
  arrivals_ = std::make_unique<Arrivals>(fleet_);
  parts.arrivals = arrivals_.get();
  intercepts_ = std::make_unique<Intercepts>(fleet_);
  parts.intercepts = intercepts_.get();
  const bool tiered = Tiers::used(fleet_);
  if (disagg.enabled || tiered) {
    transfers_ = std::make_unique<Transfers>(fleet_);
    parts.transfers = transfers_.get();
  }
  if (disagg.enabled) {
    roles_ = std::make_unique<Roles>(fleet_, disagg, planner);
    parts.roles = roles_.get();
    planning_ = std::make_unique<Planning>(fleet_, planner, disagg.switching.cost_s);
    parts.planning = planning_.get();
  }
  lockstep_ = std::make_unique<Lockstep>(fleet_);
  if (lockstep_->any()) {
    if (disagg.enabled)
      throw std::logic_error("Cluster: lockstep groups in a disaggregated fleet are not simulated");
    parts.lockstep = lockstep_.get();
  } else {
    lockstep_.reset();
  }
  if (tiered) {
    tiers_ = std::make_unique<Tiers>(fleet_, disagg.tiers, disagg.links);
    parts.tiers = tiers_.get();
  }
  for (int32_t r = 0; r < size(); ++r) {
    ports_.push_back(std::make_unique<ReplicaPort>(r, *this));
    fleet_.raw(r).set_listener(ports_.back().get());
    const ReplicaSpec& sp = fleet_.spec(r);
    if (sp.executor->live() && serial_reason_.empty()) serial_reason_ = "a live executor";
    if (sp.observer && serial_reason_.empty()) serial_reason_ = "an event trace";
  }
  if (roles_) serial_reason_ = "a disaggregated fleet";
  if (tiers_ && serial_reason_.empty()) serial_reason_ = "KV tiers";
  if (lockstep_ && serial_reason_.empty()) serial_reason_ = "lockstep groups";
  if (checks.each_event && serial_reason_.empty()) serial_reason_ = "checks after every event";
  // A lone replica has no one to advance apart from: windows would only add their bookkeeping
  // (a fifth of bench-100k's time).
  if (size() == 1 && serial_reason_.empty()) serial_reason_ = "one replica";
  windows_ = std::make_unique<Windows>(fleet_, ports_, 1);
  if (size() == 1 && !transfers_ && !roles_ && !lockstep_ && !tiers_) {
    run_limit_ = std::make_unique<RunLimit>(fleet_.queue(), sampler_, false);
    fleet_.replica(0).set_run_horizon(run_limit_.get());
  } else if (serial_reason_.empty() && !checks.global) {
    // A windowed fleet: each replica's runs are settled when the fleet reaches it (the global
    // check reads every replica after each instant: it would settle them all).
    run_limit_ = std::make_unique<RunLimit>(fleet_.queue(), sampler_, true);
    fleet_.set_settles(true);
    for (int32_t r = 0; r < size(); ++r) fleet_.raw(r).set_run_horizon(run_limit_.get());
  }
}

void Cluster::set_threads(int32_t n) {
  if (n < 1) throw std::logic_error("Cluster::set_threads: n must be >= 1");
  const bool finishes = windows_->finishes_matter();
  windows_ = std::make_unique<Windows>(fleet_, ports_, serial_reason_.empty() ? n : 1);
  windows_->set_finishes_matter(finishes);
}

void Cluster::set_observer(std::function<void(const sim::IterationRecord&)> f) {
  for (int32_t r = 0; r < size(); ++r) fleet_.replica(r).notes().set_observer(f);
  if (f && serial_reason_.empty()) serial_reason_ = "an iteration observer";
}

void Cluster::set_progress(ProgressFn f, int64_t every) {
  if (every <= 0) throw std::logic_error("Cluster::set_progress: every must be > 0");
  progress_ = std::move(f);
  progress_every_ = every;
}

void Cluster::load() {
  arrivals_->load();
  windows_->set_finishes_matter(arrivals_->starts_after_any());
}

Role Cluster::role(int32_t r) const {
  return roles_ ? roles_->role(r) : Role::kMixed;
}

bool Cluster::switching(int32_t r) const {
  return roles_ && roles_->switching(r);
}

void Cluster::apply_roles(const std::vector<RoleChange>& changes) {
  if (!roles_) throw std::logic_error("apply_roles: a fleet without roles");
  roles_->apply(changes);
}

void Cluster::paused(int32_t r, int32_t h, const sim::SessionState& s, sim::Nanos duration) {
  intercepts_->paused(r, h, s, duration);
}

void Cluster::apply(Effect& e) {
  fleet_.queue().advance_to(e.end);
  switch (e.kind) {
    case Effect::kPaused:
      return intercepts_->ends_at(e.session, e.end + e.value);
    case Effect::kFinished:
      fleet_.ledger().finished(e.session, e.m);
      ++fleet_.counts().done;
      return arrivals_->finished(e.session);
    case Effect::kTurnTtft:
      return fleet_.ledger().turn_ttft(sim::to_seconds(e.value));
    case Effect::kTurn:
      return fleet_.ledger().turn(std::move(e.turn), e.value, e.first, e.gaps);
  }
}

void Cluster::finished(int32_t, const sim::SessionState& s) {
  fleet_.ledger().finished(s.idx, s.m);
  ++fleet_.counts().done;
  arrivals_->finished(s.idx);
}

void Cluster::turn_first_token(int32_t r, const sim::SessionState& s, sim::Nanos ttft) {
  fleet_.ledger().turn_ttft(sim::to_seconds(ttft));
  first_token(r, s, ttft);
}

void Cluster::first_token(int32_t r, const sim::SessionState& s, sim::Nanos ttft) {
  if (planning_) planning_->first_token(ttft, r, s.context);
}

void Cluster::segment_done(int32_t r, const sim::SessionState& s, int64_t outputs,
                           double decode_s) {
  fleet_.ledger().turn(turn_record(r, s, outputs), turn_start(s), s.seg_first_token,
                       s.seg_gaps.runs());
  if (planning_) planning_->segment_done(s, outputs, decode_s, r);
}

void Cluster::prefilled(int32_t r, int32_t h, const sim::SessionState& s,
                        sim::Nanos iteration_start) {
  if (!roles_) throw std::logic_error("Cluster: an export in a fleet without roles");
  roles_->prefilled(r, h, s, iteration_start);
}

void Cluster::evicting(int32_t r, const sim::SessionState& s) {
  if (tiers_) tiers_->evicting(r, s);
}

void Cluster::dispatch(const sim::Event& ev) {
  if (ev.target >= 0) {
    real_event_ = true;
    fleet_.replica(ev.target).handle(ev);
    fleet_.touch(ev.target);
    // An engine that checks itself did so as the iteration ended, after everything its
    // listener did to it.
    if (fleet_.engine(ev.target).view().config().check_invariants) fleet_.clear_changed(ev.target);
    return;
  }
  Component& c = fleet_.part(ev.target);
  if (c.keeps_run()) real_event_ = true;
  c.handle(ev);
}

void Cluster::start_iterations() {
  // A settled run may have ended its step at this instant (Engine::settle): as an iteration
  // end, it touches its replica.
  for (int32_t r : fleet_.take_settled()) fleet_.touch(r);
  // Only a replica that had an event can have new work while idle; in replica order.
  for (int32_t r : fleet_.take_touched()) {
    if (lockstep_ && lockstep_->owns(r))
      lockstep_->start(r);  // the core's whole group, together
    else if (!fleet_.engine(r).busy())
      fleet_.replica(r).maybe_start();  // a busy one starts nothing
    windows_->refresh(r);
  }
  if (lockstep_)  // a group launches cores that had no event
    for (int32_t r = 0; r < size(); ++r) windows_->refresh(r);
}

void Cluster::run_instant(sim::Nanos t) {
  sim::EventQueue& queue = fleet_.queue();
  sampler_.before(t);
  queue.advance_to(t);
  real_event_ = false;
  ++windows_->stats().instants;
  // Iteration ends first (their priority is the lowest), as one queue would order them.
  for (int32_t r : windows_->take(t)) {  // refresh leaves take's list alone
    dispatch(fleet_.clock(r).pop());
    windows_->refresh(r);
    checker_.after_event();
  }
  while (!queue.empty() && queue.top().time == t) {
    dispatch(queue.pop());
    checker_.after_event();
  }
  if (roles_) roles_->settle();
  if (tiers_) tiers_->pump_fetches();
  if (transfers_) checker_.after_event();
  start_iterations();
  if (real_event_) end_ = t;
  checker_.after_instant();  // with each_event: the iterations just started, then the fleet
  count_instants(t, 1);
}

void Cluster::run_window(sim::Nanos h) {
  sim::Nanos last = 0;
  const int64_t ends = windows_->stats().window_ends;
  std::vector<Effect>& effects = windows_->run(h, last);
  for (Effect& e : effects) apply(e);
  fleet_.queue().advance_to(last);
  end_ = last;
  checker_.after_instant();
  count_instants(last, windows_->stats().window_ends - ends);
}

void Cluster::count_instants(sim::Nanos t, int64_t n) {
  if (!progress_) return;
  const int64_t before = instants_ / progress_every_;
  instants_ += n;
  if (instants_ / progress_every_ != before)
    progress_({t, fleet_.counts().done, static_cast<int64_t>(fleet_.trace().size()), false});
}

bool Cluster::run_until(sim::Nanos horizon) {
  sim::EventQueue& queue = fleet_.queue();
  if (run_limit_) run_limit_->set_until(horizon);
  const auto total = static_cast<int64_t>(fleet_.trace().size());
  const bool windowed = serial_reason_.empty();
  while (true) {
    for (int32_t r : fleet_.take_settled()) windows_->refresh(r);  // their iteration ends moved
    const sim::Nanos tg = queue.empty() ? sim::kForever : queue.top().time;
    const sim::Nanos te = windows_->earliest();
    const sim::Nanos t = std::min(tg, te);
    if (t == sim::kForever) break;
    if (t > horizon) return false;
    if (windowed && te < tg) {
      sampler_.before(te);
      // Before the next fleet event, after the instant of the next sample (it shows the state
      // every instant up to it left) and of the horizon.
      const auto after = [](sim::Nanos x) { return x == sim::kForever ? x : x + 1; };
      const sim::Nanos h = windows_->horizon(std::min({tg, after(sampler_.due()), after(horizon)}));
      if (h > te) {
        run_window(h);
        continue;
      }
    }
    run_instant(t);
  }
  if (transfers_ && !fleet_.all_done())
    throw std::logic_error(fmt::format(
        "Cluster: the run stalled at t={} ns with {} of {} sessions unfinished (KV waiting for "
        "decode or fetch room that nothing frees)",
        end_, total - fleet_.counts().done, total));
  if (progress_) progress_({end_, fleet_.counts().done, total, true});
  return true;
}

}  // namespace isim::cluster
