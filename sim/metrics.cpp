#include "sim/metrics.h"

#include <algorithm>
#include <cmath>

namespace isim::sim {

namespace {
double rank(const std::vector<double>& sorted, double p) {
  auto n = static_cast<double>(sorted.size());
  auto k = static_cast<size_t>(std::max(1.0, std::ceil(p / 100.0 * n)));
  return sorted[std::min(k, sorted.size()) - 1];
}
}  // namespace

Stat make_stat(std::vector<double> v) {
  Stat s;
  s.n = static_cast<int64_t>(v.size());
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  // Sorted summation: the mean does not depend on session order.
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(v.size());
  s.p50 = rank(v, 50);
  s.p90 = rank(v, 90);
  s.p99 = rank(v, 99);
  s.max = v.back();
  return s;
}

Summary summarize(const std::vector<SessionRecord>& sessions, const Counters& c,
                  const WasteBreakdown& w, int64_t gpu_blocks, int64_t cpu_blocks,
                  int64_t extrapolations, std::vector<double> turn_ttfts) {
  Summary s;
  s.sessions = static_cast<int64_t>(sessions.size());
  std::vector<double> ttft, tpot, e2e, norm, resume;
  double first_arrival = 0, last_finish = 0;
  bool any = false;
  int64_t tokens = 0;
  for (const auto& r : sessions) {
    if (r.status != "finished") {
      ++s.skipped;
      continue;
    }
    ++s.finished;
    if (!any || r.arrival_s < first_arrival) first_arrival = r.arrival_s;
    last_finish = any ? std::max(last_finish, r.finish_s) : r.finish_s;
    any = true;
    tokens += r.output_tokens;
    if (r.ttft_s >= 0) ttft.push_back(r.ttft_s);
    if (r.tpot_s >= 0) tpot.push_back(r.tpot_s);
    if (r.resume_ttft_s >= 0) resume.push_back(r.resume_ttft_s);
    e2e.push_back(r.e2e_s);
    if (r.normalized_latency_s >= 0) norm.push_back(r.normalized_latency_s);
  }
  s.makespan_s = any ? last_finish - first_arrival : 0;
  if (s.makespan_s > 0) {
    s.throughput_sessions_s = static_cast<double>(s.finished) / s.makespan_s;
    s.throughput_tokens_s = static_cast<double>(tokens) / s.makespan_s;
  }
  s.ttft = make_stat(std::move(ttft));
  s.tpot = make_stat(std::move(tpot));
  s.e2e = make_stat(std::move(e2e));
  s.normalized_latency = make_stat(std::move(norm));
  s.resume_ttft = make_stat(std::move(resume));
  s.turn_ttft = make_stat(std::move(turn_ttfts));
  s.counters = c;
  s.waste = w;
  s.gpu_blocks = gpu_blocks;
  s.cpu_blocks = cpu_blocks;
  s.extrapolations = extrapolations;
  return s;
}

}  // namespace isim::sim
