// The batch-forming steps schedulers share, each composed of BatchContext moves.
//
// Contract: each step adds work within max_num_seqs and max_num_batched_tokens, in queue or
// running order, and leaves the context consistent when it stops early.
#pragma once

#include "sim/batch_context.h"

namespace isim::sim {

// What add_preempting did to make room: whether it preempted anyone, and whether the last one
// was the running session `h` itself (then nothing was added).
struct Preempted {
  bool any = false;
  bool self = false;
};
// Adds running session h's work with `add` (true when its blocks fitted); while it does not
// fit, preempts the last running session by recompute, h itself being the last resort.
template <class Add>
Preempted add_preempting(BatchContext& c, int32_t h, Add&& add) {
  Preempted p;
  while (!add()) {
    p.any = true;
    const int32_t victim = c.queues().running().back();
    c.preempt(victim);
    if (victim == h) {
      p.self = true;
      break;
    }
  }
  return p;
}

// Gives every decoding session its next token, preempting the last running session when out of
// blocks. Returns false if it had to preempt.
bool schedule_decodes(BatchContext& c);
// Continues running sessions that are part-way through a chunked prefill.
void continue_prefills(BatchContext& c);
// Admits waiting sessions in queue order; `whole` admits only whole prefills.
void admit_waiting(BatchContext& c, bool whole);
// Swaps in swapped sessions (FCFS) while GPU blocks allow; the iteration stalls for it
// (pipelined swaps move in SwapPlanner::progress instead).
void swap_in(BatchContext& c);
// Sessions with pending pipelined recompute get chunks of at most max(S - R, 1) tokens in
// total, R being the decodes already in the batch.
void schedule_recompute_chunks(BatchContext& c);
// Synchronous swap-ins waiting (vLLM v0 admits no new prompts while there are any).
inline bool has_swapped(const BatchContext& c) {
  return !c.pipelined_swaps() && !c.queues().swapped().empty();
}

}  // namespace isim::sim
