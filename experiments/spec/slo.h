// Service-level objectives as specs name them: the per-session metrics an SLO may bound, the
// statistics `isim plan` bounds over a run, and an experiment's own `slo:` (per-session limits).
//
// Contract:
// - slo_metrics(): e2e_s, normalized_latency_s, resume_ttft_s, tpot_s, ttft_s (name order), each
//   with a one-line description and its value for a session (< 0: undefined for it).
// - slo_stats(): mean, p50, p90, p95, p99, max; slo_stat reads one of them from a Stat.
// - parse_run_slo reads an experiment's `slo:` (absent: empty): METRIC -> a finite limit > 0.
//   InputError "FILE:LINE: slo.KEY: ..." for an unknown metric, a percentile key (a target of
//   `isim plan`, said so), a repeated metric or a limit that is not a number > 0.
// - Turn-level keys of the same `slo:` (turn_slo_metrics(): itl_max_s, request_ttft_s) bound
//   each turn (one LLM request, sim/turn_metrics.h): parse_run_slo reads them like the others,
//   take_turn_slo moves them out into a TurnSlo. A turn meets it when each limit given holds.
// - slo_limit_problem is the one bound on every SLO limit (a run's and a plan's): a finite
//   number in (0, kMaxSloLimit] in the metric's unit; "" when the value is within it.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "core/strict_yaml.h"
#include "sim/metrics.h"

namespace isim::exp {

// The largest SLO limit: the limit on a time (traces/limits.h), about 126 years.
inline constexpr double kMaxSloLimit = 4e9;
std::string slo_limit_problem(double v);

// SLO metrics: per-session latencies an SLO may bound, each with a one-line description.
struct SloMetric {
  std::string name;  // e.g. ttft_s
  std::string description;
  double (*value)(const sim::SessionRecord&);  // < 0: undefined for this session
};
const std::vector<SloMetric>& slo_metrics();
// The metric named `name`, or nullptr.
const SloMetric* find_metric(const std::string& name);
const std::vector<std::string>& slo_stats();  // mean, p50, p90, p99, max

struct Slo {
  std::string key;    // METRIC.STAT, e.g. ttft_s.p99
  size_t metric = 0;  // index into slo_metrics(), or into turn_slo_metrics() when `turn`
  std::string stat;
  double limit = 0;
  bool turn = false;  // a statistic over turns (request_ttft_s, itl_max_s), not sessions
};
// The statistic `slo.stat` of `st`.
double slo_stat(const sim::Stat& st, const std::string& stat);

// Metric name -> per-session upper limit, in the order given (empty: no SLO).
using RunSlo = std::vector<std::pair<std::string, double>>;

// Reads `slo:` of an experiment (absent: empty). InputError "FILE:LINE: slo.KEY: ..." for an
// unknown metric, a percentile key, a repeated metric or a limit that is not a number > 0.
RunSlo parse_run_slo(const YamlMap& root);
// `slo` as YAML for config.resolved.yaml (a map; null node when empty).
YAML::Node resolved_slo(const RunSlo& slo);

// Turn-level limits (0: not given).
struct TurnSlo {
  double request_ttft_s = 0;  // a turn's first token - its start
  double itl_max_s = 0;       // a turn's longest gap between output tokens
  bool empty() const { return request_ttft_s <= 0 && itl_max_s <= 0; }
};
const std::vector<std::string>& turn_slo_metrics();  // itl_max_s, request_ttft_s
// Removes the turn-level keys from `slo` and returns them.
TurnSlo take_turn_slo(RunSlo& slo);
// Adds `t`'s limits to `y` (resolved_slo's map).
void add_resolved_turn_slo(YAML::Node& y, const TurnSlo& t);

}  // namespace isim::exp
