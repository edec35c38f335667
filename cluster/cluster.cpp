#include "cluster/cluster.h"

#include "cluster/disagg_state.h"
#include "cluster/fleet_view.h"
#include "cluster/tier_state.h"

#include <algorithm>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "core/input_error.h"

namespace isim::cluster {

Cluster::~Cluster() = default;

Cluster::Cluster(const trace::Trace& trace, std::vector<ReplicaSpec> replicas, Router& router,
                 Checks checks, const DisaggConfig& disagg, Planner* planner)
    : trace_(trace),
      specs_(std::move(replicas)),
      router_(router),
      check_(checks.global),
      check_each_(checks.each_event),
      ledger_(trace),
      admitted_(specs_.size(), 0),
      resumed_(specs_.size(), 0),
      is_touched_(specs_.size(), 0),
      changed_(specs_.size(), 0) {
  if (specs_.empty()) throw InputError("cluster.replicas: must be >= 1");
  for (size_t r = 0; r < specs_.size(); ++r) {
    auto& sp = specs_[r];
    if (!sp.executor || !sp.policy) throw std::logic_error("Cluster: a replica lacks its parts");
    sp.config.check_invariants = sp.config.check_invariants || checks.engines;
    engines_.push_back(std::make_unique<sim::Engine>(static_cast<int32_t>(r), queue_, sp.config,
                                                     *sp.executor, *sp.policy));
    engines_.back()->set_listener(this);
    engines_.back()->set_kv_manager(sp.kv_manager);
    engines_.back()->set_run_observer(sp.observer);
  }
  const double dt = specs_.front().config.timeseries_interval_s;
  dt_ = dt > 0 ? sim::from_seconds(dt) : 0;
  if (disagg.enabled) {
    if (disagg.roles.size() != specs_.size())
      throw std::logic_error("Cluster: one role per replica is needed");
    d_ = std::make_unique<DisaggState>();
    d_->cfg = disagg;
    d_->planner = planner;
    d_->roles = disagg.roles;
    d_->switching.assign(specs_.size(), 0);
    d_->draining.assign(specs_.size(), 0);
    d_->switch_to = disagg.roles;
    for (size_t r = 0; r < specs_.size(); ++r) {
      d_->links.add(disagg.links.intra_node);
      d_->links.add(disagg.links.inter_node);
    }
    d_->imports.resize(specs_.size());
    d_->marks.resize(specs_.size());
    d_->stats.enabled = true;
    d_->stats.planner = planner ? planner->name() : "static";
    if (planner) d_->stats.planner_facts = planner->describe();
  }
  init_tiers(disagg.tiers, disagg.links);
}

void Cluster::set_observer(std::function<void(const sim::IterationRecord&)> f) {
  for (auto& e : engines_) e->set_observer(f);
}

void Cluster::set_progress(ProgressFn f, int64_t every) {
  if (every <= 0) throw std::logic_error("Cluster::set_progress: every must be > 0");
  progress_ = std::move(f);
  progress_every_ = every;
}

void Cluster::load() {
  for (size_t r = 0; r < specs_.size(); ++r)
    if (specs_[r].executor->live())
      specs_[r].executor->begin(trace_, engines_[r]->blocks().gpu, engines_[r]->blocks().cpu);
  std::set<int64_t> block_sizes;
  for (const auto& e : engines_) block_sizes.insert(e->block_tokens());
  const bool live = std::any_of(specs_.begin(), specs_.end(),
                                [](const ReplicaSpec& s) { return s.executor->live(); });
  load_start_after();
  fits_all_.assign(trace_.size(), 0);
  for (size_t i = 0; i < trace_.size(); ++i) {
    const trace::Session& src = trace_[i];
    for (size_t k = 0; k < src.segments.size(); ++k)
      if (live && src.segments[k].event.kind != trace::ContextEventKind::kNone)
        throw InputError(fmt::format("session {}: segments[{}].context_event: live executors "
                                     "replay no context events (run it with executor: sim)",
                                     src.id, k));
    for (size_t k = 0; k < src.segments.size(); ++k)
      if (src.segments[k].output < 1)
        throw InputError(
            fmt::format("session {}: segments[{}].output: must be >= 1 (every "
                        "segment decodes at least one token)",
                        src.id, k));
    // Where no replica fits, the first one says why.
    size_t fit = 0;
    std::string why;
    for (size_t r = 0; r < engines_.size(); ++r) {
      std::string w = engines_[r]->never_fits(src);
      if (w.empty()) ++fit;
      if (r == 0) why = std::move(w);
    }
    if (fit == 0) {
      ledger_.skipped(static_cast<int32_t>(i));
      ++done_;
      skipped_.push_back(fmt::format("session {} skipped: {}", src.id, why));
      if (!dependents_.empty()) {
        // It still arrives, to start its dependents (StartAfter).
        never_fits_[i] = 1;
        if (!has_start_after(static_cast<int32_t>(i)) && !dependents_[i].empty())
          arrivals_.push_back(static_cast<int32_t>(i));
      }
      continue;
    }
    fits_all_[i] = fit == engines_.size();
    for (int64_t bt : block_sizes) sim::prefix_chain(src, bt);  // InputError before the run
    if (!has_start_after(static_cast<int32_t>(i))) arrivals_.push_back(static_cast<int32_t>(i));
  }
  resolve_forks();
  std::stable_sort(arrivals_.begin(), arrivals_.end(), [this](int32_t a, int32_t b) {
    return sim::from_seconds(trace_[static_cast<size_t>(a)].arrival_s) <
           sim::from_seconds(trace_[static_cast<size_t>(b)].arrival_s);
  });
  schedule_next_arrival();
}

void Cluster::schedule_next_arrival() {
  if (next_arrival_ >= arrivals_.size()) return;
  const int32_t i = arrivals_[next_arrival_++];
  queue_.schedule(sim::from_seconds(trace_[static_cast<size_t>(i)].arrival_s), sim::kPrioArrival,
                  sim::kClusterTarget, kEvArrival, i);
}

int32_t Cluster::route(const RouteRequest& q) {
  View v(*this, q);
  const int32_t r = router_.route(q, v);
  if (r < 0 || r >= size() || !v.eligible(r))
    throw std::logic_error(
        fmt::format("router {} placed session {} on replica {}, which cannot "
                    "take it",
                    router_.name(), q.session, r));
  return r;
}

void Cluster::on_arrival(int32_t i) {
  schedule_next_arrival();
  arrive(i);
}

void Cluster::arrive(int32_t i) {
  if (!starting(i)) return;
  if (!opened_) {
    // Waste accounting starts for the whole fleet at the first arrival.
    for (auto& e : engines_) e->open(now());
    opened_ = true;
    if (d_) start_planner();
  }
  const trace::Session& src = trace_[static_cast<size_t>(i)];
  RouteRequest q;
  q.session = i;
  q.context_tokens = src.segments.front().input;
  sim::SessionState s = arriving(i);
  if (d_) {
    place_arrival(i, std::move(s), q);
    fork_session_ = -1;
  } else {
    const int32_t r = route(q);
    fork_session_ = -1;
    ++admitted_[static_cast<size_t>(r)];
    touch(r);
    ledger_.placed(i, r, replica(r).admit(std::move(s)));
  }
  if (!dependents_.empty()) start_dependents(i, Trigger::kArrival);
}

void Cluster::on_intercept_end(int32_t i) {
  const Location at = ledger_.where(i);
  if (engine(at.replica).session(at.handle).moving_paused) {
    d_->resume_on_landing[i] = now();  // resumes when its KV lands
    return;
  }
  resume_session(i, -1);
}

void Cluster::resume_session(int32_t i, sim::Nanos ended_at) {
  const Location at = ledger_.where(i);
  sim::Engine& holder = replica(at.replica);
  const sim::SessionState& s = holder.session(at.handle);
  const trace::Session& src = trace_[static_cast<size_t>(i)];
  const auto seg = static_cast<size_t>(s.segments_done());
  const double duration_s = src.segments[seg].intercept->duration_s;
  RouteRequest q;
  q.session = i;
  q.resume = true;
  q.holder = at.replica;
  q.holder_kv_tokens = s.kv;
  q.holder_gpu_blocks = static_cast<int64_t>(s.gpu_blocks.size());
  q.context_tokens = s.context;
  const trace::Segment& next = src.segments[seg + 1];
  if (next.event.kind == trace::ContextEventKind::kReset) {
    // The summary replaces the context; of the KV held, only the surviving tokens still count.
    q.context_tokens = next.event.tokens;
    q.holder_kv_tokens = next.kv_surviving(s.kv);
    q.holder_gpu_blocks = std::min(q.holder_gpu_blocks, q.holder_kv_tokens / holder.block_tokens());
  }
  q.context_tokens += next.input;
  if (d_ && place_resume(i, q, duration_s, ended_at)) return;
  const int32_t r = route(q);
  ++resumed_[static_cast<size_t>(r)];
  touch(r);
  if (t_ && resume_with_tiers(q, r, duration_s, ended_at)) return;
  if (r == at.replica) {
    holder.resume(at.handle, duration_s, ended_at);
    return;
  }
  sim::SessionState moved = holder.export_paused(at.handle, sim::LostCause::kMigration);
  touch(at.replica);  // its freed blocks may let a waiting session in
  ++moved.m.migrations;
  ++migrations_;
  ledger_.placed(i, r, replica(r).admit_resumed(std::move(moved), duration_s, ended_at));
}

void Cluster::paused(int32_t r, int32_t h, const sim::SessionState& s, sim::Nanos duration) {
  queue_.schedule(now() + duration, sim::kPrioInterceptEnd, sim::kClusterTarget, kEvInterceptEnd,
                  s.idx);
  // Paused on a replica that no longer decodes: its KV is settled by paused_kv after this
  // instant's events (the engine's policy acts on the pause first).
  if (d_ && d_->cfg.switching.paused_kv != "keep" && d_->roles[static_cast<size_t>(r)] == Role::kPrefill)
    d_->stray_paused.push_back({r, h, s.idx});
}

void Cluster::finished(int32_t, const sim::SessionState& s) {
  ledger_.finished(s.idx, s.m);
  ++done_;
  if (!dependents_.empty()) start_dependents(s.idx, Trigger::kFinish);
}

void Cluster::turn_first_token(int32_t r, const sim::SessionState& s, sim::Nanos ttft) {
  ledger_.turn_ttft(sim::to_seconds(ttft));
  first_token(r, s, ttft);
}

void Cluster::touch(int32_t r) {
  if (is_touched_[static_cast<size_t>(r)]) return;
  is_touched_[static_cast<size_t>(r)] = 1;
  touched_.push_back(r);
}

void Cluster::dispatch(const sim::Event& ev) {
  if (ev.target != sim::kClusterTarget) {
    real_event_ = true;
    replica(ev.target).handle(ev);
    touch(ev.target);
    // An engine that checks itself did so as the iteration ended, after everything its
    // listener did to it.
    if (engines_[static_cast<size_t>(ev.target)]->config().check_invariants)
      changed_[static_cast<size_t>(ev.target)] = 0;
    return;
  }
  switch (ev.type) {
    case kEvLink:
      real_event_ = true;
      on_link(static_cast<int32_t>(ev.arg));
      return;
    case kEvPull:
      on_pull();
      return;
    case kEvDecide:
      on_decide();
      return;
    case kEvSwitchDone:
      real_event_ = true;
      finish_switch(static_cast<int32_t>(ev.arg));
      return;
    case kEvTierLink:
      real_event_ = true;
      on_tier_link(static_cast<int32_t>(ev.arg));
      return;
    default:
      break;
  }
  real_event_ = true;
  switch (ev.type) {
    case kEvArrival:
      on_arrival(static_cast<int32_t>(ev.arg));
      break;
    case kEvStartAfter:
      arrive(static_cast<int32_t>(ev.arg));
      break;
    case kEvInterceptEnd:
      on_intercept_end(static_cast<int32_t>(ev.arg));
      break;
    default:
      throw std::logic_error("Cluster: unknown event type");
  }
}

void Cluster::sample(sim::Nanos t) {
  const int64_t cap = specs_.front().config.max_time_samples;
  if (static_cast<int64_t>(fleet_ts_.size()) >= cap) {
    const double dt = specs_.front().config.timeseries_interval_s;
    throw InputError(fmt::format(
        "metrics.timeseries_interval_s: {} s reached the cap of {} time-series samples at "
        "t = {:.3f} s, with sessions still running (the run outlasts its trace); raise it, "
        "e.g. -p metrics.timeseries_interval_s={}",
        dt, cap, sim::to_seconds(t), dt * 10));
  }
  sim::TimeSample fleet;
  fleet.t_s = sim::to_seconds(t);
  for (const auto& e : engines_) {
    sim::TimeSample s = e->sample(t);
    replica_ts_.push_back({e->replica(), s});
    fleet.merge(s);
  }
  fleet_ts_.push_back(fleet);
  if (d_) sample_roles(t);  // reads the replica samples just taken
}

bool Cluster::run_until(sim::Nanos horizon) {
  while (!queue_.empty()) {
    const sim::Nanos t = queue_.top().time;
    if (t > horizon) return false;
    // Samples strictly before t see the state left by the events before t (none once every
    // session ended: only the planner's own events may follow).
    while (dt_ > 0 && next_sample_ < t && !all_done()) {
      sample(next_sample_);
      next_sample_ += dt_;
    }
    real_event_ = false;
    while (!queue_.empty() && queue_.top().time == t) {
      dispatch(queue_.pop());
      if (check_each_) check_changed();
    }
    if (d_) {
      pump_imports();
      progress_switches();
      settle_strays();
    }
    if (t_) pump_fetches();
    if (check_each_ && (d_ || t_)) check_changed();
    // Only a replica that had an event can have new work while idle; in replica order.
    std::sort(touched_.begin(), touched_.end());
    for (int32_t r : touched_) {
      if (!engine(r).busy()) replica(r).maybe_start();  // a busy replica starts nothing
      is_touched_[static_cast<size_t>(r)] = 0;
    }
    touched_.clear();
    if (real_event_) end_ = t;
    if (check_each_) {
      check_changed();  // the iterations just started, then the fleet
    } else if (check_) {
      check_global();
    }
    if (progress_ && ++instants_ % progress_every_ == 0)
      progress_({t, done_, static_cast<int64_t>(trace_.size()), false});
  }
  if ((d_ || t_) && !all_done())
    throw std::logic_error(fmt::format(
        "Cluster: the run stalled at t={} ns with {} of {} sessions unfinished (KV waiting for "
        "decode or fetch room that nothing frees)",
        end_, static_cast<int64_t>(trace_.size()) - done_, trace_.size()));
  if (progress_) progress_({end_, done_, static_cast<int64_t>(trace_.size()), true});
  return true;
}

}  // namespace isim::cluster
