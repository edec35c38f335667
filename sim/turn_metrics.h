// Per-turn metrics: one record per turn (a segment: one LLM request), and what the run summary
// derives from them (sim/metrics.h Summary).
//
// Definitions (seconds):
// - A turn starts at its session's arrival (segment 0) or at the end of the intercept before
//   it (a resumed segment). Records are kept for completed turns (last output token emitted).
// - request TTFT: the turn's first output token - its start (every turn, first ones included;
//   Summary::turn_ttft keeps the resumed turns only).
// - itl_max: the longest gap between consecutive output tokens of the turn (a KV transfer
//   between a prefill and a decode replica included); undefined (< 0) for a turn with fewer
//   than 2 output tokens. Its p99 over turns is the run's inter-token latency p99.
// - gaps: every gap between consecutive output tokens of the turn, in emission order, with
//   equal consecutive gaps merged into one run (ns, count); output_tokens - 1 gaps in all.
// - input_tokens: the turn's prompt as a client of an OpenAI-style server sends it: the whole
//   context when the turn's first token is computed (the session's prompt for segment 0; the
//   conversation so far plus the tokens the intercept returned for a resumed segment).
// - finish_s: the turn's last output token (absolute simulated time); replica: the replica
//   that emitted it.
// - request latency, per finished session: (e2e - total intercept time) / segments.
// - Turn goodput, windows and recovery are filled in by the layer that knows the SLO and the
//   spec's metrics (experiments/run/turn_metrics.h); `set` false / empty means not asked for.
#pragma once

#include <cstdint>
#include <vector>

namespace isim::sim {

// `count` consecutive inter-token gaps of `gap_ns` each.
struct GapRun {
  int64_t gap_ns = 0;
  int64_t count = 0;
  bool operator==(const GapRun&) const = default;
};

struct TurnRecord {
  int32_t session = 0;    // trace index
  int32_t seg = 0;        // segment index within the session
  double start_s = 0;     // arrival (seg 0) or intercept end
  double ttft_s = 0;      // first token - start
  double itl_max_s = -1;  // longest inter-token gap (< 0: fewer than 2 outputs)
  int64_t output_tokens = 0;
  int64_t input_tokens = 0;  // the whole context the turn's first token was computed over
  double finish_s = 0;       // last output token (absolute)
  int32_t replica = -1;      // emitted the last token
  std::vector<GapRun> gaps;  // inter-token gaps in order, equal neighbours merged
};

// Turns that met the turn SLO (every limit given holds for the turn).
struct TurnGoodput {
  bool set = false;   // the spec gave a turn-level limit
  int64_t turns = 0;  // every turn of the trace (segments of all its sessions)
  int64_t met = 0;    // completed turns within every limit
  double share = 0;   // met / turns
  double per_s = 0;   // met / busy window
};

// One time window [start_s, end_s) of the run; turns by start, sessions by arrival.
// Statistics over no values are < 0 (null in the outputs).
struct WindowStats {
  double start_s = 0, end_s = 0;
  int64_t turns = 0;
  double ttft_mean = -1, ttft_p50 = -1, ttft_p95 = -1, ttft_p99 = -1;
  double itl_max_p99 = -1;
  double request_latency_mean = -1;
  double goodput_share = -1;  // < 0: no turn SLO, or no turns
  int64_t output_tokens = 0;
};

}  // namespace isim::sim
