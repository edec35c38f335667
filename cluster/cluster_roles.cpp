// The cluster's planner loop and role switching, with the observations a planner may use and
// the role time series.
#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "cluster/cluster.h"
#include "cluster/disagg_state.h"

namespace isim::cluster {

void Cluster::start_planner() {
  if (!d_->planner) return;
  d_->planning = true;
  d_->last_pull = now();
  for (size_t r = 0; r < engines_.size(); ++r) {
    const sim::Counters& c = engines_[r]->counters();
    d_->marks[r] = {c.prefill_tokens, c.decode_tokens, c.iterations, c.busy_time};
  }
  const sim::Nanos pull = sim::from_seconds(d_->planner->pull_interval_s());
  const sim::Nanos every = sim::from_seconds(d_->planner->interval_s());
  if (pull <= 0 || every <= 0) throw std::logic_error("planner: intervals must be > 0");
  queue_.schedule(now() + pull, sim::kPrioPlanner, sim::kClusterTarget, kEvPull, 0);
  queue_.schedule(now() + every, sim::kPrioPlanner + 1, sim::kClusterTarget, kEvDecide, 0);
}

void Cluster::first_token(int32_t, const sim::SessionState&, sim::Nanos ttft) {
  if (!d_) return;
  ++d_->window.ttft_count;
  d_->ttft_sum += sim::to_seconds(ttft);
}

void Cluster::segment_done(int32_t, const sim::SessionState& s, int64_t outputs,
                           double decode_s) {
  if (!d_) return;
  if (outputs > 1) {
    d_->window.itl_count += outputs - 1;
    d_->itl_sum += decode_s;
  }
  ++d_->window.turns_finished;
  // The turn's input as a stateless API sees it: the whole context before its outputs.
  d_->isl_sum += static_cast<double>(s.context - outputs);
  d_->osl_sum += static_cast<double>(outputs);
}

void Cluster::on_pull() {
  if (all_done()) return;
  FleetSnapshot snap = d_->window;
  snap.t = now();
  snap.dt_s = sim::to_seconds(now() - d_->last_pull);
  auto mean = [](double sum, int64_t n) { return n > 0 ? sum / static_cast<double>(n) : 0.0; };
  snap.ttft_mean_s = mean(d_->ttft_sum, snap.ttft_count);
  snap.itl_mean_s = mean(d_->itl_sum, snap.itl_count);
  snap.isl_mean = mean(d_->isl_sum, snap.turns_finished);
  snap.osl_mean = mean(d_->osl_sum, snap.turns_finished);
  for (size_t r = 0; r < engines_.size(); ++r) {
    const sim::Engine& e = *engines_[r];
    const sim::Counters& c = e.counters();
    PullMark& mk = d_->marks[r];
    const sim::TimeSample ts = e.view().sample(now());
    ReplicaMetrics m;
    m.role = d_->roles[r];
    m.switching = d_->switching[r];
    m.queued_prefill_tokens = e.view().load().queued_prefill_tokens;
    m.waiting_sessions = static_cast<int32_t>(ts.waiting + ts.swapped);
    m.running_sessions = static_cast<int32_t>(ts.running);
    m.decoding_sessions = e.view().decoding_sessions();
    m.kv_utilization =
        static_cast<double>(e.view().gpu().used()) / static_cast<double>(e.view().gpu().total());
    const double busy = sim::to_seconds(c.busy_time - mk.busy);
    const int64_t iters = c.iterations - mk.iterations;
    m.busy_fraction = snap.dt_s > 0 ? std::min(1.0, busy / snap.dt_s) : 0;
    m.mean_iteration_s = iters > 0 ? busy / static_cast<double>(iters) : 0;
    m.prefill_tokens_done = c.prefill_tokens - mk.prefill_tokens;
    m.decode_tokens_done = c.decode_tokens - mk.decode_tokens;
    snap.decode_tokens += m.decode_tokens_done;
    mk = {c.prefill_tokens, c.decode_tokens, c.iterations, c.busy_time};
    snap.replicas.push_back(m);
  }
  d_->planner->observe(snap);
  d_->window = FleetSnapshot{};
  d_->ttft_sum = d_->itl_sum = d_->isl_sum = d_->osl_sum = 0;
  d_->last_pull = now();
  queue_.schedule(now() + sim::from_seconds(d_->planner->pull_interval_s()), sim::kPrioPlanner,
                  sim::kClusterTarget, kEvPull, 0);
}

void Cluster::on_decide() {
  if (all_done()) return;
  PlannerContext ctx;
  ctx.now = now();
  ctx.roles = d_->roles;
  ctx.switching = d_->switching;
  for (size_t r = 0; r < engines_.size(); ++r) {
    ctx.cost_models.push_back(&engines_[r]->view().cost_model());
    ctx.max_num_seqs.push_back(specs_[r].config.max_num_seqs);
    ctx.max_num_batched_tokens.push_back(specs_[r].config.max_num_batched_tokens);
  }
  apply_roles(d_->planner->decide(ctx));
  queue_.schedule(now() + sim::from_seconds(d_->planner->interval_s()), sim::kPrioPlanner + 1,
                  sim::kClusterTarget, kEvDecide, 0);
}

void Cluster::apply_roles(const std::vector<RoleChange>& changes) {
  if (!d_) throw std::logic_error("apply_roles: a fleet without roles");
  auto bad = [this](const std::string& m) {
    throw std::logic_error(fmt::format("planner {}: {}", d_->stats.planner, m));
  };
  std::vector<Role> after = d_->switch_to;
  std::vector<char> changed(engines_.size(), 0);
  for (const RoleChange& c : changes) {
    if (c.replica < 0 || c.replica >= size()) bad(fmt::format("no replica {}", c.replica));
    const auto r = static_cast<size_t>(c.replica);
    if (changed[r]) bad(fmt::format("replica {} changed twice", c.replica));
    if (d_->switching[r]) bad(fmt::format("replica {} is switching", c.replica));
    if (d_->roles[r] == Role::kMixed || c.to == Role::kMixed)
      bad(fmt::format("replica {}: planners move replicas between prefill and decode only",
                      c.replica));
    changed[r] = 1;
    after[r] = c.to;
  }
  const auto np = std::count(after.begin(), after.end(), Role::kPrefill);
  const auto nd = std::count(after.begin(), after.end(), Role::kDecode);
  if (np < 1 || nd < 1) bad("a disaggregated fleet keeps at least one prefill and one decode replica");
  for (const RoleChange& c : changes)
    if (d_->roles[static_cast<size_t>(c.replica)] != c.to) begin_switch(c.replica, c.to);
}

void Cluster::begin_switch(int32_t r, Role to) {
  const auto i = static_cast<size_t>(r);
  ++d_->stats.role_switches;
  d_->switch_to[i] = to;
  d_->switching[i] = 1;
  if (d_->cfg.switching.drain_first) {
    d_->draining[i] = 1;  // progress_switches pays the cost once its work is done
    return;
  }
  d_->roles[i] = to;  // zero-downtime: new work follows the new role at once
  progress_switches();
}

void Cluster::progress_switches() {
  for (int32_t r = 0; r < size(); ++r) {
    const auto i = static_cast<size_t>(r);
    if (!d_->switching[i] || engine(r).handoff().held_until() > now()) continue;
    sim::Engine& e = replica(r);
    if (d_->draining[i]) {
      if (e.has_work() || !e.view().queues().exporting().empty() ||
          !e.view().queues().importing().empty() || !d_->imports[i].empty())
        continue;
      d_->draining[i] = 0;
    } else if (d_->roles[i] != d_->switch_to[i]) {
      continue;
    }
    if (d_->cfg.switching.paused_kv != "keep" && d_->switch_to[i] == Role::kPrefill) {
      // It stops decoding: the KV of its paused sessions is dropped or moved.
      const std::vector<int32_t> paused = e.view().paused();
      for (int32_t h : paused) relocate_paused(r, h);
    }
    const sim::Nanos until = now() + sim::from_seconds(d_->cfg.switching.cost_s);
    e.handoff().hold_until(until + 1);  // released by the switch-done event
    d_->roles[i] = d_->switch_to[i];
    d_->draining[i] = 2;  // paying the cost
    queue_.schedule(until, sim::kPrioSwitch, sim::kClusterTarget, kEvSwitchDone, r);
  }
}

void Cluster::finish_switch(int32_t r) {
  const auto i = static_cast<size_t>(r);
  d_->switching[i] = 0;
  d_->draining[i] = 0;
  replica(r).handoff().hold_until(0);
  touch(r);
}

void Cluster::sample_roles(sim::Nanos t) {
  RoleSample s;
  s.t_s = sim::to_seconds(t);
  // This instant's replica samples are the last size() entries, in replica order.
  const size_t first = replica_ts_.size() - engines_.size();
  for (int32_t r = 0; r < size(); ++r) {
    const auto i = static_cast<size_t>(r);
    const sim::Engine& e = engine(r);
    if (d_->switching[i]) ++s.switching;
    switch (d_->roles[i]) {
      case Role::kMixed:
        ++s.mixed;
        break;
      case Role::kPrefill:
        ++s.prefill;
        s.prefill_queued_tokens += e.view().load().queued_prefill_tokens;
        break;
      case Role::kDecode:
        ++s.decode;
        s.decode_waiting += static_cast<int32_t>(replica_ts_[first + i].s.waiting) +
                            static_cast<int32_t>(d_->imports[i].size());
        break;
    }
  }
  d_->stats.roles.push_back(s);
}

void Cluster::fill_disagg(RunResult& r) const {
  r.disagg = d_->stats;
  const auto n = static_cast<double>(d_->stats.transfers);
  r.disagg.transfer_s_mean = n > 0 ? d_->transfer_s_sum / n : 0;
  r.disagg.transfer_wait_s_mean = n > 0 ? d_->wait_s_sum / n : 0;
}

}  // namespace isim::cluster
