// Goodput (DistServe, OSDI 2024) and overload of a run (experiments/goodput.h).
#include "experiments/goodput.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/input_error.h"
#include "experiments/plan.h"

namespace isim::exp {

namespace {

std::string metric_names() {
  std::string s;
  for (const auto& m : slo_metrics()) s += (s.empty() ? "" : ", ") + m.name;
  return s;
}

const SloMetric* find_metric(const std::string& name) {
  for (const auto& m : slo_metrics())
    if (m.name == name) return &m;
  return nullptr;
}

}  // namespace

RunSlo parse_run_slo(const YamlMap& root) {
  RunSlo out;
  if (!root.has("slo")) return out;
  const YAML::Node n = root.value("slo");
  const std::string& file = root.file();
  const std::string percentile_note =
      ": a run's slo: gives each session's limit (METRIC: LIMIT, e.g. ttft_s: 2); a statistic "
      "over the run such as ttft_s.p99 is a target of isim plan";
  if (!n.IsMap())
    throw InputError(yaml_where(file, n, "slo") +
                     ": expected a map of METRIC to a per-session upper limit, e.g. "
                     "{ttft_s: 2, tpot_s: 0.05}; METRIC one of " + metric_names());
  for (const auto& kv : n) {
    const std::string name = yaml_key(kv.first, file, "slo");
    const std::string key = "slo." + name;
    if (kv.second.IsMap() || name.find('.') != std::string::npos)
      throw InputError(yaml_where(file, kv.first, key) + percentile_note);
    if (!find_metric(name))
      throw InputError(yaml_where(file, kv.first, key) + ": unknown SLO metric '" + name +
                       "'; valid: " + metric_names());
    for (const auto& [k, v] : out)
      if (k == name) throw InputError(yaml_where(file, kv.first, key) + ": listed twice");
    const auto v = read_as<double>(kv.second, file, key, "an upper limit in the metric's unit");
    if (!(v > 0) || !std::isfinite(v))
      throw InputError(yaml_where(file, kv.second, key) +
                       ": must be a finite upper limit > 0 in the metric's unit");
    out.emplace_back(name, v);
  }
  return out;
}

YAML::Node resolved_slo(const RunSlo& slo) {
  YAML::Node y;
  for (const auto& [k, v] : slo) y[k] = fmt::format("{}", v);
  return y;
}

bool meets_slo(const sim::SessionRecord& r, const RunSlo& slo) {
  if (r.status != "finished") return false;
  for (const auto& [name, limit] : slo) {
    const double x = find_metric(name)->value(r);
    if (x >= 0 && x > limit) return false;  // < 0: undefined for this session
  }
  return true;
}

sim::SloAttainment slo_attainment(const std::vector<sim::SessionRecord>& sessions,
                                  const RunSlo& slo, double busy_window_s) {
  sim::SloAttainment a;
  if (slo.empty()) return a;
  a.limits = slo;
  for (const auto& r : sessions) a.met += meets_slo(r, slo) ? 1 : 0;
  const auto met = static_cast<double>(a.met);
  a.share = sessions.empty() ? 0 : met / static_cast<double>(sessions.size());
  a.per_s = busy_window_s > 0 ? met / busy_window_s : 0;
  return a;
}

Overload judge_overload(const std::vector<sim::SessionRecord>& sessions,
                        const std::vector<sim::TimeSample>& timeseries) {
  Overload o;
  if (sessions.size() < 2) return o;
  double first = sessions.front().arrival_s, last = first;
  for (const auto& r : sessions) {
    first = std::min(first, r.arrival_s);
    last = std::max(last, r.arrival_s);
  }
  if (!(last > first)) return o;
  o.rate = static_cast<double>(sessions.size() - 1) / (last - first);
  o.growth_per_s = queue_growth(timeseries, first + kOverloadWarmup * (last - first), last);
  o.overloaded = o.growth_per_s > kOverloadFraction * o.rate;
  return o;
}

}  // namespace isim::exp
