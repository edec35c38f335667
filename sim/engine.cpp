// The engine's life cycle: sessions in, turns, pauses and finishes, and one iteration from
// start to end. Everything else is in its parts (sim/engine.h lists them).
#include "sim/engine.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "core/input_error.h"

namespace isim::sim {

Engine::Engine(int32_t replica, EventQueue& queue, const EngineConfig& config, Executor& executor,
               Policy& policy)
    : replica_(replica),
      queue_(queue),
      config_(config),
      executor_(executor),
      policy_(policy),
      scheduler_(scheduler_registry().create(config.scheduler, "engine.scheduler")),
      queues_(table_, executor.cost_model().profile().block_tokens, scheduler_->traits()),
      kv_(table_, queues_, counters_, executor, config_, policy.reserved_gpu_fraction()),
      prefix_(kv_, counters_, config_.prefix_caching, scheduler_->traits().hash_every_block),
      notes_(replica, queue, table_, kv_),
      meter_(table_, queues_, kv_, prefix_),
      swaps_(table_, queues_, kv_, batch_, notes_, counters_, executor.cost_model(),
             policy.pipelined_swap()),
      ctx_(config_, table_, queues_, kv_, prefix_, batch_, counters_, executor.cost_model(),
           policy.pipelined_swap(), policy.chunked_recompute()),
      handoff_(replica, queue, table_, queues_, kv_, prefix_, meter_, notes_),
      view_(replica, queue, config_, executor.cost_model(), table_, queues_, kv_, prefix_, swaps_,
            batch_, counters_),
      run_(replica, config_, table_, queues_, kv_, prefix_, meter_, batch_, counters_,
           executor.cost_model(), scheduler_->traits().steady_admission) {
  if (config_.max_num_seqs < 1) throw InputError("engine.max_num_seqs: must be >= 1");
  if (config_.max_num_batched_tokens < 1)
    throw InputError("engine.max_num_batched_tokens: must be >= 1");
}

// Room in the session's block list for the whole turn (its context with every output in KV),
// so that the turn's block boundaries allocate blocks but no heap memory.
void Engine::reserve_turn_blocks(SessionState& s) const {
  s.gpu_blocks.reserve(
      static_cast<size_t>(blocks_for(s.context + s.seg_output, kv_.block_tokens())));
}

std::string Engine::never_fits(const trace::Session& src) const {
  return sim::never_fits(view_, *scheduler_, src);
}

int32_t Engine::admit(SessionState s) {
  meter_.open(now());
  s.phase = Phase::kWaiting;
  s.context = s.segment().input;
  s.seg_output = s.segment().output;
  reserve_turn_blocks(s);
  s.queue_key = s.arrival;
  const int32_t h = table_.take(std::move(s), replica_);
  prefix_.adopt(table_[h]);
  queues_.wait(h, table_[h].queue_key);
  notes_.note(h);
  return h;
}

void Engine::begin_turn(int32_t h, double intercept_s, Nanos ended_at) {
  SessionState& s = table_[h];
  policy_.on_resume(s, intercept_s, view_);
  kv_.manager().observe_intercept(s, intercept_s);
  s.seg += 1;
  if (s.segment().event.kind == trace::ContextEventKind::kReset) {
    queues_.cancel_swap_out(s);
    kv_.apply_reset(s);
  }
  s.context += s.segment().input;
  s.seg_output = s.segment().output;
  reserve_turn_blocks(s);
  s.decoded_in_seg = 0;
  s.intercept_end = ended_at >= 0 ? ended_at : now();
  kv_.count_turn(s);
  // The intercept ended before a synchronous copy started: the KV never left the GPU.
  queues_.cancel_swap_out(s);
  // Fully or partly on CPU: it may run only once all of its KV is back.
  if (!s.cpu_blocks.empty()) return queues_.wait_swapped(h);
  const Nanos key = (s.discarded && policy_.resume_at_back()) ? now() : s.arrival;
  s.discarded = false;
  queues_.wait(h, key);
}

void Engine::resume(int32_t h, double intercept_s, Nanos ended_at) {
  if (table_[h].phase != Phase::kPaused)
    throw std::logic_error("Engine::resume: session not paused");
  queues_.remove(Phase::kPaused, h);
  begin_turn(h, intercept_s, ended_at);
  notes_.note(h);
}

int32_t Engine::admit_resumed(SessionState s, double intercept_s, Nanos ended_at) {
  if (!s.gpu_blocks.empty() || !s.cpu_blocks.empty() || s.kv != 0)
    throw std::logic_error("Engine::admit_resumed: the session still holds KV elsewhere");
  meter_.open(now());
  const int32_t h = table_.take(std::move(s), replica_);
  prefix_.adopt(table_[h]);
  begin_turn(h, intercept_s, ended_at);
  notes_.note(h);
  return h;
}

void Engine::handle(const Event& ev) {
  if (ev.type != kEvIterationEnd || ev.target != replica_)
    throw std::logic_error("Engine: an event that is not this replica's iteration end");
  on_iteration_end();
  notes_.note_all();
}

void Engine::form_batch() {
  batch_.begin();
  swaps_.prepare();
  policy_.before_iteration(view_, swaps_);
  scheduler_->form_batch(ctx_);
  batch_.seal(scheduler_->traits().logits_every_request);
}

void Engine::maybe_start() {
  const int64_t preemptions = counters_.preemptions;
  if (const auto step = form_step())
    launch_step(step->forward, step->busy, preemptions == counters_.preemptions && may_coalesce());
}

bool Engine::may_coalesce() const {
  return config_.coalesce_decode && !kv_.live() && !notes_.watching() &&
         !policy_.pipelined_swap() && !policy_.chunked_recompute() &&
         policy_.quiet_before_iteration(view_);
}

std::optional<Engine::Step> Engine::form_step() {
  if (batch_.busy() || !has_work() || now() < handoff_.held_until()) return std::nullopt;
  const Nanos t = now();
  batch_.start(t);
  meter_.catch_up(t);
  const CostModel& cost = executor_.cost_model();
  const bool live = kv_.live();
  Nanos forward = 0, link = 0;
  ctx_.new_instant();
  while (true) {
    form_batch();
    // Live: the profile predicts the forward time; the measured time replaces it below.
    const bool empty = batch_.entries().empty();
    forward = empty ? 0 : live ? cost.forward(batch_.shape()) : executor_.run(batch_.shape());
    link = swaps_.progress();
    const IterationRecord& r = batch_.record();
    const bool moved = r.swap_out_tokens > 0 || r.swap_in_tokens > 0;
    if (!empty || batch_.stall() > 0 || moved) break;
    // Swap-outs that all fell back to discards leave nothing to do.
    if (!has_work()) return notes_.note_all(), std::nullopt;
    // KV in flight (exports not yet sent, imports not yet landed) frees up without an
    // iteration: wait for it before evicting anything.
    if (!queues_.exporting().empty() || !queues_.importing().empty())
      return notes_.note_all(), std::nullopt;
    if (!kv_.evict_idle(notes_.listener(), replica_, t) && !ctx_.preempt_stuck_prefill())
      throw std::logic_error(fmt::format(
          "Engine: no progress possible at t={} ns with {} waiting, {} swapped and no idle KV "
          "to evict (a session larger than the pool should have been skipped at load)",
          t, queues_.waiting().size(), queues_.swapped().size()));
  }
  // Pipelined copies run beside the forward pass, which they slow (sim/swap_budget.h).
  forward = forward_beside_copies(forward, link, cost.profile().swap.compute_slowdown);
  Nanos busy = std::max(forward, link);
  if (!batch_.entries().empty() && !live) {
    // The step's CPU work: hidden behind the previous forward under async scheduling.
    const Nanos cpu = batch_.step_overhead(cost.profile().step_overhead);
    busy = config_.async_scheduling ? std::max(busy, cpu) : busy + cpu;
  }
  if (live) {
    LiveLog& log = kv_.log();
    log.build_steps(
        batch_.entries(), [this](int32_t h) -> const SessionState& { return table_[h]; },
        kv_.block_tokens(), forward, batch_.prefills() > 0);
    const LiveTimes m = executor_.execute(log.work());
    log.clear();
    batch_.set_stall(m.stall);
    forward = m.forward;
    busy = m.busy;
  }
  return Step{forward, busy, batch_.shape().total_tokens};
}

void Engine::launch_step(Nanos forward, Nanos busy, bool coalesce) {
  const Nanos t = now();
  const Nanos stall = batch_.stall();
  meter_.iteration(t, stall, busy);
  counters_.stall_time += stall;
  counters_.busy_time += stall + busy;
  ++counters_.iterations;
  batch_.launch(forward);
  notes_.iteration(batch_.fill_record(replica_, t, forward, busy));
  const Nanos end = coalesce && stall == 0 ? run_.plan(t, busy) : t + stall + busy;
  // The iteration end carries its step's start (a run's: its last step's, as stepping's).
  queue_.schedule(end, kPrioIterationEnd, replica_, kEvIterationEnd,
                  run_.pending() ? run_.last_start() : t);
  notes_.note_all();  // the batch formed, swaps and evictions: all at t
}

bool Engine::settle() {
  const Settled st = run_.settle(now());
  if (!st.moved) return false;
  queue_.retime_top(st.end, st.start);
  if (st.ends_now) handle(queue_.pop());  // as the instant's iteration ends, before its events
  return true;
}

void Engine::emit_token(SessionState& s) {
  const Nanos t = now();
  EngineListener* listener = notes_.listener();
  s.decoded_in_seg += 1;
  s.context += 1;
  s.chunked = false;
  // Inter-token latency: the longest gap of the segment, and every gap run-length coded.
  if (s.decoded_in_seg > 1) {
    const Nanos gap = t - s.last_token;
    s.seg_max_gap = std::max(s.seg_max_gap, gap);
    s.seg_gaps.add(gap, 1);
  }
  s.last_token = t;
  if (s.decoded_in_seg == 1) {
    s.seg_first_token = t;
    s.seg_max_gap = 0;
    s.seg_input = s.context - 1;
    s.seg_gaps.clear();
    if (s.seg == 0) {
      s.m.first_token = t;
      if (listener) listener->first_token(replica_, s, t - s.arrival);
    } else {
      s.m.resume_ttft_sum += t - s.intercept_end;
      ++s.m.resumes_with_token;
      if (listener) listener->turn_first_token(replica_, s, t - s.intercept_end);
    }
  }
  if (s.decoded_in_seg == s.seg_output) {
    s.m.decode_time += t - s.seg_first_token;
    s.m.decode_steps += s.seg_output - 1;
    s.seg_gaps.close();  // the listeners read every run
    if (listener)
      listener->segment_done(replica_, s, s.seg_output, to_seconds(t - s.seg_first_token));
    complete_segment(s);
    return;
  }
  if (s.decoded_in_seg == 1 && s.export_after_prefill) start_export(s);
}

// Called by emit_token for a session whose prefill here has just emitted its first token: its
// KV leaves for a decode replica (sim/handoff.h).
void Engine::start_export(SessionState& s) {
  const int32_t h = s.h;
  queues_.remove(Phase::kRunning, h);
  s.export_after_prefill = false;
  queues_.add(Phase::kExporting, h);
  if (!notes_.listener()) throw std::logic_error("Engine: no listener for exported sessions");
  notes_.listener()->prefilled(replica_, h, s, batch_.started());
}

void Engine::complete_segment(SessionState& s) {
  const int32_t h = s.h;
  s.export_after_prefill = false;
  queues_.remove(Phase::kRunning, h);
  const Nanos t = now();
  EngineListener* listener = notes_.listener();
  if (!listener) throw std::logic_error("Engine: no listener for finished and paused sessions");
  if (s.last_segment()) {
    if (s.segment().event.kind == trace::ContextEventKind::kEnd) kv_.finish_ended(s);
    kv_.release(s);
    s.phase = Phase::kFinished;
    s.m.finish = t;
    listener->finished(replica_, s);
    notes_.note_gone(s);
    table_.free(h);
    return;
  }
  const auto& ic = *s.segment().intercept;
  const Nanos dur = from_seconds(ic.duration_s);
  queues_.add(Phase::kPaused, h);
  s.pause_start = t;
  s.m.intercept_time += dur;
  ++counters_.pauses;
  listener->paused(replica_, h, s, dur);
  switch (policy_.on_pause(s, view_)) {
    case PauseAction::kPreserve:
      ++counters_.preserves;
      break;
    case PauseAction::kDiscard:
      ++counters_.discards;
      kv_.drop_kv(s, LostCause::kIntercept);
      s.discarded = true;
      break;
    case PauseAction::kSwap:
      ++counters_.swaps;
      queues_.mark_swap_out(s);
      break;
  }
}

void Engine::on_iteration_end() {
  if (run_.pending()) run_.finish();  // steps 1..k-1: the batch below is the run's last step
  const int64_t bt = kv_.block_tokens();
  const bool every_block = prefix_.hashes_every_block();
  for (const BatchEntry& e : batch_.end()) {
    SessionState& s = table_[e.h];
    if (e.decode) {
      if (s.context != s.kv + 1)
        throw std::logic_error(
            fmt::format("Engine: session {} decoded with {} of its {} context tokens in KV", s.idx,
                        s.kv, s.context));
      s.kv += 1;
      ++counters_.decode_tokens;
      if (every_block && s.kv % bt == 0) prefix_.publish(s);
      emit_token(s);
      continue;
    }
    const int64_t recomputed = std::min(e.tokens, s.recompute_left);
    count_recompute_time(e, recomputed, s.kv);
    kv_.take_recompute(s, recomputed, /*recomputed=*/true);
    counters_.prefill_tokens += e.tokens;
    s.kv += e.tokens - e.restore;
    if (!s.chain.empty() || every_block) prefix_.publish(s);
    if (s.pending_prefill(bt) == 0) emit_token(s);
  }
  queues_.mark_stale();  // load() recounts the running set when next asked
  if (config_.check_invariants) check_invariants();
}

void Engine::count_recompute_time(const BatchEntry& e, int64_t recomputed, int64_t kv) {
  // A prefill's recomputed tokens lead it: first the dropped lead (over the lead restored before
  // it), then, for a rebuild, tokens over the `kv` held before the chunk.
  const CostModel& cost = executor_.cost_model();
  const int64_t lead = std::min(recomputed, e.restore);
  counters_.recompute_time +=
      cost.recompute_cost(lead, e.restore_from) + cost.recompute_cost(recomputed - lead, kv);
}

void Engine::check_invariants() const {
  kv_.check_pools();
  meter_.check_clock(replica_, now());
  table_.check(replica_);
  queues_.check_lists(replica_);
  kv_.check_blocks(replica_, batch_.in_flight(table_.size()));
  queues_.check_queued(replica_);
}

}  // namespace isim::sim
