// SessionState: the engine's view of one session while it runs.
//
// Token bookkeeping (one rule covers prompts, resumes, recomputes and swaps):
// - `context` counts every token the session has so far: inputs appended plus outputs emitted.
// - `kv` counts tokens whose KV has been computed and is held (on GPU, or on CPU when swapped).
// - The session must prefill `context - kv` tokens before it can decode again. A prefill that
//   completes emits the segment's first output token; each decode step then computes the KV of
//   the last token and emits the next one. So while decoding, context == kv + 1, and after a
//   discard the whole context is recomputed.
// - `recompute_left` is the part of that prefill that recomputes KV the session once held.
// - Layout of the `kv` tokens, in token order: `dropped_blocks` leading blocks whose KV is gone
//   (Pensieve drops the cheapest, leading chunks), then cpu_blocks, then gpu_blocks. A swap-out
//   moves the GPU list's head to the CPU list's tail; a swap-in moves the CPU list's tail back
//   to the GPU list's head, so a pipelined swap can stop part-way and both lists stay in token
//   order. A session runs only with no CPU blocks; its next prefill first recomputes the
//   dropped blocks (in the same iteration, with attention over the KV it kept).
#pragma once

#include <cstdint>
#include <vector>

#include "sim/block_manager.h"
#include "sim/time.h"
#include "traces/session.h"

namespace isim::sim {

enum class Phase : uint8_t {
  kPending,  // not arrived yet
  kWaiting,  // in the waiting queue (new, resumed, or preempted)
  kRunning,  // in the running set: prefilling or decoding
  kPaused,   // in an intercept
  kSwapped,  // intercept over, KV on CPU, waiting for swap-in
  kFinished,
  kSkipped,  // can never fit; reported, never run
};

struct SessionState {
  const trace::Session* src = nullptr;
  int32_t idx = 0;
  Phase phase = Phase::kPending;
  int32_t seg = 0;  // current segment
  int64_t context = 0;
  int64_t kv = 0;
  int64_t decoded_in_seg = 0;  // outputs emitted in the current segment
  int64_t recompute_left = 0;
  bool swap_out_pending = false;  // paused under `swap`; copied out at the next iteration
  bool chunked = false;           // rebuilding its context in S - R chunks (min-waste)
  bool discarded = false;         // KV dropped at its last pause
  Nanos arrival = 0;
  Nanos queue_key = 0;  // order in the waiting queue
  std::vector<BlockId> gpu_blocks;
  std::vector<BlockId> cpu_blocks;
  // Prefix caching: the content hash of each full engine block of the prompt (a chain: each
  // covers its parent), and how many leading gpu_blocks have been published under them.
  std::vector<uint64_t> chain;
  int64_t published = 0;

  // Metrics.
  Nanos first_token = -1;
  Nanos finish = -1;
  Nanos pause_start = -1;
  Nanos intercept_end = -1;
  Nanos seg_first_token = -1;  // first token of the current segment
  Nanos decode_time = 0;       // sum over segments of last - first token time
  int64_t decode_steps = 0;    // sum over segments of (outputs - 1)
  Nanos resume_ttft_sum = 0;   // sum over resumes of first token - intercept end
  int64_t resumes_with_token = 0;
  Nanos intercept_time = 0;  // sum of intercept durations
  int64_t recomputed_tokens = 0;
  int64_t swapped_out_bytes = 0;
  int64_t swapped_in_bytes = 0;
  int32_t preemptions = 0;
  int64_t prefix_lookup_tokens = 0;  // prompt tokens looked up in the prefix cache
  int64_t prefix_hit_tokens = 0;     // of which were found cached

  int64_t dropped_blocks = 0;

  int64_t pending_prefill(int64_t block_tokens) const {
    return dropped_blocks * block_tokens + context - kv;
  }
  const trace::Segment& segment() const { return src->segments[static_cast<size_t>(seg)]; }
  bool last_segment() const { return static_cast<size_t>(seg) + 1 == src->segments.size(); }
};

}  // namespace isim::sim
