// The planner loop (cluster/planning.h) and the observations a planner may use.
#include "cluster/planning.h"

#include <algorithm>
#include <stdexcept>

#include "cluster/roles.h"
#include "sim/replica_queues.h"

namespace isim::cluster {

Planning::Planning(Fleet& f, Planner* planner, double switch_cost_s)
    : Component(f),
      planner_(planner),
      marks_(static_cast<size_t>(f.size())),
      per_replica_(static_cast<size_t>(f.size())),
      seen_(static_cast<size_t>(f.size())),
      switch_cost_s_(switch_cost_s) {}

void Planning::handle(const sim::Event& ev) {
  switch (ev.type) {
    case kPull:
      pull();
      return;
    case kDecide:
      decide();
      return;
    default:
      unknown(ev);
  }
}

void Planning::start() {
  if (!planner_) return;
  last_pull_ = f_.now();
  for (int32_t r = 0; r < f_.size(); ++r) {
    const sim::Counters& c = f_.engine(r).counters();
    marks_[static_cast<size_t>(r)] = {c.prefill_tokens, c.decode_tokens, c.iterations, c.busy_time};
  }
  const sim::Nanos pull = sim::from_seconds(planner_->pull_interval_s());
  const sim::Nanos every = sim::from_seconds(planner_->interval_s());
  if (pull <= 0 || every <= 0) throw std::logic_error("planner: intervals must be > 0");
  schedule(f_.now() + pull, sim::kPrioPlanner, kPull, 0);
  schedule(f_.now() + every, sim::kPrioPlanner + 1, kDecide, 0);
}

void Planning::first_token(sim::Nanos ttft, int32_t r, int64_t context) {
  ++window_.ttft_count;
  ttft_sum_ += sim::to_seconds(ttft);
  if (r < 0) return;
  ReplicaWindow& w = per_replica_[static_cast<size_t>(r)];
  ++w.ttft_n;
  w.ttft_sum += sim::to_seconds(ttft);
  w.isl_sum += static_cast<double>(context);
}

void Planning::segment_done(const sim::SessionState& s, int64_t outputs, double decode_s,
                            int32_t r) {
  if (outputs > 1) {
    window_.itl_count += outputs - 1;
    itl_sum_ += decode_s;
    if (r >= 0) {
      per_replica_[static_cast<size_t>(r)].itl_n += outputs - 1;
      per_replica_[static_cast<size_t>(r)].itl_sum += decode_s;
    }
  }
  ++window_.turns_finished;
  // The turn's input as a stateless API sees it: the whole context before its outputs.
  isl_sum_ += static_cast<double>(s.context - outputs);
  osl_sum_ += static_cast<double>(outputs);
  const auto k = after_kind_.find(s.idx);
  if (k == after_kind_.end()) return;
  window_.resumed_turns.push_back({k->second, outputs});
  after_kind_.erase(k);
}

void Planning::arrival(int64_t input_tokens) {
  ++window_.arrivals;
  window_.arrival_input_tokens += input_tokens;
}

void Planning::paused(const sim::SessionState& s) {
  if (!planner_) return;
  paused_[s.idx] = {s.intercept_kind(), f_.now()};
}

void Planning::intercept_ended(int32_t i) {
  const auto it = paused_.find(i);
  if (it == paused_.end()) return;
  const Location at = f_.ledger().where(i);
  int64_t returned = 0;
  if (at.replica >= 0) {
    // The tool returned: its result, the next turn's new input, is known now.
    const auto seg =
        static_cast<size_t>(f_.engine(at.replica).view().session(at.handle).segments_done());
    const trace::Session& src = f_.source(i);
    if (seg + 1 < src.segments.size()) returned = src.segments[seg + 1].input;
  }
  window_.intercepts_ended.push_back(
      {it->second.kind, sim::to_seconds(f_.now() - it->second.since), returned});
  after_kind_[i] = it->second.kind;
  paused_.erase(it);
}

void Planning::list_paused(FleetSnapshot& snap) const {
  for (const auto& [i, mark] : paused_) {
    const Location at = f_.ledger().where(i);
    if (at.replica < 0) continue;
    const sim::ReplicaView& v = f_.engine(at.replica).view();
    const sim::SessionState& s = v.session(at.handle);
    PausedSession p;
    p.kind = mark.kind;
    p.elapsed_s = sim::to_seconds(f_.now() - mark.since);
    p.context_tokens = s.context;
    p.held_kv_tokens = std::max<int64_t>(0, s.kv - s.dropped_blocks * v.block_tokens());
    p.replica = at.replica;
    snap.paused.push_back(std::move(p));
  }
}

void Planning::prefill_request(int64_t uncached_tokens) {
  ++window_.prefill_requests;
  window_.prefill_tokens += uncached_tokens;
}

// vLLM's kv_cache_usage numerator: the distinct GPU blocks held by sessions that are not
// paused (running, waiting, swapped, importing or exporting); a paused session's idle KV and
// the cached-free blocks are free to the engine.
int64_t Planning::active_blocks(int32_t r) {
  const sim::Engine& e = f_.engine(r);
  const sim::ReplicaQueues& q = e.view().queues();
  std::vector<uint32_t>& seen = seen_[static_cast<size_t>(r)];
  seen.resize(static_cast<size_t>(e.view().gpu().total()), 0);
  if (++stamp_ == 0) {  // wrapped: every mark is stale again
    for (auto& v : seen_) std::fill(v.begin(), v.end(), 0);
    stamp_ = 1;
  }
  int64_t n = 0;
  auto count = [&](int32_t h) {
    for (const sim::BlockId b : e.view().session(h).gpu_blocks) {
      uint32_t& mark = seen[static_cast<size_t>(b)];
      n += mark != stamp_;
      mark = stamp_;
    }
  };
  for (const int32_t h : q.running()) count(h);
  for (const auto& k : q.waiting()) count(k.h);
  for (const auto& k : q.swapped()) count(k.h);
  for (const int32_t h : q.importing()) count(h);
  for (const int32_t h : q.exporting()) count(h);
  return n;
}

void Planning::pull() {
  if (f_.all_done()) return;
  const Roles& roles = *f_.parts().roles;
  FleetSnapshot snap = window_;
  snap.t = f_.now();
  snap.dt_s = sim::to_seconds(f_.now() - last_pull_);
  auto mean = [](double sum, int64_t n) { return n > 0 ? sum / static_cast<double>(n) : 0.0; };
  snap.ttft_mean_s = mean(ttft_sum_, snap.ttft_count);
  snap.itl_mean_s = mean(itl_sum_, snap.itl_count);
  snap.isl_mean = mean(isl_sum_, snap.turns_finished);
  snap.osl_mean = mean(osl_sum_, snap.turns_finished);
  for (int32_t r = 0; r < f_.size(); ++r) {
    const sim::Engine& e = f_.engine(r);
    const sim::Counters& c = e.counters();
    PullMark& mk = marks_[static_cast<size_t>(r)];
    const sim::TimeSample ts = e.view().sample(f_.now());
    ReplicaMetrics m;
    m.role = roles.role(r);
    m.switching = roles.switching(r);
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
    m.active_kv_blocks = active_blocks(r);
    m.kv_cache_usage =
        static_cast<double>(m.active_kv_blocks) / static_cast<double>(e.view().gpu().total());
    ReplicaWindow& w = per_replica_[static_cast<size_t>(r)];
    m.ttft_count = w.ttft_n;
    m.ttft_mean_s = mean(w.ttft_sum, w.ttft_n);
    m.ttft_isl_mean = mean(w.isl_sum, w.ttft_n);
    m.itl_count = w.itl_n;
    m.itl_mean_s = mean(w.itl_sum, w.itl_n);
    w = ReplicaWindow{};
    mk = {c.prefill_tokens, c.decode_tokens, c.iterations, c.busy_time};
    snap.replicas.push_back(m);
  }
  list_paused(snap);
  planner_->observe(snap);
  window_ = FleetSnapshot{};
  ttft_sum_ = itl_sum_ = isl_sum_ = osl_sum_ = 0;
  last_pull_ = f_.now();
  schedule(f_.now() + sim::from_seconds(planner_->pull_interval_s()), sim::kPrioPlanner, kPull, 0);
}

void Planning::decide() {
  if (f_.all_done()) return;
  Roles& roles = *f_.parts().roles;
  PlannerContext ctx;
  ctx.now = f_.now();
  ctx.roles = roles.roles();
  ctx.switching = roles.switching();
  for (int32_t r = 0; r < f_.size(); ++r) {
    ctx.cost_models.push_back(&f_.engine(r).view().cost_model());
    ctx.max_num_seqs.push_back(f_.spec(r).config.max_num_seqs);
    ctx.max_num_batched_tokens.push_back(f_.spec(r).config.max_num_batched_tokens);
    const sim::ReplicaView& v = f_.engine(r).view();
    ctx.kv_capacity_tokens.push_back(v.gpu().total() * v.block_tokens());
  }
  ctx.switch_cost_s = switch_cost_s_;
  roles.apply(planner_->decide(ctx));
  schedule(f_.now() + sim::from_seconds(planner_->interval_s()), sim::kPrioPlanner + 1, kDecide, 0);
}

}  // namespace isim::cluster
