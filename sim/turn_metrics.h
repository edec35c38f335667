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
// - span_ns: last output token - first (ns; 0 with one output; < 0: not given, a record built
//   by hand): exactly the sum of the turn's gaps, so TPOT needs no gaps.
// - gaps: every gap between consecutive output tokens of the turn, in emission order, with
//   equal consecutive gaps merged into one run (ns, count); output_tokens - 1 gaps in all. They
//   are kept only when an output lists or places every token (the run decides before it starts,
//   experiments/run/run.h keeps_gaps): then in one GapArena per run, 8 bytes a run, the record
//   holding where its runs are (gaps_at, gaps_words); otherwise gaps_words is 0 and only the
//   run's TokenTallies have them.
// - TokenTallies, over every completed turn of a run, tallied as turns complete (whether gaps
//   are kept or not, so the aggregates are the same either way): the ITL multiset (gap ns ->
//   count) and output tokens per 1-second bucket. The buckets' origin is the earliest send
//   (start) of a completed turn; a token at t (ns, exact) is in bucket floor((t - origin) / 1 s).
// - input_tokens: the turn's prompt as a client of an OpenAI-style server sends it: the whole
//   context when the turn's first token is computed (the session's prompt for segment 0; the
//   conversation so far plus the tokens the intercept returned for a resumed segment).
// - finish_s: the turn's last output token (absolute simulated time); replica: the replica
//   that emitted it.
// - request latency, per finished session: (e2e - total intercept time) / segments.
// - Turn goodput, windows and recovery are filled in by the layer that knows the SLO and the
//   spec's metrics (experiments/run/turn_metrics.h); `set` false / empty means not asked for.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace isim::sim {

// `count` consecutive inter-token gaps of `gap_ns` each.
struct GapRun {
  int64_t gap_ns = 0;
  int64_t count = 0;
  bool operator==(const GapRun&) const = default;
};

// One turn's gaps as they are emitted: equal consecutive gaps merged, the latest run kept
// inline (beside the session's token counts, sim/session_state.h) so that a token whose gap
// extends it touches no other memory; `close` moves it to the list the readers get.
class GapLog {
 public:
  void add(int64_t gap_ns, int64_t count) {
    if (tail_.count > 0 && tail_.gap_ns == gap_ns) {
      tail_.count += count;
      return;
    }
    if (tail_.count > 0) runs_.push_back(tail_);
    tail_ = {gap_ns, count};
  }
  void clear() {
    runs_.clear();
    tail_ = {};
  }
  // Every run in emission order, the latest included; `runs` is then complete.
  void close() {
    if (tail_.count > 0) runs_.push_back(tail_);
    tail_ = {};
  }
  // The runs before the open one (all of them after `close`).
  const std::vector<GapRun>& runs() const { return runs_; }
  bool closed() const { return tail_.count == 0; }

 private:
  GapRun tail_;
  std::vector<GapRun> runs_;
};

// Many turns' gap runs in one array of 8-byte words. A run whose gap is under 2^44 ns (about
// 4.9 h) and whose count is under 2^20 is one word (count << 44 | gap); any other is two: a word
// with count 0 in its top 20 bits and the count in its low 44, then the gap.
class GapArena {
 public:
  struct Span {
    int64_t at = 0;
    int32_t words = 0;
  };
  // Appends `runs` (counts >= 1, gaps >= 0); where they are.
  Span append(const std::vector<GapRun>& runs) {
    const Span s{static_cast<int64_t>(w_.size()), 0};
    for (const GapRun& g : runs) {
      const auto gap = static_cast<uint64_t>(g.gap_ns), count = static_cast<uint64_t>(g.count);
      if (gap <= kGapMask && count < (uint64_t{1} << (64 - kGapBits))) {
        w_.push_back(count << kGapBits | gap);
      } else {
        w_.push_back(count & kGapMask);
        w_.push_back(gap);
      }
    }
    return {s.at, static_cast<int32_t>(static_cast<int64_t>(w_.size()) - s.at)};
  }
  // Calls f(GapRun) for each run of the span, in order.
  template <class F>
  void each(int64_t at, int32_t words, F&& f) const {
    const uint64_t* w = w_.data() + at;
    const uint64_t* end = w + words;
    while (w < end) {
      const uint64_t x = *w++;
      const uint64_t count = x >> kGapBits;
      if (count != 0)
        f(GapRun{static_cast<int64_t>(x & kGapMask), static_cast<int64_t>(count)});
      else
        f(GapRun{static_cast<int64_t>(*w++), static_cast<int64_t>(x & kGapMask)});
    }
  }
  std::vector<GapRun> runs(int64_t at, int32_t words) const {
    std::vector<GapRun> out;
    each(at, words, [&](const GapRun& g) { out.push_back(g); });
    return out;
  }
  size_t words() const { return w_.size(); }
  void clear() { std::vector<uint64_t>().swap(w_); }

 private:
  static constexpr int kGapBits = 44;
  static constexpr uint64_t kGapMask = (uint64_t{1} << kGapBits) - 1;
  std::vector<uint64_t> w_;
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
  int32_t gaps_words = 0;    // its gap runs in the run's GapArena (0: not kept)
  int64_t gaps_at = 0;
  int64_t span_ns = -1;  // last token - first token (< 0: not given)
};

// What every completed turn's output tokens add up to (see the top).
struct TokenTallies {
  std::vector<GapRun> itl;          // (gap ns, how many), by gap ascending
  int64_t origin_ns = -1;           // earliest send of a completed turn (< 0: none completed)
  std::vector<int64_t> per_second;  // output tokens by 1-second bucket from origin_ns
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
