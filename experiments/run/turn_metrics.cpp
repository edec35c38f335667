// Turn goodput, time windows and recovery after a load shift (experiments/run/turn_metrics.h).
#include "experiments/run/turn_metrics.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include <fmt/format.h>

#include "core/input_error.h"

namespace isim::exp {

namespace {

// Nearest-rank statistics through sim::make_stat; < 0 over no values.
sim::Stat stat_of(std::vector<double> v) {
  return sim::make_stat(std::move(v));
}

}  // namespace

bool meets_turn_slo(const sim::TurnRecord& t, const TurnSlo& slo) {
  if (slo.request_ttft_s > 0 && t.ttft_s > slo.request_ttft_s) return false;
  if (slo.itl_max_s > 0 && t.itl_max_s >= 0 && t.itl_max_s > slo.itl_max_s) return false;
  return true;
}

sim::TurnGoodput turn_goodput(const std::vector<sim::TurnRecord>& turns, int64_t trace_turns,
                              const TurnSlo& slo, double busy_window_s) {
  sim::TurnGoodput g;
  if (slo.empty()) return g;
  g.set = true;
  g.turns = trace_turns;
  for (const auto& t : turns) g.met += meets_turn_slo(t, slo) ? 1 : 0;
  const auto met = static_cast<double>(g.met);
  g.share = trace_turns > 0 ? met / static_cast<double>(trace_turns) : 0;
  g.per_s = busy_window_s > 0 ? met / busy_window_s : 0;
  return g;
}

std::vector<sim::WindowStats> time_windows(const std::vector<sim::TurnRecord>& turns,
                                           const std::vector<sim::SessionRecord>& sessions,
                                           double window_s, const TurnSlo& slo) {
  std::vector<sim::WindowStats> out;
  if (!(window_s > 0)) return out;
  double last = 0;
  for (const auto& t : turns) last = std::max(last, t.start_s);
  for (const auto& r : sessions) last = std::max(last, r.arrival_s);
  if (!(last / window_s < kMaxWindows))  // before the windows are allocated
    throw InputError(fmt::format(
        "metrics.window_s: {} s makes more than {:.0f} windows over this run ({} s to the last "
        "turn's start); raise it",
        window_s, kMaxWindows, last));
  const auto n = static_cast<size_t>(std::floor(last / window_s)) + 1;
  auto window_of = [&](double t) {
    return std::min(n - 1, static_cast<size_t>(std::max(0.0, std::floor(t / window_s))));
  };
  std::vector<std::vector<double>> ttft(n), itl(n), latency(n);
  std::vector<int64_t> met(n, 0);
  out.resize(n);
  for (size_t k = 0; k < n; ++k) {
    out[k].start_s = static_cast<double>(k) * window_s;
    out[k].end_s = static_cast<double>(k + 1) * window_s;
  }
  for (const auto& t : turns) {
    const size_t k = window_of(t.start_s);
    ++out[k].turns;
    out[k].output_tokens += t.output_tokens;
    ttft[k].push_back(t.ttft_s);
    if (t.itl_max_s >= 0) itl[k].push_back(t.itl_max_s);
    if (!slo.empty() && meets_turn_slo(t, slo)) ++met[k];
  }
  for (const auto& r : sessions)
    if (const double x = sim::request_latency(r); x >= 0)
      latency[window_of(r.arrival_s)].push_back(x);
  for (size_t k = 0; k < n; ++k) {
    auto& w = out[k];
    if (!ttft[k].empty()) {
      const sim::Stat s = stat_of(std::move(ttft[k]));
      w.ttft_mean = s.mean;
      w.ttft_p50 = s.p50;
      w.ttft_p95 = s.p95;
      w.ttft_p99 = s.p99;
    }
    if (!itl[k].empty()) w.itl_max_p99 = stat_of(std::move(itl[k])).p99;
    if (!latency[k].empty()) w.request_latency_mean = stat_of(std::move(latency[k])).mean;
    if (!slo.empty() && w.turns > 0)
      w.goodput_share = static_cast<double>(met[k]) / static_cast<double>(w.turns);
  }
  return out;
}

double recovery_time(const std::vector<sim::TurnRecord>& turns, double shift_s,
                     double ttft_limit_s) {
  // (start, TTFT) by start: each bucket is one contiguous range.
  std::vector<std::pair<double, double>> by_start;
  by_start.reserve(turns.size());
  for (const auto& t : turns) by_start.emplace_back(t.start_s, t.ttft_s);
  std::sort(by_start.begin(), by_start.end());
  if (by_start.empty()) return -1;
  const double last = by_start.back().first;
  auto good = [&](int64_t k) {
    const double from = shift_s + kRecoveryBucket_s * static_cast<double>(k);
    const double to = from + kRecoveryBucket_s;
    auto lo = std::lower_bound(by_start.begin(), by_start.end(), std::pair{from, -1e300});
    std::vector<double> v;
    for (auto it = lo; it != by_start.end() && it->first < to; ++it) v.push_back(it->second);
    return !v.empty() && stat_of(std::move(v)).p95 <= ttft_limit_s;
  };
  bool prev = false;
  for (int64_t k = 0; shift_s + kRecoveryBucket_s * static_cast<double>(k) <= last; ++k) {
    const bool g = good(k);
    if (prev && g) return kRecoveryBucket_s * static_cast<double>(k - 1);
    prev = g;
  }
  return -1;
}

void add_turn_metrics(sim::Summary& s, const std::vector<sim::TurnRecord>& turns,
                      const std::vector<sim::SessionRecord>& sessions, const TurnSlo& slo,
                      const RunMetricsSpec& m) {
  int64_t trace_turns = 0;
  for (const auto& r : sessions) trace_turns += r.segments;
  s.turn_goodput = turn_goodput(turns, trace_turns, slo, s.busy_window_s);
  s.windows = time_windows(turns, sessions, m.window_s, slo);
  s.recovery_s.clear();
  for (double shift : m.shifts_s)
    s.recovery_s.push_back(recovery_time(turns, shift, slo.request_ttft_s));
}

}  // namespace isim::exp
