#include "experiments/run/request_metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <unordered_map>
#include <utility>

#include "core/sort_doubles.h"
#include "sim/time.h"

namespace isim::exp {

RequestRow request_row(const sim::TurnRecord& t, const sim::GapArena* gaps) {
  RequestRow r;
  r.session = t.session;
  r.seg = t.seg;
  r.replica = t.replica;
  r.send_s = t.start_s;
  r.input_tokens = t.input_tokens;
  r.output_tokens = t.output_tokens;
  r.ttft_s = t.ttft_s;
  r.e2el_s = t.finish_s - t.start_s;
  if (t.output_tokens >= 2) {
    // From the first-to-last token span when the record has it: exact in ns, so equal gaps give
    // equal TPOTs (e2el - ttft in seconds rounds differently per turn).
    const auto decodes = static_cast<double>(t.output_tokens - 1);
    r.tpot_s = t.span_ns >= 0 ? static_cast<double>(t.span_ns) / decodes / 1e9
                              : (r.e2el_s - r.ttft_s) / decodes;
  }
  if (gaps) r.itl = gaps->runs(t.gaps_at, t.gaps_words);
  return r;
}

std::vector<RequestRow> request_rows(const std::vector<sim::TurnRecord>& turns,
                                     const sim::GapArena& gaps) {
  std::vector<RequestRow> rows;
  rows.reserve(turns.size());
  for (const sim::TurnRecord& t : turns) rows.push_back(request_row(t, &gaps));
  return rows;
}

void Values::add(double x, int64_t count) {
  if (count <= 0) return;
  if (!v_.empty() && v_.back().first == x) {
    v_.back().second += count;
  } else {
    if (!v_.empty() && x < v_.back().first) sorted_ = false;
    v_.emplace_back(x, count);
    if (v_.size() >= merge_at_) {  // many values, few distinct (a run's gaps): merge them now
      sort();
      merge_at_ = std::max(merge_at_, 2 * v_.size());
    }
  }
  n_ += count;
}

void Values::sort() const {
  if (sorted_) return;
  // The entries up to merged_ are sorted already (the last sort's): sort the rest, merge.
  const auto mid = v_.begin() + static_cast<std::ptrdiff_t>(std::min(merged_, v_.size()));
  std::sort(mid, v_.end());
  std::inplace_merge(v_.begin(), mid, v_.end());
  // Merge equal neighbours so each value appears once.
  size_t out = 0;
  for (size_t i = 1; i < v_.size(); ++i) {
    if (v_[i].first == v_[out].first)
      v_[out].second += v_[i].second;
    else
      v_[++out] = v_[i];
  }
  if (!v_.empty()) v_.resize(out + 1);
  sorted_ = true;
  merged_ = v_.size();
}

double Values::mean() const {
  if (n_ == 0) return std::numeric_limits<double>::quiet_NaN();
  sort();
  if (v_.size() == 1) return v_[0].first;  // x c / c may round: one value is its own mean
  double sum = 0;
  for (const auto& [x, c] : v_) sum += x * static_cast<double>(c);
  return sum / static_cast<double>(n_);
}

double Values::std() const {
  if (n_ == 0) return std::numeric_limits<double>::quiet_NaN();
  const double m = mean();
  if (v_.size() == 1) return 0.0;  // equal values: no spread, exactly
  double ss = 0;
  for (const auto& [x, c] : v_) ss += (x - m) * (x - m) * static_cast<double>(c);
  return std::sqrt(ss / static_cast<double>(n_));
}

double Values::percentile(double q) const {
  if (!(q >= 0 && q <= 100)) throw std::logic_error("Values::percentile: q outside [0, 100]");
  if (n_ == 0) return std::numeric_limits<double>::quiet_NaN();
  sort();
  const double h = static_cast<double>(n_ - 1) * q / 100.0;
  const auto lo = static_cast<int64_t>(std::floor(h));
  const int64_t hi = std::min(lo + 1, n_ - 1);
  // The values at sorted ranks lo and hi, walking the cumulative counts once.
  double x_lo = 0, x_hi = 0;
  int64_t seen = 0;
  bool have_lo = false;
  for (const auto& [x, c] : v_) {
    seen += c;
    if (!have_lo && lo < seen) {
      x_lo = x;
      have_lo = true;
    }
    if (hi < seen) {
      x_hi = x;
      break;
    }
  }
  return x_lo + (h - static_cast<double>(lo)) * (x_hi - x_lo);
}

double Values::inverse_cdf(double q) const {
  if (!(q >= 0 && q <= 100)) throw std::logic_error("Values::inverse_cdf: q outside [0, 100]");
  if (n_ == 0) return std::numeric_limits<double>::quiet_NaN();
  sort();
  const double target = q / 100.0 * static_cast<double>(n_);
  int64_t seen = 0;
  for (const auto& [x, c] : v_) {
    seen += c;
    if (static_cast<double>(seen) >= target) return x;
  }
  return v_.back().first;
}

Values values_of(std::vector<double> v) {
  sort_doubles(v);
  Values out;
  size_t distinct = 0;
  for (size_t i = 0; i < v.size(); ++i) distinct += i == 0 || v[i] != v[i - 1];
  out.reserve(distinct);  // a run's millions of values: one allocation, no growth copies
  for (double x : v) out.add(x);
  return out;
}

namespace {

// Gaps tallied by their exact nanoseconds first: a run has tens of millions of gaps but few
// distinct ones, so the values go to Values once each, already in order (nothing to sort).
template <class EachRun>
Values tally_gaps(EachRun&& each_run) {
  std::unordered_map<int64_t, int64_t> count;
  each_run([&](const sim::GapRun& g) { count[g.gap_ns] += g.count; });
  std::vector<std::pair<int64_t, int64_t>> sorted(count.begin(), count.end());
  std::sort(sorted.begin(), sorted.end());
  Values v;
  for (const auto& [ns, n] : sorted) v.add(sim::to_seconds(ns), n);
  return v;
}

}  // namespace

Values itl_values(const std::vector<RequestRow>& rows) {
  return tally_gaps([&](const auto& add) {
    for (const RequestRow& r : rows)
      for (const sim::GapRun& g : r.itl) add(g);
  });
}

Values itl_values(const sim::TokenTallies& tallies) {
  Values v;  // the tally is by gap ascending: nothing to sort
  for (const sim::GapRun& g : tallies.itl) v.add(sim::to_seconds(g.gap_ns), g.count);
  return v;
}

}  // namespace isim::exp
