// A simulated run seen as a benchmark client sees it: one request per turn, and the statistics
// benchmark tools report over requests. The writers of other tools' formats (vLLM bench JSON,
// OpenMetrics) and the readers that compare against them (validate --against) share these
// definitions, so a metric is computed one way in every format.
//
// Contract:
// - request_rows: one row per completed turn (sim/turn_metrics.h), in the order given (a run's
//   turns are sorted by start, session, segment). send_s is the turn's start (the session's
//   arrival, or the end of the intercept before it); ttft_s = first token - send;
//   e2el_s = last token - send; tpot_s = (e2el - ttft) / (output_tokens - 1), < 0 (undefined)
//   with fewer than 2 outputs (vLLM bench's TPOT), computed as the turn's span_ns (last token -
//   first token: the sum of its gaps, exactly) / (output_tokens - 1) when the record has it
//   (the same value, without float rounding); itl: every gap between the request's consecutive
//   output tokens, run-length coded, output_tokens - 1 of them, when the run kept them (empty
//   without a GapArena).
// - Values (`Values`) is a multiset of doubles with counts; its statistics follow NumPy, as vLLM
//   bench, AIPerf and GuideLLM compute theirs: mean, population standard deviation (np.std,
//   ddof 0), and percentile(q) by linear interpolation between closest ranks (np.percentile's
//   default): with the N values sorted x_0 <= ... <= x_{N-1}, h = (N - 1) q / 100, the result is
//   x_floor(h) + (h - floor(h)) (x_floor(h)+1 - x_floor(h)). Median = percentile(50).
//   inverse_cdf(q) is GuideLLM's instead: the smallest x whose count of values <= x is at least
//   q / 100 of N (with counts as weights, its weighted percentile). Its memory grows with the
//   distinct values, not with the count (add merges equal values as it goes). Over no values
//   every statistic is NaN; each writer's contract says what it prints then (bench.json: 0, as
//   vLLM does).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "sim/turn_metrics.h"

namespace isim::exp {

struct RequestRow {
  int32_t session = 0, seg = 0;
  int32_t replica = -1;
  double send_s = 0;
  int64_t input_tokens = 0, output_tokens = 0;
  double ttft_s = 0, e2el_s = 0;
  double tpot_s = -1;            // < 0: fewer than 2 outputs
  std::vector<sim::GapRun> itl;  // inter-token gaps (ns), in order
};

// The rows with their gaps from `gaps`, the run's arena.
std::vector<RequestRow> request_rows(const std::vector<sim::TurnRecord>& turns,
                                     const sim::GapArena& gaps);
// One turn's row; its itl from `gaps` (null: left empty).
RequestRow request_row(const sim::TurnRecord& t, const sim::GapArena* gaps = nullptr);

// A multiset of values with exact NumPy-style statistics.
class Values {
 public:
  void add(double x, int64_t count = 1);
  void reserve(size_t distinct) { v_.reserve(distinct); }  // room for this many distinct values
  int64_t size() const { return n_; }
  double mean() const;
  double std() const;  // population (ddof 0)
  double percentile(double q) const;
  double median() const { return percentile(50); }
  // GuideLLM's percentile (guidellm schemas/statistics.py Percentiles.from_pdf): the smallest
  // value whose cumulative count reaches q / 100 of all (no interpolation); counts act as
  // weights. NaN over no values.
  double inverse_cdf(double q) const;

 private:
  void sort() const;
  mutable std::vector<std::pair<double, int64_t>> v_;
  mutable bool sorted_ = true;
  int64_t n_ = 0;
  size_t merge_at_ = 4096;     // add sorts and merges equal values past this many entries
  mutable size_t merged_ = 0;  // the entries [0, merged_) are sorted (by the last sort)
};

// The multiset of `v` (sorted by core/sort_doubles.h, then added in order: nothing left to
// sort). Its statistics need every request's value in order (sums in sorted order).
Values values_of(std::vector<double> v);

// Every inter-token gap of `rows` (or of a run's tallies), in seconds.
Values itl_values(const std::vector<RequestRow>& rows);
Values itl_values(const sim::TokenTallies& tallies);

}  // namespace isim::exp
