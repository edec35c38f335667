// The engine's life cycle: sessions in and out, events, and one iteration from start to end.
// Batch forming is in engine_batch.cpp, KV mechanics in engine_kv.cpp, accounting and the
// invariant check in engine_check.cpp.
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "sim/engine.h"
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
      block_counts_(derive_block_counts(executor.cost_model().profile(), config)),
      block_tokens_(executor.cost_model().profile().block_tokens),
      gpu_("gpu", block_counts_.gpu),
      cpu_("cpu", block_counts_.cpu),
      pipelined_(policy.pipelined_swap()),
      chunked_recompute_(policy.chunked_recompute()),
      live_(executor.live()) {
  traits_ = scheduler_->traits();
  prefill_reserve_ = static_cast<int64_t>(
      std::floor(policy.reserved_gpu_fraction() * static_cast<double>(gpu_.total())));
  if (config_.max_num_seqs < 1) throw InputError("engine.max_num_seqs: must be >= 1");
  if (config_.max_num_batched_tokens < 1)
    throw InputError("engine.max_num_batched_tokens: must be >= 1");
}

std::string Engine::never_fits(const trace::Session& src) const {
  // Prefills may not use the blocks a policy reserves for decodes, and a resumed session may
  // have to prefill its whole context.
  const int64_t gpu_tokens = (gpu_.total() - prefill_reserve_) * block_tokens_;
  const int64_t need = src.max_context();
  if (need > gpu_tokens)
    return fmt::format(
        "its context reaches {} tokens but the GPU holds {} ({} blocks of {}, {} reserved for "
        "decodes)",
        need, gpu_tokens, gpu_.total(), block_tokens_, prefill_reserve_);
  if (scheduler_->whole_prefills() && need > config_.max_num_batched_tokens)
    return fmt::format(
        "its context reaches {} tokens, more than max_num_batched_tokens={}, so {} "
        "could never prefill it whole after a discard",
        need, config_.max_num_batched_tokens, scheduler_->name());
  return "";
}

void Engine::open(Nanos t) {
  if (accounted_until_ < 0) accounted_until_ = t;
}

int32_t Engine::take_slot(SessionState&& s) {
  int32_t h;
  if (!free_slots_.empty()) {
    h = free_slots_.back();
    free_slots_.pop_back();
    slots_[static_cast<size_t>(h)] = std::move(s);
  } else {
    h = static_cast<int32_t>(slots_.size());
    slots_.push_back(std::move(s));
  }
  SessionState& t = S(h);
  t.h = h;
  t.m.replica_last = replica_;
  if (t.m.replica_first < 0) t.m.replica_first = replica_;
  // Content is append-only: a chain computed in this block size elsewhere still names the
  // session's leading blocks here, past the prompt too.
  if (t.chain_block_tokens != block_tokens_) {
    if (!t.fork_chain.empty() && t.fork_block_tokens == block_tokens_) {
      // A fork: its prompt starts with the parent's context, named by the parent's chain.
      t.chain = t.fork_chain;
      t.chain_shared = true;
      ++counters_.forks;
    } else {
      t.chain = prefix_chain(t.id(), t.prefix(), t.prompt_tokens(), block_tokens_);
    }
    t.prompt_chain_blocks = static_cast<int64_t>(t.chain.size());
    t.chain_block_tokens = block_tokens_;
  }
  t.published = 0;
  shared_blocks_ =
      shared_blocks_ || (config_.prefix_caching && (!t.chain.empty() || traits_.hash_every_block));
  return h;
}

void Engine::free_slot(int32_t h) {
  slots_[static_cast<size_t>(h)] = SessionState{};
  slots_[static_cast<size_t>(h)].idx = -1;
  free_slots_.push_back(h);
}

int32_t Engine::admit(SessionState s) {
  open(now());
  s.phase = Phase::kWaiting;
  s.context = s.segment().input;
  s.seg_output = s.segment().output;
  s.queue_key = s.arrival;
  const int32_t h = take_slot(std::move(s));
  enqueue(waiting_, h, S(h).queue_key);
  note(h);
  return h;
}

void Engine::count_turn(const SessionState& s) {
  // Where this turn finds its KV: kept on GPU, kept on CPU, or to be recomputed.
  const int64_t lead =
      (s.dropped_blocks + static_cast<int64_t>(s.cpu_blocks.size())) * block_tokens_;
  ++counters_.turns;
  counters_.turn_gpu_hit_tokens += std::max<int64_t>(s.kv - lead, 0);
  counters_.turn_cpu_hit_tokens +=
      std::min<int64_t>(static_cast<int64_t>(s.cpu_blocks.size()) * block_tokens_,
                        std::max<int64_t>(s.kv - s.dropped_blocks * block_tokens_, 0));
  counters_.turn_recompute_tokens += s.recompute_left;
}

void Engine::begin_turn(int32_t h, double intercept_s, Nanos ended_at) {
  SessionState& s = S(h);
  policy_.on_resume(s, intercept_s, *this);
  kv_->observe_intercept(s, intercept_s);
  s.seg += 1;
  if (s.segment().event.kind == trace::ContextEventKind::kReset) apply_reset(s);
  s.context += s.segment().input;
  s.seg_output = s.segment().output;
  s.decoded_in_seg = 0;
  s.intercept_end = ended_at >= 0 ? ended_at : now();
  count_turn(s);
  if (s.swap_out_pending) {
    // The intercept ended before the copy started: the KV never left the GPU.
    s.swap_out_pending = false;
    swap_out_pending_.erase(std::find(swap_out_pending_.begin(), swap_out_pending_.end(), h));
  }
  if (!s.cpu_blocks.empty()) {
    // Fully or partly on CPU: it may run only once all of its KV is back.
    s.phase = Phase::kSwapped;
    enqueue(swapped_, h, s.arrival);
    return;
  }
  s.phase = Phase::kWaiting;
  s.queue_key = (s.discarded && policy_.resume_at_back()) ? now() : s.arrival;
  s.discarded = false;
  enqueue(waiting_, h, s.queue_key);
}

void Engine::resume(int32_t h, double intercept_s, Nanos ended_at) {
  if (S(h).phase != Phase::kPaused) throw std::logic_error("Engine::resume: session not paused");
  paused_.erase(std::find(paused_.begin(), paused_.end(), h));
  begin_turn(h, intercept_s, ended_at);
  note(h);
}

int32_t Engine::admit_resumed(SessionState s, double intercept_s, Nanos ended_at) {
  if (!s.gpu_blocks.empty() || !s.cpu_blocks.empty() || s.kv != 0)
    throw std::logic_error("Engine::admit_resumed: the session still holds KV elsewhere");
  open(now());
  const int32_t h = take_slot(std::move(s));
  begin_turn(h, intercept_s, ended_at);
  note(h);
  return h;
}

SessionState Engine::export_paused(int32_t h, LostCause why) {
  SessionState& s = S(h);
  if (s.phase != Phase::kPaused) throw std::logic_error("Engine::export_paused: not paused");
  paused_.erase(std::find(paused_.begin(), paused_.end(), h));
  if (s.swap_out_pending) {
    s.swap_out_pending = false;
    swap_out_pending_.erase(std::find(swap_out_pending_.begin(), swap_out_pending_.end(), h));
  }
  if (s.kv > 0 || !s.gpu_blocks.empty() || !s.cpu_blocks.empty()) drop_kv(s, why);
  SessionState out = std::move(s);
  out.h = -1;
  free_slot(h);
  note_gone(out);
  return out;
}

void Engine::handle(const Event& ev) {
  if (ev.type != kEvIterationEnd || ev.target != replica_)
    throw std::logic_error("Engine: an event that is not this replica's iteration end");
  on_iteration_end();
  note_all();
}

bool Engine::has_work() const {
  return !running_.empty() || !waiting_.empty() || !swapped_.empty() || !swap_out_pending_.empty();
}

void Engine::form_batch() {
  batch_.clear();
  shape_.clear();
  batch_tokens_ = 0;
  batch_prefills_ = 0;
  stall_ = 0;
  swap_out_requests_.clear();
  record_ = IterationRecord{};
  do_swap_outs();
  plan_swaps();
  policy_.before_iteration(*this, *this);
  partial_prefills_ = 0;
  long_partial_prefills_ = 0;
  scheduler_->schedule(*this);
  if (traits_.logits_every_request) shape_.num_logits = static_cast<int32_t>(batch_.size());
}

void Engine::maybe_start() {
  if (busy_ || !has_work() || now() < hold_until_) return;
  const Nanos t = now();
  iteration_start_ = t;
  account(accounted_until_, t, false, false);
  accounted_until_ = t;
  Nanos forward = 0, link = 0;
  hold_admissions_ = false;
  while (true) {
    form_batch();
    shape_.total_tokens = batch_tokens_;
    // Live: the profile predicts the forward time; the measured time replaces it below.
    forward = batch_.empty() ? 0 : live_ ? cost_model().forward(shape_) : executor_.run(shape_);
    link = progress_swaps();
    const bool moved = record_.swap_out_tokens > 0 || record_.swap_in_tokens > 0;
    if (!batch_.empty() || stall_ > 0 || moved) break;
    // Swap-outs that all fell back to discards leave nothing to do.
    if (!has_work()) return note_all();
    // KV in flight (exports not yet sent, imports not yet landed) frees up without an
    // iteration: wait for it before evicting anything.
    if (!exporting_.empty() || !importing_.empty()) return note_all();
    if (!evict_idle_kv() && !preempt_stuck_prefill())
      throw std::logic_error(fmt::format(
          "Engine: no progress possible at t={} ns with {} waiting, {} swapped and no idle KV "
          "to evict (a session larger than the pool should have been skipped at load)",
          t, waiting_.size(), swapped_.size()));
  }
  // Pipelined copies run beside the forward pass, which they slow (sim/swap_budget.h).
  forward = forward_beside_copies(forward, link, cost_model().profile().swap.compute_slowdown);
  Nanos busy = std::max(forward, link);
  if (!batch_.empty() && !live_) {
    // The step's CPU work: hidden behind the previous forward under async scheduling.
    const Nanos cpu = step_overhead();
    busy = config_.async_scheduling ? std::max(busy, cpu) : busy + cpu;
  }
  if (live_) {
    log_.build_steps(
        batch_, [this](int32_t h) -> const SessionState& { return session(h); }, block_tokens_,
        forward, batch_prefills_ > 0);
    const LiveTimes m = executor_.execute(log_.work());
    log_.clear();
    stall_ = m.stall;
    forward = m.forward;
    busy = m.busy;
  }
  account(t, t + stall_, false, true);
  account(t + stall_, t + stall_ + busy, true, false);
  accounted_until_ = t + stall_ + busy;
  counters_.stall_time += stall_;
  counters_.busy_time += stall_ + busy;
  note_busy(t, t + stall_ + busy);
  ++counters_.iterations;
  if (forward > 0) last_forward_ = forward;
  busy_ = true;
  record_iteration(t, forward, busy);
  queue_.schedule(t + stall_ + busy, kPrioIterationEnd, replica_, kEvIterationEnd, 0);
  note_all();  // the batch formed, swaps and evictions: all at t
}

void Engine::note_busy(Nanos start, Nanos end) {
  if (!busy_spans_.empty() && busy_spans_.back().end >= start)
    busy_spans_.back().end = std::max(busy_spans_.back().end, end);
  else
    busy_spans_.push_back({start, end});
}

void Engine::record_iteration(Nanos t, Nanos forward, Nanos busy) {
  record_.replica = replica_;
  record_.start = t;
  record_.stall = stall_;
  record_.forward = forward;
  record_.duration = stall_ + busy;
  record_.batch_tokens = batch_tokens_;
  record_.decodes = shape_.num_decode;
  record_.prefills = batch_prefills_;
  for (const BatchEntry& e : batch_)
    if (e.recompute) record_.recompute_tokens += e.tokens;
  if (observer_) observer_(record_);
  if (observing()) obs_->iteration(record_);
}

void Engine::emit_token(SessionState& s) {
  const Nanos t = now();
  s.decoded_in_seg += 1;
  s.context += 1;
  s.chunked = false;
  if (s.decoded_in_seg == 1) {
    s.seg_first_token = t;
    if (s.seg == 0) {
      s.m.first_token = t;
      if (listener_) listener_->first_token(replica_, s, t - s.arrival);
    } else {
      s.m.resume_ttft_sum += t - s.intercept_end;
      ++s.m.resumes_with_token;
      if (listener_) listener_->turn_first_token(replica_, s, t - s.intercept_end);
    }
  }
  if (s.decoded_in_seg == s.seg_output) {
    s.m.decode_time += t - s.seg_first_token;
    s.m.decode_steps += s.seg_output - 1;
    if (listener_) listener_->segment_done(replica_, s, s.seg_output, to_seconds(t - s.seg_first_token));
    complete_segment(s);
    return;
  }
  if (s.decoded_in_seg == 1 && s.export_after_prefill) start_export(s);
}

void Engine::complete_segment(SessionState& s) {
  const int32_t h = s.h;
  s.export_after_prefill = false;
  remove_from_running(h);
  const Nanos t = now();
  if (!listener_) throw std::logic_error("Engine: no listener for finished and paused sessions");
  if (s.last_segment()) {
    if (s.segment().event.kind == trace::ContextEventKind::kEnd) finish_ended(s);
    gpu_.release(s.gpu_blocks);
    cpu_.release(s.cpu_blocks);
    s.phase = Phase::kFinished;
    s.m.finish = t;
    listener_->finished(replica_, s);
    note_gone(s);
    free_slot(h);
    return;
  }
  const auto& ic = *s.segment().intercept;
  const Nanos dur = from_seconds(ic.duration_s);
  s.phase = Phase::kPaused;
  paused_.push_back(h);
  s.pause_start = t;
  s.m.intercept_time += dur;
  ++counters_.pauses;
  listener_->paused(replica_, h, s, dur);
  switch (policy_.on_pause(s, *this)) {
    case PauseAction::kPreserve:
      ++counters_.preserves;
      break;
    case PauseAction::kDiscard:
      ++counters_.discards;
      drop_kv(s, LostCause::kIntercept);
      s.discarded = true;
      break;
    case PauseAction::kSwap:
      ++counters_.swaps;
      s.swap_out_pending = true;
      swap_out_pending_.push_back(h);
      break;
  }
}

void Engine::on_iteration_end() {
  busy_ = false;
  for (const BatchEntry& e : batch_) {
    SessionState& s = S(e.h);
    if (e.decode) {
      if (s.context != s.kv + 1)
        throw std::logic_error(
            fmt::format("Engine: session {} decoded with {} of its {} context tokens in KV", s.idx,
                        s.kv, s.context));
      s.kv += 1;
      ++counters_.decode_tokens;
      if (traits_.hash_every_block && s.kv % block_tokens_ == 0) publish_prefix(s);
      emit_token(s);
      continue;
    }
    int64_t rc = std::min(e.tokens, s.recompute_left);
    take_recompute(s, rc, /*recomputed=*/true);
    counters_.prefill_tokens += e.tokens;
    s.kv += e.tokens - e.restore;
    if (!s.chain.empty() || traits_.hash_every_block) publish_prefix(s);
    if (s.pending_prefill(block_tokens_) == 0) emit_token(s);
  }
  batch_.clear();
  running_load_stale_ = true;  // load() recounts the running set when next asked
  if (config_.check_invariants) check_invariants();
}

}  // namespace isim::sim
