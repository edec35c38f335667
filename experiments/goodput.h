// Goodput and overload: how much of a run's work met its service-level objectives, and whether
// its queue grew without bound.
//
// Goodput follows DistServe (Zhong et al., "DistServe: Disaggregating Prefill and Decoding for
// Goodput-optimized Large Language Model Serving", OSDI 2024): the rate of requests served
// within their SLOs; SLO attainment is the share of requests that meet them.
//
// Contract:
// - The unit is the session (one agent task: its segments and the intercepts between them).
//   Its user waits for the whole task, and the latencies the SLO bounds (TTFT, TPOT, resume
//   TTFT, normalized latency, e2e) are per session (sim/metrics.h), so a session, not a
//   segment, is what meets an SLO or misses it.
// - An experiment's `slo:` maps a metric of plan.h's slo_metrics() (ttft_s, tpot_s,
//   resume_ttft_s, normalized_latency_s, e2e_s) to a per-session upper limit (> 0, finite):
//   `slo: {ttft_s: 2, tpot_s: 0.05}`. A session meets the SLO when it finished and each of its
//   metrics is at most its limit; a metric undefined for the session (tpot_s of a session that
//   never decodes twice in a segment, resume_ttft_s of one without a resume) is not held
//   against it. This differs from `isim plan`'s `slo:`, whose METRIC.STAT keys (ttft_s.p99)
//   bound a statistic over the run: a percentile key here is an InputError that says so.
// - attainment: share = met / sessions (every session of the trace: unfinished and skipped
//   ones miss); per_s (goodput) = met / the busy window (sim/metrics.h), 0 when it is empty.
// - Overload: a run is overloaded when its queue (waiting + swapped sessions) grows, by
//   least squares over the time-series samples, faster than kOverloadFraction x the measured
//   arrival rate during the arrivals: plan.h's divergence test, over the span from the first
//   arrival + 20% (warm-up, as the plan's default) to the last arrival, at the rate (sessions
//   - 1) / (last - first arrival). A run whose sessions all arrive at once, or with fewer than
//   three samples in that span, is never judged overloaded.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "core/strict_yaml.h"
#include "sim/metrics.h"

namespace isim::exp {

inline constexpr double kOverloadFraction = 0.05;  // plan's search.divergence default
inline constexpr double kOverloadWarmup = 0.2;     // plan's search.warmup default

// Metric name -> per-session upper limit, in the order given (empty: no SLO).
using RunSlo = std::vector<std::pair<std::string, double>>;

// Reads `slo:` of an experiment (absent: empty). InputError "FILE:LINE: slo.KEY: ..." for an
// unknown metric, a percentile key, a repeated metric or a limit that is not a number > 0.
RunSlo parse_run_slo(const YamlMap& root);
// `slo` as YAML for config.resolved.yaml (a map; null node when empty).
YAML::Node resolved_slo(const RunSlo& slo);

// Whether `r` met every limit of `slo` (see above). `slo` must not be empty.
bool meets_slo(const sim::SessionRecord& r, const RunSlo& slo);
// The attainment of `sessions` (limits copied; all zero when `slo` is empty).
sim::SloAttainment slo_attainment(const std::vector<sim::SessionRecord>& sessions,
                                  const RunSlo& slo, double busy_window_s);

struct Overload {
  bool overloaded = false;
  double growth_per_s = 0;  // the queue's slope over the span
  double rate = 0;          // the measured arrival rate (sessions/s)
};
Overload judge_overload(const std::vector<sim::SessionRecord>& sessions,
                        const std::vector<sim::TimeSample>& timeseries);

}  // namespace isim::exp
