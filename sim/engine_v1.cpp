// vLLM v1's scheduling passes over the engine's state (Scheduler `vllm-v1`), and the bookkeeping
// that goes with them: admission gates, partial-prefill counts, hashes of every full block.
//
// Read from vLLM's vllm/v1/core/sched/scheduler.py and kv_cache_manager.py (0.19 to 0.30);
// written here. The free-block queue needs nothing new: BlockPool already hands out unhashed
// free blocks first (most recently freed first) and then evicts cached blocks least recently
// released first, a released session's tail blocks before its head, which is the order of
// vLLM's single LRU free queue (unhashed blocks prepended, hashed ones appended in reverse).
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/hash.h"
#include "sim/engine.h"

namespace isim::sim {

int64_t Engine::v1_chunk(const SessionState& s, int64_t pending, int64_t budget) const {
  int64_t n = pending;
  if (config_.long_prefill_token_threshold > 0)
    n = std::min(n, config_.long_prefill_token_threshold);
  n = std::min(n, budget);
  // KV dropped at the head is rebuilt whole, in the chunk that continues after it.
  const int64_t restore = s.dropped_blocks * block_tokens_;
  if (n < restore) n = restore <= budget ? restore : 0;
  return n;
}

void Engine::note_partial(int64_t pending, int64_t chunk) {
  if (chunk >= pending) return;
  ++partial_prefills_;
  if (config_.long_prefill_token_threshold > 0 && pending > config_.long_prefill_token_threshold)
    ++long_partial_prefills_;
}

bool Engine::v1_admissible(const SessionState& s, std::pair<int64_t, int64_t> hit, int64_t pending,
                           int64_t chunk) const {
  if (chunk < pending) {
    if (partial_prefills_ >= config_.max_num_partial_prefills) return false;
    const bool is_long =
        config_.long_prefill_token_threshold > 0 && pending > config_.long_prefill_token_threshold;
    if (is_long && long_partial_prefills_ >= config_.max_long_partial_prefills) return false;
  }
  const auto held = static_cast<int64_t>(s.gpu_blocks.size()) + hit.first;
  // reserve_full_isl: the whole context must fit now, not only this chunk.
  const int64_t tokens =
      config_.reserve_full_isl ? s.context : s.kv + hit.first * block_tokens_ + chunk;
  const int64_t need = std::max<int64_t>(blocks_for(tokens, block_tokens_) - held, 0);
  // The watermark spares the first admission into an empty engine.
  const int64_t watermark =
      running_.empty()
          ? 0
          : static_cast<int64_t>(config_.watermark * static_cast<double>(gpu_.total()));
  // Hits on unheld cached blocks take them off the free queue.
  const int64_t free_blocks = gpu_.free() - hit.second - prefill_reserve_;
  return need + watermark <= free_blocks;
}

bool Engine::schedule_running_in_order() {
  bool preempted = false;
  // Index loop: preemption removes the last entries of running_.
  for (size_t i = 0; i < running_.size(); ++i) {
    const int64_t budget = config_.max_num_batched_tokens - batch_tokens_;
    if (budget <= 0) break;
    const int32_t h = running_[i];
    SessionState& s = S(h);
    if (recompute_lane(s)) continue;
    const bool decode = decoding(s);
    const int64_t pending = s.pending_prefill(block_tokens_);
    const int64_t chunk = decode ? 1 : v1_chunk(s, pending, budget);
    if (chunk <= 0) continue;
    bool self_preempted = false;
    while (!(decode ? push_decode(s, h) : add_prefill(s, h, chunk))) {
      preempted = true;
      const int32_t victim = running_.back();
      preempt(victim);
      if (victim == h) {
        self_preempted = true;
        break;
      }
    }
    if (self_preempted) break;  // it was the last running session
    if (!decode) note_partial(pending, chunk);
  }
  return preempted;
}

void Engine::admit_waiting_in_order() {
  if (hold_admissions_) return;
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    const int64_t budget = config_.max_num_batched_tokens - batch_tokens_;
    if (budget <= 0) return;
    const int32_t h = it->h;
    SessionState& s = S(h);
    if (recompute_lane(s)) {  // rebuilt in S - R chunks by schedule_recompute_chunks
      ++it;
      continue;
    }
    if (static_cast<int64_t>(running_.size()) >= config_.max_num_seqs) return;
    const std::pair<int64_t, int64_t> hit = preview_prefix(s);
    const int64_t pending = s.pending_prefill(block_tokens_) - hit.first * block_tokens_;
    const int64_t chunk = v1_chunk(s, pending, budget);
    // Head-of-line: the first that does not fit stops admissions, holding nothing.
    if (chunk <= 0 || !v1_admissible(s, hit, pending, chunk)) return;
    match_prefix(s);
    if (s.pending_prefill(block_tokens_) != pending || !add_prefill(s, h, chunk))
      throw std::logic_error("admit_waiting_in_order: an admission passed its gate but failed");
    note_partial(pending, chunk);
    it = dequeue(waiting_, it);
    add_to_running(h);
  }
}

std::pair<int64_t, int64_t> Engine::preview_prefix(const SessionState& s) const {
  if (!can_match_prefix(s)) return {0, 0};
  int64_t j = 0, unheld = 0;
  for (const int64_t limit = matchable_blocks(s); j < limit; ++j) {
    const BlockId b = gpu_.find(s.chain[static_cast<size_t>(j)]);
    if (b < 0) break;
    if (gpu_.refcount(b) == 0) ++unheld;
  }
  return {j, unheld};
}

void Engine::extend_chain(SessionState& s) const {
  const int64_t full = s.kv / block_tokens_;
  // Past the prompt's content hashes, blocks hold this session's own tokens: a hash chained
  // from the last one and salted with the session's trace index names them uniquely.
  uint64_t h = s.chain.empty() ? splitmix64(0x51ed270b27a2f0d1ull + static_cast<uint64_t>(s.idx))
                               : s.chain.back();
  for (auto k = static_cast<int64_t>(s.chain.size()); k < full; ++k) {
    // After a reset the same positions hold new content: the generation salts them apart.
    const uint64_t x = splitmix64(h ^ (0x94d049bb133111ebull * static_cast<uint64_t>(k + 1)) ^
                                  (static_cast<uint64_t>(s.idx) << 20) ^
                                  (static_cast<uint64_t>(s.generation) << 48));
    h = x == 0 ? 1 : x;
    s.chain.push_back(h);
  }
}

Nanos Engine::step_overhead() const {
  const StepOverhead& o = cost_model().profile().step_overhead;
  const double us = o.fixed_us + o.per_sequence_us * static_cast<double>(batch_.size()) +
                    o.per_token_us * static_cast<double>(batch_tokens_);
  return from_us(us);
}

}  // namespace isim::sim
