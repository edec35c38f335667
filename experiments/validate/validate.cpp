#include "experiments/validate/validate.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "live/integrity.h"

namespace isim::exp {

double MetricError::error() const {
  if (live == 0) return sim == 0 ? 0.0 : std::numeric_limits<double>::infinity();
  return (sim - live) / live;
}

std::vector<MetricError> compare_runs(const sim::Summary& s, const sim::Summary& l) {
  std::vector<MetricError> v;
  auto stat = [&](const std::string& name, const sim::Stat& a, const sim::Stat& b) {
    v.push_back({name + ".mean", a.mean, b.mean});
    v.push_back({name + ".p50", a.p50, b.p50});
    v.push_back({name + ".p99", a.p99, b.p99});
  };
  stat("ttft_s", s.ttft, l.ttft);
  stat("tpot_s", s.tpot, l.tpot);
  stat("normalized_latency_s", s.normalized_latency, l.normalized_latency);
  v.push_back({"throughput_tokens_per_s", s.throughput_tokens_s, l.throughput_tokens_s});
  v.push_back({"iterations", static_cast<double>(s.counters.iterations),
               static_cast<double>(l.counters.iterations)});
  v.push_back({"recomputed_tokens", static_cast<double>(s.counters.recomputed_tokens),
               static_cast<double>(l.counters.recomputed_tokens)});
  return v;
}

std::string first_divergence(const trace::Trace& trace, const std::string& name_a,
                             const cluster::RunResult& a, const std::string& name_b,
                             const cluster::RunResult& b) {
  const auto& ta = a.executor.tokens;
  const auto& tb = b.executor.tokens;
  for (size_t i = 0; i < trace.size() && i < ta.size() && i < tb.size(); ++i) {
    if (a.sessions[i].status != "finished" || b.sessions[i].status != "finished") continue;
    const auto& x = ta[i];
    const auto& y = tb[i];
    const size_t n = std::min(x.size(), y.size());
    size_t p = 0;
    while (p < n && x[p] == y[p]) ++p;
    if (p == n && x.size() == y.size()) continue;
    const live::TokenPlace at = live::place_of(trace[i], static_cast<int64_t>(p));
    auto tok = [](const std::vector<int32_t>& t, size_t k) {
      return k < t.size() ? std::to_string(t[k]) : std::string("(none)");
    };
    return fmt::format(
        "session {} segment {} {} token {} (stream position {}): {} gives {}, {} gives {}",
        trace[i].id, at.segment, at.output ? "output" : "input", at.index, p, name_a, tok(x, p),
        name_b, tok(y, p));
  }
  return "";
}

std::string validation_csv(const std::vector<PolicyValidation>& rows) {
  std::string out = "policy,metric,sim,live,rel_error\n";
  for (const auto& r : rows)
    for (const auto& m : r.metrics)
      out += fmt::format("{},{},{},{},{}\n", r.policy, m.metric, m.sim, m.live, m.error());
  return out;
}

std::string calibration_problem(double mean_abs_error, double target, int attempts) {
  if (!(mean_abs_error > target)) return "";
  return fmt::format(
      "the calibration missed its own target after {} attempt(s): whole-batch validation mean "
      "|error| {:.1f}% > {:.0f}%",
      attempts, 100.0 * mean_abs_error, 100.0 * target);
}

std::string load_problem(const std::string& policy, double load_begin, double load_end,
                         unsigned hardware_threads) {
  const double peak = std::max(load_begin, load_end);
  if (hardware_threads == 0 || !(peak > hardware_threads)) return "";  // 0: unknown
  return fmt::format(
      "{}: the load average during the live run ({} -> {}) exceeded the {} hardware thread(s): "
      "other work shared the CPU, so live times are not the kernels' own",
      policy, load_begin, load_end, hardware_threads);
}

}  // namespace isim::exp
