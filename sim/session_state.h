// SessionState: one session as the replica engine that holds it sees it.
//
// Token bookkeeping (one rule covers prompts, resumes, recomputes and swaps):
// - `context` counts every token the session has so far: inputs appended plus outputs emitted.
// - `kv` counts tokens whose KV has been computed and is held (on GPU, or on CPU when swapped).
// - The session must prefill `context - kv` tokens before it can decode again. A prefill that
//   completes emits the segment's first output token; each decode step then computes the KV of
//   the last token and emits the next one. So while decoding, context == kv + 1, and after a
//   discard the whole context is recomputed.
// - `recompute_left` is the part of that prefill that recomputes KV the session once held;
//   `recompute_cause` splits it by why the KV was lost (it always sums to recompute_left).
// - Layout of the `kv` tokens, in token order: `dropped_blocks` leading blocks whose KV is gone
//   (Pensieve drops the cheapest, leading chunks), then cpu_blocks, then gpu_blocks. A swap-out
//   moves the GPU list's head to the CPU list's tail; a swap-in moves the CPU list's tail back
//   to the GPU list's head, so a pipelined swap can stop part-way and both lists stay in token
//   order. A session runs only with no CPU blocks; its next prefill first recomputes the
//   dropped blocks (in the same iteration, the rest attending to the KV it kept; a lead larger
//   than one batch a batch at a time before it: `restored_blocks`).
//
// Past and future: a SessionState carries its trace session, but only the engine (which plays
// the world: it must know when a segment's decode ends) and `Oracle` (sim/oracle.h, the one
// named door for estimators that may see the future) can read it. Everything else (policies,
// routers, estimators) sees the public fields and the past-only accessors below.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/block_manager.h"
#include "sim/time.h"
#include "sim/turn_metrics.h"
#include "traces/session.h"

namespace isim::sim {

enum class Phase : uint8_t {
  kPending,    // not arrived yet
  kWaiting,    // in the waiting queue (new, resumed, or preempted)
  kRunning,    // in the running set: prefilling or decoding
  kPaused,     // in an intercept
  kSwapped,    // intercept over, KV on CPU, waiting for swap-in
  kExporting,  // prefilled on a prefill replica: its KV waits to leave over a link
  kImporting,  // its KV is arriving over a link into blocks reserved here
  kFinished,
  kSkipped,  // can never fit; reported, never run
};
inline constexpr int kPhases = 9;

// Why KV that a session had computed was lost (and must be computed again).
enum class LostCause : uint8_t {
  kIntercept,     // the intercept policy dropped it (discard, min-waste, tier chunk drops)
  kPreemption,    // the engine preempted a running session out of blocks
  kIdleEviction,  // the engine evicted idle KV because nothing could run otherwise
  kMigration,     // the session resumed on another replica than the one holding its KV
  kRoleSwitch,    // its replica changed role and dropped the KV of its paused sessions
};
inline constexpr int kLostCauses = 5;
const char* lost_cause_name(LostCause c);

// What a session's life measured, wherever it ran; the cluster's ledger keeps it.
struct SessionMetrics {
  Nanos first_token = -1;
  Nanos finish = -1;
  Nanos decode_time = 0;      // sum over segments of last - first token time
  int64_t decode_steps = 0;   // sum over segments of (outputs - 1)
  Nanos resume_ttft_sum = 0;  // sum over resumes of first token - intercept end
  int64_t resumes_with_token = 0;
  Nanos intercept_time = 0;  // sum of intercept durations
  int64_t recomputed_tokens = 0;
  std::array<int64_t, kLostCauses> recomputed_by_cause{};
  int64_t swapped_out_bytes = 0;
  int64_t swapped_in_bytes = 0;
  int32_t preemptions = 0;
  int64_t prefix_lookup_tokens = 0;  // prompt tokens looked up in the prefix cache
  int64_t prefix_hit_tokens = 0;     // of which were found cached
  int32_t replica_first = -1;        // where it was first admitted
  int32_t replica_last = -1;         // where it ran last
  int32_t migrations = 0;            // resumes on another replica than the one before
  int32_t kv_transfers = 0;          // prefill-to-decode KV transfers
  Nanos transfer_time = 0;           // from prefill end to the KV landing, summed
};

class Engine;
struct Oracle;

struct alignas(64) SessionState {
  // Starts a session's state at its arrival. `idx` is its index in the trace: global across
  // the cluster and stable, it breaks every tie (queues, evictions) so runs are deterministic.
  static SessionState arrive(const trace::Session& src, int32_t idx, Nanos arrival);

  // What a decode step reads and writes comes first, in the first two cache lines of the
  // (cache-line aligned) state: a step touches nothing else unless it takes a block or its gap
  // differs from the one before.
  int32_t idx = 0;
  int32_t h = -1;  // its handle on the replica that holds it (-1: none)
  Phase phase = Phase::kPending;
  bool chunked = false;  // rebuilding its context in S - R chunks (min-waste)
  int32_t seg = 0;       // current segment
  int64_t context = 0;
  int64_t kv = 0;
  int64_t decoded_in_seg = 0;  // outputs emitted in the current segment
  int64_t seg_output = 0;      // the engine's copy of the current segment's output count
  int64_t recompute_left = 0;
  Nanos last_token = -1;  // the latest output token of the current segment
  Nanos seg_max_gap = 0;  // the longest gap between consecutive tokens of the current segment
  std::vector<BlockId> gpu_blocks;
  GapLog seg_gaps;  // the current segment's inter-token gaps (sim/turn_metrics.h)
  std::array<int64_t, kLostCauses> recompute_cause{};  // sums to recompute_left
  bool swap_out_pending = false;      // paused under `swap`; copied out at the next iteration
  bool discarded = false;             // KV dropped at its last pause
  bool export_after_prefill = false;  // this turn runs on a prefill replica: its KV leaves
                                      // after the prefill (cleared when it does)
  bool moving_paused = false;  // paused, its KV moving to another replica (exporting/importing)
  Nanos arrival = 0;
  Nanos queue_key = 0;  // order in the waiting queue
  int64_t run_key = 0;  // order in the running set (arrival, or admission for vLLM v1)
  std::vector<BlockId> cpu_blocks;
  int64_t dropped_blocks = 0;
  // A dropped lead larger than one batch is recomputed a batch at a time: the leading gpu_blocks
  // restored so far (0 when none is in progress). While it is above 0 the session runs with
  // dropped_blocks > 0, and its gpu_blocks are those restored, then the ones it kept.
  int64_t restored_blocks = 0;
  // Prefix caching: the content hash of each full engine block of the prompt (a chain: each
  // covers its parent), and how many leading gpu_blocks have been published under them.
  std::vector<uint64_t> chain;
  int64_t prompt_chain_blocks = 0;  // leading entries of `chain` named by the trace's prompt
                                    // hashes: the only blocks other sessions can share
  int64_t chain_block_tokens = 0;   // the block size `chain` is in (0: none computed yet); a
                                    // session arriving from a replica with the same block size
                                    // keeps its chain, extended past the prompt (hash_every_block)
  int64_t published = 0;
  int32_t generation = 0;     // context resets so far: salts the hashes of blocks computed since
  bool chain_shared = false;  // a fork's family: blocks past the prompt may be held by others
  // Set by the owner for a forked session (ContextEvent kFork) before admission: the parent's
  // chain over the shared prefix's full blocks, in `fork_block_tokens` blocks.
  std::vector<uint64_t> fork_chain;
  int64_t fork_block_tokens = 0;

  int64_t queued_tokens = 0;  // prefill it needed when it joined the waiting or swapped queue
  Nanos pause_start = -1;
  Nanos intercept_end = -1;
  Nanos seg_first_token = -1;  // first token of the current segment
  int64_t seg_input = 0;       // the context the current segment's first token was computed over
  SessionMetrics m;

  int64_t pending_prefill(int64_t block_tokens) const {
    return dropped_blocks * block_tokens + context - kv;
  }
  // Past-only facts.
  const std::string& id() const { return src_->id; }
  int64_t prompt_tokens() const { return src_->segments.front().input; }
  int32_t segments_done() const { return seg; }
  // The kind of intercept the session is paused in: a real harness knows which tool it called
  // (not for how long). Empty when the current segment has none.
  const std::string& intercept_kind() const;
  // The trace session's prefix hashes (content identity of the prompt, known on arrival).
  const trace::PrefixHashes& prefix() const { return src_->prefix; }
  // A subagent: its first segment forks from a parent (ContextEvent kFork, known on arrival).
  bool subagent() const {
    return src_->segments.front().event.kind == trace::ContextEventKind::kFork;
  }
  // The current segment's context signals: what the harness says as the segment starts.
  const trace::ContextEvent& context_event() const { return segment().event; }
  const std::vector<trace::Retention>& retention() const { return segment().retention; }

 private:
  friend class Engine;
  friend struct Oracle;
  const trace::Segment& segment() const { return src_->segments[static_cast<size_t>(seg)]; }
  bool last_segment() const { return static_cast<size_t>(seg) + 1 == src_->segments.size(); }
  const trace::Session* src_ = nullptr;
};

}  // namespace isim::sim
