// Agent context signals on one replica (traces/session.h ContextEvent): a reset keeps the KV of
// the tokens that survive the summary and releases the rest; an ended session's own KV is
// worthless. What happens to released worthless blocks is the KV manager's call
// (sim/kv_manager.h): unhashed at once, or left to age out of the prefix cache.
#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "sim/kv_residency.h"

namespace isim::sim {

size_t gpu_blocks_within(const SessionState& s, int64_t chain_blocks) {
  // Token order: the lead restored so far (gpu_blocks' first restored_blocks), the dropped
  // blocks, the CPU ones, then the rest of gpu_blocks.
  const int64_t restored = s.restored_blocks;
  const int64_t before = s.dropped_blocks + static_cast<int64_t>(s.cpu_blocks.size());
  const int64_t lead =
      chain_blocks <= restored ? chain_blocks : std::max<int64_t>(restored, chain_blocks - before);
  return std::min(s.gpu_blocks.size(), static_cast<size_t>(std::max<int64_t>(lead, 0)));
}

size_t shareable_gpu_blocks(const SessionState& s) {
  // A fork's family shares blocks past the prompt (the parent's context): all of its chain.
  return gpu_blocks_within(
      s, s.chain_shared ? static_cast<int64_t>(s.chain.size()) : s.prompt_chain_blocks);
}

void KvResidency::release_worthless(std::vector<BlockId>& blocks, bool reset_tail) {
  if (!kv_->frees_worthless() || (reset_tail && !kv_->frees_reset_tail())) {
    gpu_.release(blocks);
    return;
  }
  const std::vector<BlockId> released = blocks;
  gpu_.release(blocks);
  for (BlockId b : released)
    if (gpu_.forget(b)) ++counters_.worthless_freed_blocks;
}

// Called as segment k (k >= 1) starts, before its input is appended (the caller has cancelled
// any synchronous swap-out). Layout of the KV, in token order: dropped blocks, CPU blocks, GPU
// blocks (sim/session_state.h).
void KvResidency::apply_reset(SessionState& s) {
  const trace::ContextEvent& ev = s.context_event();
  if (ev.shared > s.context || ev.shared > ev.tokens)
    throw std::logic_error(
        fmt::format("session {}: a reset keeps {} of {} tokens", s.id(), ev.shared, s.context));
  ++counters_.resets;
  const int64_t bt = block_tokens_;
  const int64_t dropped = s.dropped_blocks;
  const auto cpu = static_cast<int64_t>(s.cpu_blocks.size());
  const auto gpu = static_cast<int64_t>(s.gpu_blocks.size());
  const int64_t kv_before = s.kv;
  int64_t keep = std::min(ev.shared, s.kv);
  int64_t blocks = keep / bt;
  if (keep % bt != 0) {
    // The block the boundary cuts stays only if this session alone holds it on the GPU and
    // has not published it: its tail is then simply rewritten. Otherwise its surviving tokens
    // (fewer than a block) are prefilled again as new ones.
    const int64_t g = blocks - dropped - cpu;
    if (g >= 0 && g < gpu && g >= s.published &&
        gpu_.refcount(s.gpu_blocks[static_cast<size_t>(g)]) == 1)
      ++blocks;
    else
      keep = blocks * bt;
  }
  const int64_t keep_dropped = std::min(blocks, dropped);
  const int64_t keep_cpu = std::clamp<int64_t>(blocks - dropped, 0, cpu);
  const int64_t keep_gpu = std::clamp<int64_t>(blocks - dropped - cpu, 0, gpu);
  std::vector<BlockId> gpu_tail(s.gpu_blocks.begin() + keep_gpu, s.gpu_blocks.end());
  std::vector<BlockId> cpu_tail(s.cpu_blocks.begin() + keep_cpu, s.cpu_blocks.end());
  s.gpu_blocks.resize(static_cast<size_t>(keep_gpu));
  s.cpu_blocks.resize(static_cast<size_t>(keep_cpu));
  counters_.reset_released_tokens += kv_before - keep;
  release_worthless(gpu_tail, /*reset_tail=*/true);
  cpu_.release(cpu_tail);
  s.dropped_blocks = keep_dropped;
  s.kv = keep;
  // What the turn recomputes: surviving tokens it once held but holds no more (dropped leading
  // blocks, and what it had lost before, up to `shared`). The rest of its prefill is new.
  const int64_t needed =
      std::min(keep_dropped * bt, keep) + std::max<int64_t>(ev.shared - kv_before, 0);
  take_recompute(s, s.recompute_left - std::min(needed, s.recompute_left), /*recomputed=*/false);
  s.published = std::min(s.published, keep_gpu);
  s.chain.resize(std::min(s.chain.size(), static_cast<size_t>(keep / bt)));
  s.prompt_chain_blocks = std::min(s.prompt_chain_blocks, static_cast<int64_t>(s.chain.size()));
  ++s.generation;  // blocks computed from here hold new content: their hashes differ
  s.context = ev.tokens;
}

// Called as an ended session (ContextEvent kEnd on its last segment) finishes: its blocks past
// the prefix others may share (the trace's prompt hashes, or its parent's chain) are worthless.
void KvResidency::finish_ended(SessionState& s) {
  const size_t lead = gpu_blocks_within(s, s.prompt_chain_blocks);
  std::vector<BlockId> own(s.gpu_blocks.begin() + static_cast<std::ptrdiff_t>(lead),
                           s.gpu_blocks.end());
  s.gpu_blocks.resize(lead);
  release_worthless(own, /*reset_tail=*/false);
}

}  // namespace isim::sim
