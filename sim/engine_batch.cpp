// The engine's batch-forming steps (BatchSteps), which a Scheduler sequences.
#include <algorithm>
#include <stdexcept>

#include "sim/engine.h"

namespace isim::sim {

void Engine::enqueue(std::set<QueueKey>& q, int32_t h, Nanos key) {
  SessionState& s = S(h);
  s.queued_tokens = s.pending_prefill(block_tokens_);
  queued_tokens_ += s.queued_tokens;
  q.insert({key, s.idx, h});
}

std::set<Engine::QueueKey>::iterator Engine::dequeue(std::set<QueueKey>& q,
                                                     std::set<QueueKey>::iterator it) {
  queued_tokens_ -= S(it->h).queued_tokens;
  return q.erase(it);
}

void Engine::add_to_running(int32_t h) {
  SessionState& s = S(h);
  s.phase = Phase::kRunning;
  s.run_key = traits_.admission_order ? ++admit_seq_ : s.arrival;
  auto less = [this](int32_t a, int32_t b) {
    const auto& sa = session(a);
    const auto& sb = session(b);
    return sa.run_key != sb.run_key ? sa.run_key < sb.run_key : sa.idx < sb.idx;
  };
  running_.insert(std::upper_bound(running_.begin(), running_.end(), h, less), h);
  running_load_stale_ = true;
}

void Engine::remove_from_running(int32_t h) {
  running_.erase(std::find(running_.begin(), running_.end(), h));
  running_load_stale_ = true;
}

bool Engine::grow_gpu(SessionState& s, int64_t tokens) {
  int64_t need = blocks_for(tokens, block_tokens_) - static_cast<int64_t>(s.gpu_blocks.size());
  if (need <= 0) return true;
  return gpu_.allocate(need, s.gpu_blocks);
}

void Engine::preempt(int32_t h) {
  SessionState& s = S(h);
  remove_from_running(h);
  drop_kv(s, LostCause::kPreemption);
  ++s.m.preemptions;
  ++counters_.preemptions;
  s.phase = Phase::kWaiting;
  s.queue_key = traits_.preempt_to_front ? -(++front_seq_) : s.arrival;
  enqueue(waiting_, h, s.queue_key);
}

bool Engine::push_decode(SessionState& s, int32_t h) {
  if (!grow_gpu(s, s.kv + 1)) return false;
  batch_.push_back({h, 1, true, false, 0});
  ++batch_tokens_;
  if (shape_.num_decode == 0 || s.kv < shape_.decode_kv_min) shape_.decode_kv_min = s.kv;
  shape_.decode_kv_max = std::max(shape_.decode_kv_max, s.kv);
  ++shape_.num_decode;
  shape_.decode_kv_tokens += s.kv;
  ++shape_.num_logits;
  return true;
}

bool Engine::schedule_decodes() {
  bool clean = true;
  // Index loop: preemption removes later entries (the most recent arrivals) from running_.
  for (size_t i = 0; i < running_.size(); ++i) {
    int32_t h = running_[i];
    SessionState& s = S(h);
    if (!decoding(s)) continue;  // still prefilling (or rebuilding after a preemption)
    if (batch_tokens_ + 1 > config_.max_num_batched_tokens) break;
    bool self_preempted = false;
    while (!push_decode(s, h)) {
      clean = false;
      int32_t victim = running_.back();
      preempt(victim);
      if (victim == h) {
        self_preempted = true;
        break;
      }
    }
    if (self_preempted) break;  // it was the last running session in order
  }
  return clean;
}

bool Engine::add_prefill(SessionState& s, int32_t h, int64_t chunk) {
  if (s.dropped_blocks * block_tokens_ > config_.max_num_batched_tokens) {
    // A dropped lead larger than any batch cannot be recomputed in one piece: rebuild the
    // whole context in chunks instead (what it kept is recomputed too, and counted).
    drop_kv(s, LostCause::kIntercept);
    ++counters_.oversized_restores;
    chunk = std::min(chunk, s.pending_prefill(block_tokens_));
  }
  const int64_t pending = s.pending_prefill(block_tokens_);
  const int64_t restore = s.dropped_blocks * block_tokens_;
  // Dropped leading blocks are recomputed whole, in the iteration that prefills after them.
  if (chunk <= 0 || chunk > pending || chunk < restore) return false;
  const int64_t fresh = chunk - restore;
  const int64_t need =
      blocks_for(s.kv + fresh, block_tokens_) - static_cast<int64_t>(s.gpu_blocks.size());
  if (need > gpu_.free() - prefill_reserve_) return false;
  if (restore > 0) {
    std::vector<BlockId> lead;
    gpu_.allocate(s.dropped_blocks, lead);
    s.gpu_blocks.insert(s.gpu_blocks.begin(), lead.begin(), lead.end());
    s.dropped_blocks = 0;
    s.published = 0;
  }
  if (!grow_gpu(s, s.kv + fresh)) throw std::logic_error("add_prefill: blocks vanished");
  batch_.push_back({h, chunk, false, s.recompute_left > 0, restore});
  batch_tokens_ += chunk;
  ++batch_prefills_;
  // The recomputed lead attends only to itself; the rest attends to everything before it.
  if (restore > 0) shape_.prefills.push_back({restore, 0});
  if (fresh > 0) shape_.prefills.push_back({fresh, s.kv});
  if (chunk == pending) ++shape_.num_logits;
  return true;
}

bool Engine::start_prefill(SessionState& s, int64_t room, bool whole) {
  const std::pair<int64_t, int64_t> hit = preview_prefix(s);
  if (hit.first > 0) {
    // add_prefill's test on the state match_prefix would leave (hit.first blocks held, none
    // dropped, the unheld hits off the free list), made before any block is taken. A session
    // holding hits it cannot use would be an idle holder whose eviction frees nothing: it
    // would take the same blocks again, fail again and be evicted again, at the same instant.
    const int64_t pending = s.pending_prefill(block_tokens_) - hit.first * block_tokens_;
    const int64_t chunk = whole ? pending : std::min(pending, room);
    const int64_t need = blocks_for(hit.first * block_tokens_ + chunk, block_tokens_) - hit.first;
    if (chunk <= 0 || chunk > room || need > gpu_.free() - hit.second - prefill_reserve_)
      return false;
  }
  match_prefix(s);
  const int64_t pending = s.pending_prefill(block_tokens_);
  const int64_t chunk = whole ? pending : std::min(pending, room);
  if (chunk > room || !add_prefill(s, s.h, chunk)) {
    if (hit.first > 0) throw std::logic_error("start_prefill: a prefill that fit failed");
    return false;
  }
  return true;
}

void Engine::continue_prefills() {
  for (int32_t h : running_) {
    SessionState& s = S(h);
    const int64_t pending = s.pending_prefill(block_tokens_);
    if (decoding(s) || pending == 0 || recompute_lane(s)) continue;
    int64_t room = config_.max_num_batched_tokens - batch_tokens_;
    if (room <= 0) break;
    add_prefill(s, h, std::min(room, pending));
  }
}

bool Engine::recompute_lane(const SessionState& s) const {
  // A rebuild whose chunk stopped one token short of a session that had emitted tokens leaves it
  // decoding: its last token's KV comes from its next decode, as any decode's does.
  return chunked_recompute_ && (s.recompute_left > 0 || s.chunked) && !decoding(s);
}

void Engine::admit_waiting(bool whole) {
  if (hold_admissions_) return;
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    const int32_t h = it->h;
    SessionState& s = S(h);
    if (recompute_lane(s)) {  // rebuilt in S - R chunks by schedule_recompute_chunks
      ++it;
      continue;
    }
    if (static_cast<int64_t>(running_.size()) + 1 > config_.max_num_seqs) break;
    if (!start_prefill(s, config_.max_num_batched_tokens - batch_tokens_, whole)) break;
    it = dequeue(waiting_, it);
    add_to_running(h);
  }
}

void Engine::swap_in() {
  if (pipelined_ || hold_admissions_) return;  // pipelined: moved by progress_swaps
  while (!swapped_.empty()) {
    const int32_t h = swapped_.begin()->h;
    SessionState& s = S(h);
    auto n = static_cast<int64_t>(s.cpu_blocks.size());
    if (live_ && !s.gpu_blocks.empty())
      throw std::logic_error("swap_in: a synchronously swapped session kept GPU blocks");
    if (!gpu_.allocate(n, s.gpu_blocks)) break;
    finish_sync_copy(s, /*to_cpu=*/false, n);
    finish_swap_in(s);
  }
}

void Engine::finish_swap_in(SessionState& s) {
  dequeue(swapped_, swapped_.find({s.arrival, s.idx, s.h}));
  s.phase = Phase::kWaiting;
  s.queue_key = s.arrival;
  enqueue(waiting_, s.h, s.queue_key);
}

void Engine::schedule_recompute_chunks() {
  if (!chunked_recompute_) return;
  const int64_t S_tokens = cost_model().saturation_tokens();
  int64_t left = std::max<int64_t>(S_tokens - shape_.num_decode, 1);
  left = std::min(left, config_.max_num_batched_tokens - batch_tokens_);
  auto take = [&](SessionState& s) {
    const int64_t before = batch_tokens_;
    if (!start_prefill(s, left, /*whole=*/false)) return false;
    s.chunked = true;
    left -= batch_tokens_ - before;
    return true;
  };
  // Sessions part-way through their rebuild first, then new ones in queue order.
  for (int32_t h : running_) {
    if (left <= 0) return;
    SessionState& s = S(h);
    if (!decoding(s) && s.pending_prefill(block_tokens_) > 0 && recompute_lane(s)) take(s);
  }
  if (hold_admissions_) return;
  for (auto it = waiting_.begin(); it != waiting_.end() && left > 0;) {
    SessionState& s = S(it->h);
    if (!recompute_lane(s)) {
      ++it;
      continue;
    }
    if (static_cast<int64_t>(running_.size()) + 1 > config_.max_num_seqs) return;
    if (!take(s)) return;
    it = dequeue(waiting_, it);
    add_to_running(s.h);
  }
}

}  // namespace isim::sim
