// The shared batch-forming steps over BatchContext's moves.
#include "sim/batch_steps.h"

#include <algorithm>

namespace isim::sim {

bool schedule_decodes(BatchContext& c) {
  bool clean = true;
  const std::vector<int32_t>& running = c.queues().running();
  // Index loop: preemption removes later entries (the most recent arrivals) from running.
  for (size_t i = 0; i < running.size(); ++i) {
    const int32_t h = running[i];
    if (!decoding(c.session(h))) continue;  // still prefilling (or rebuilding after a preemption)
    if (c.batch().tokens() + 1 > c.config().max_num_batched_tokens) break;
    const Preempted p = add_preempting(c, h, [&] { return c.push_decode(h); });
    if (p.any) clean = false;
    if (p.self) break;  // it was the last running session in order
  }
  return clean;
}

void continue_prefills(BatchContext& c) {
  const int64_t bt = c.kv().block_tokens();
  for (int32_t h : c.queues().running()) {
    const SessionState& s = c.session(h);
    const int64_t pending = s.pending_prefill(bt);
    if (decoding(s) || pending == 0 || c.recompute_lane(s)) continue;
    const int64_t room = c.room();
    if (room <= 0) break;
    c.add_prefill(h, std::min(room, pending));
  }
}

void admit_waiting(BatchContext& c, bool whole) {
  if (c.hold_admissions()) return;
  const Queue& waiting = c.queues().waiting();
  for (auto it = waiting.begin(); it != waiting.end();) {
    const int32_t h = it->h;
    if (c.recompute_lane(c.session(h))) {  // rebuilt in S - R chunks by schedule_recompute_chunks
      ++it;
      continue;
    }
    if (static_cast<int64_t>(c.queues().running().size()) + 1 > c.config().max_num_seqs) break;
    if (!c.start_prefill(h, c.room(), whole)) break;
    it = c.admit(it);
  }
}

void swap_in(BatchContext& c) {
  if (c.pipelined_swaps() || c.hold_admissions()) return;  // pipelined: SwapPlanner::progress
  while (c.swap_in_head()) {
  }
}

void schedule_recompute_chunks(BatchContext& c) {
  if (!c.chunked_recompute()) return;
  const int64_t bt = c.kv().block_tokens();
  int64_t left = std::max<int64_t>(c.saturation_tokens() - c.batch().shape().num_decode, 1);
  left = std::min(left, c.room());
  auto take = [&](int32_t h) {
    const int64_t before = c.batch().tokens();
    if (!c.start_prefill(h, left, /*whole=*/false)) return false;
    c.mark_chunked(h);
    left -= c.batch().tokens() - before;
    return true;
  };
  // Sessions part-way through their rebuild first, then new ones in queue order.
  for (int32_t h : c.queues().running()) {
    if (left <= 0) return;
    const SessionState& s = c.session(h);
    if (!decoding(s) && s.pending_prefill(bt) > 0 && c.recompute_lane(s)) take(h);
  }
  if (c.hold_admissions()) return;
  const Queue& waiting = c.queues().waiting();
  for (auto it = waiting.begin(); it != waiting.end() && left > 0;) {
    const int32_t h = it->h;
    if (!c.recompute_lane(c.session(h))) {
      ++it;
      continue;
    }
    if (static_cast<int64_t>(c.queues().running().size()) + 1 > c.config().max_num_seqs) return;
    if (!take(h)) return;
    it = c.admit(it);
  }
}

}  // namespace isim::sim
