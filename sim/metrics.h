// Metrics: per-session latencies, the run summary, the GPU waste breakdown and the time series,
// exactly as the design's Metrics section defines them.
//
// Definitions (all times in seconds in the outputs):
// - TTFT: first output token of the session - arrival.
// - Resume TTFT: first token of a segment k>0 - the end of the intercept before it (mean per
//   session).
// - TPOT: sum over segments of (last token - first token) / sum of (outputs - 1); undefined
//   (absent from the summary) for a session that never decodes twice in a segment.
// - E2E: finish - arrival. Intercept time: sum of the trace's intercept durations.
// - Normalized latency (InferCept): (finish - arrival - intercept time)
//   / (decoded tokens + returned tokens).
// - Per-request latency: (e2e - intercept time) / segments, per finished session; per-turn
//   TTFT and inter-token latency: sim/turn_metrics.h.
// - Percentiles use the nearest-rank rule over finished sessions: p-th = sorted[ceil(p/100·n)-1].
// - Waste: GPU block-seconds in five classes summed over the run (see WasteBreakdown).
// - Makespan: the last finish - the first arrival, over finished sessions.
// - Busy window: the length of the union, over replicas, of the intervals in which a replica
//   executes an iteration (its forward pass, step overhead and swap stalls): the time when the
//   engine has work. Time when every unfinished session is paused in an intercept (a long tool
//   call at the end of a run), or nothing has arrived yet, is not in it.
// - Throughput: finished sessions, and output tokens of finished sessions, per second of the
//   busy window (0 when it is empty). Unlike a rate over the makespan, the idle tail of long
//   tool calls does not dilute it.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "sim/time.h"
#include "sim/turn_metrics.h"

namespace isim::sim {

struct SessionRecord {
  std::string id;
  int32_t replica_first = -1, replica_last = -1, migrations = 0;
  std::string status;  // finished | skipped
  double arrival_s = 0, first_token_s = -1, finish_s = -1;
  double ttft_s = -1, tpot_s = -1, resume_ttft_s = -1, e2e_s = -1, intercept_s = 0;
  double normalized_latency_s = -1;
  int64_t output_tokens = 0, returned_tokens = 0, segments = 0;
  int64_t recomputed_tokens = 0, swapped_out_bytes = 0, swapped_in_bytes = 0;
  int32_t preemptions = 0;
  int64_t prefix_hit_tokens = 0;
};

// GPU block-seconds by what the memory was doing.
// - active: held by a running session whose batch entry computes new tokens;
// - recompute: held by a running session that is rebuilding KV it once had;
// - preserved: held by a session that is not in the batch (paused, or waiting with KV);
// - swap_stall: every held block while the GPU stalls on a synchronous swap;
// - free: not held.
struct WasteBreakdown {
  double active = 0, recompute = 0, preserved = 0, swap_stall = 0, free = 0;
  double total() const { return active + recompute + preserved + swap_stall + free; }
  void merge(const WasteBreakdown& o);
};

struct TimeSample {
  double t_s = 0;
  int64_t running = 0, waiting = 0, paused = 0, swapped = 0;
  int64_t gpu_blocks_used = 0, cpu_blocks_used = 0;
  int64_t queued_tokens = 0;        // the replica's queued prefill tokens (ReplicaLoad)
  double busy_s = 0;                // the replica's busy time so far
  int64_t batch_tokens = 0;         // tokens of the iteration in flight (0: idle)
  int64_t preemptions = 0;          // the replica's engine preemptions so far (Counters)
  void merge(const TimeSample& o);  // sums every count (t_s stays)
};

// A half-open interval of simulated time [start, end).
struct Span {
  Nanos start = 0, end = 0;
};
// The length in seconds of the union of `spans` (any order; overlaps counted once; empty or
// reversed spans add nothing).
double union_seconds(std::vector<Span> spans);

struct Stat {
  int64_t n = 0;
  double mean = 0, p50 = 0, p90 = 0, p95 = 0, p99 = 0, max = 0;
};
Stat make_stat(std::vector<double> values);

struct Counters {
  int64_t iterations = 0;
  int64_t recomputed_tokens = 0;
  // GPU time those tokens took, each prefill's recomputed part priced by
  // CostModel::recompute_cost at its position (a dropped lead over the lead before it).
  Nanos recompute_time = 0;
  int64_t swapped_out_bytes = 0, swapped_in_bytes = 0;
  int64_t preemptions = 0;             // engine preemptions (out of blocks while running)
  int64_t idle_evictions = 0;          // idle KV dropped because nothing could run otherwise
  int64_t swap_fallback_discards = 0;  // swap asked for, CPU pool full: discarded instead
  int64_t pauses = 0, discards = 0, swaps = 0, preserves = 0;
  int64_t prefill_tokens = 0, decode_tokens = 0;
  int64_t prefix_lookup_tokens = 0, prefix_hit_tokens = 0;  // prefix cache
  int64_t dropped_blocks = 0;      // leading blocks dropped from paused sessions (Pensieve)
  int64_t oversized_restores = 0;  // dropped leads larger than one batch: recomputed in pieces
  // Per turn (every resume after an intercept): where the session's KV was when it resumed.
  int64_t turns = 0;
  int64_t turn_gpu_hit_tokens = 0, turn_cpu_hit_tokens = 0, turn_recompute_tokens = 0;
  Nanos busy_time = 0, stall_time = 0;
  // Lost KV reuse: tokens recomputed that the session had computed before, by LostCause
  // (sim/session_state.h), plus prompt blocks this replica had computed and published but
  // evicted from its prefix cache before they were needed again.
  std::array<int64_t, 5> lost_reuse{};  // by LostCause (sim/session_state.h)
  int64_t prefix_evicted_tokens = 0;
  // Agent context signals (traces/session.h ContextEvent).
  int64_t resets = 0;
  int64_t reset_released_tokens = 0;   // KV tokens a reset made worthless
  int64_t forks = 0;                   // forked sessions admitted with their parent's chain
  int64_t worthless_freed_blocks = 0;  // released blocks the KV manager unhashed at once
  int64_t lost_reuse_total() const;
  // Adds every count of `o` (a fleet's totals are the merge of its replicas').
  void merge(const Counters& o);
};

// Per-session SLO attainment and goodput, filled in by the layer that knows the SLO
// (experiments/run/goodput.h) when one is set: `limits` empty means none was.
struct SloAttainment {
  std::vector<std::pair<std::string, double>> limits;  // metric name -> per-session upper limit
  int64_t met = 0;                                     // sessions that finished and met every limit
  double share = 0;                                    // met / sessions
  double per_s = 0;                                    // met / busy window (goodput)
};

struct Summary {
  int64_t sessions = 0, finished = 0, skipped = 0;
  double makespan_s = 0;
  double busy_window_s = 0;
  double throughput_sessions_s = 0, throughput_tokens_s = 0;  // over the busy window
  Stat ttft, tpot, e2e, normalized_latency, resume_ttft;
  Stat turn_ttft;  // every resume's first token - intercept end, over all turns
  Counters counters;
  WasteBreakdown waste;
  int64_t gpu_blocks = 0, cpu_blocks = 0;
  int64_t extrapolations = 0;
  SloAttainment slo;
  bool overloaded = false;        // the queue grew without bound (experiments/run/goodput.h)
  double queue_growth_per_s = 0;  // the least-squares slope that judged it
  // Per turn (sim/turn_metrics.h): every completed turn's TTFT and longest inter-token gap,
  // and per finished session (e2e - intercepts) / segments.
  Stat request_ttft, itl_max, request_latency;
  TurnGoodput turn_goodput;
  std::vector<WindowStats> windows;  // metrics.window_s (empty: none asked)
  std::vector<double> recovery_s;    // per metrics.shifts_s entry; < 0: never recovered
};

// `busy_window_s` is the busy window (union_seconds of every replica's busy spans).
Summary summarize(const std::vector<SessionRecord>& sessions, const Counters& c,
                  const WasteBreakdown& w, int64_t gpu_blocks, int64_t cpu_blocks,
                  int64_t extrapolations, double busy_window_s,
                  std::vector<double> turn_ttfts = {});

// Fills `s.request_ttft` and `s.itl_max` from `turns` (sim/turn_metrics.h).
void add_turn_stats(Summary& s, const std::vector<TurnRecord>& turns);
// (e2e - intercept time) / segments of a finished session; < 0 otherwise.
double request_latency(const SessionRecord& r);

}  // namespace isim::sim
