// SLO metrics and an experiment's `slo:` (experiments/spec/slo.h).
#include "experiments/spec/slo.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/input_error.h"

namespace isim::exp {

namespace {

std::string metric_names() {
  std::string s;
  for (const auto& m : slo_metrics()) s += (s.empty() ? "" : ", ") + m.name;
  return s;
}

}  // namespace

std::string slo_limit_problem(double v) {
  if (v > 0 && v <= kMaxSloLimit) return "";  // false for NaN
  return fmt::format(
      "must be a finite upper limit in (0, {}] in the metric's unit (the limit on "
      "a time, about 126 years), got {}",
      kMaxSloLimit, v);
}

const SloMetric* find_metric(const std::string& name) {
  for (const auto& m : slo_metrics())
    if (m.name == name) return &m;
  return nullptr;
}

const std::vector<SloMetric>& slo_metrics() {
  static const std::vector<SloMetric> v = {
      {"e2e_s", "end-to-end: finish - arrival, intercepts included (s)",
       [](const sim::SessionRecord& r) { return r.e2e_s; }},
      {"normalized_latency_s",
       "(finish - arrival - intercept time) / (decoded + returned tokens) (s/token)",
       [](const sim::SessionRecord& r) { return r.normalized_latency_s; }},
      {"resume_ttft_s", "first token after each resume - intercept end, mean per session (s)",
       [](const sim::SessionRecord& r) { return r.resume_ttft_s; }},
      {"tpot_s", "time per output token after the first (s)",
       [](const sim::SessionRecord& r) { return r.tpot_s; }},
      {"ttft_s", "time to first token: first output - arrival (s)",
       [](const sim::SessionRecord& r) { return r.ttft_s; }},
  };
  return v;
}

const std::vector<std::string>& slo_stats() {
  static const std::vector<std::string> v = {"mean", "p50", "p90", "p95", "p99", "max"};
  return v;
}

double slo_stat(const sim::Stat& st, const std::string& stat) {
  if (stat == "mean") return st.mean;
  if (stat == "p50") return st.p50;
  if (stat == "p90") return st.p90;
  if (stat == "p95") return st.p95;
  if (stat == "p99") return st.p99;
  return st.max;
}

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
                     "{ttft_s: 2, tpot_s: 0.05}; METRIC one of " +
                     metric_names());
  for (const auto& kv : n) {
    const std::string name = yaml_key(kv.first, file, "slo");
    const std::string key = "slo." + name;
    if (kv.second.IsMap() || name.find('.') != std::string::npos)
      throw InputError(yaml_where(file, kv.first, key) + percentile_note);
    const auto& turn = turn_slo_metrics();
    if (!find_metric(name) && std::find(turn.begin(), turn.end(), name) == turn.end())
      throw InputError(yaml_where(file, kv.first, key) + ": unknown SLO metric '" + name +
                       "'; valid: " + metric_names() + "; per turn: itl_max_s, request_ttft_s");
    for (const auto& [k, v] : out)
      if (k == name) throw InputError(yaml_where(file, kv.first, key) + ": listed twice");
    const auto v = read_as<double>(kv.second, file, key, "an upper limit in the metric's unit");
    if (const std::string why = slo_limit_problem(v); !why.empty())
      throw InputError(yaml_where(file, kv.second, key) + ": " + why);
    out.emplace_back(name, v);
  }
  return out;
}

YAML::Node resolved_slo(const RunSlo& slo) {
  YAML::Node y;
  for (const auto& [k, v] : slo) y[k] = fmt::format("{}", v);
  return y;
}

const std::vector<std::string>& turn_slo_metrics() {
  static const std::vector<std::string> v = {"itl_max_s", "request_ttft_s"};
  return v;
}

TurnSlo take_turn_slo(RunSlo& slo) {
  TurnSlo t;
  std::erase_if(slo, [&t](const std::pair<std::string, double>& kv) {
    double* limit = kv.first == "request_ttft_s" ? &t.request_ttft_s
                    : kv.first == "itl_max_s"    ? &t.itl_max_s
                                                 : nullptr;
    if (limit) *limit = kv.second;
    return limit != nullptr;
  });
  return t;
}

void add_resolved_turn_slo(YAML::Node& y, const TurnSlo& t) {
  if (t.request_ttft_s > 0) y["request_ttft_s"] = fmt::format("{}", t.request_ttft_s);
  if (t.itl_max_s > 0) y["itl_max_s"] = fmt::format("{}", t.itl_max_s);
}

}  // namespace isim::exp
