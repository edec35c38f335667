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
// - An experiment's `slo:` (experiments/spec/slo.h) maps a metric of slo_metrics() (ttft_s, tpot_s,
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
//   arrival rate during the arrivals: queue_diverges (below; `isim plan` judges with it too),
//   over the span from the first arrival + 20% (warm-up, as the plan's default) to the last
//   arrival, at the rate (sessions - 1) / (last - first arrival). A run whose sessions all arrive at once, or with fewer than
//   three samples in that span, is never judged overloaded.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "experiments/spec/slo.h"
#include "sim/metrics.h"

namespace isim::exp {

inline constexpr double kOverloadFraction = 0.05;  // plan's search.divergence default
inline constexpr double kOverloadWarmup = 0.2;     // plan's search.warmup default

// Whether `r` met every limit of `slo` (see above). `slo` must not be empty.
bool meets_slo(const sim::SessionRecord& r, const RunSlo& slo);
// The attainment of `sessions` (limits copied; all zero when `slo` is empty).
sim::SloAttainment slo_attainment(const std::vector<sim::SessionRecord>& sessions,
                                  const RunSlo& slo, double busy_window_s);

// The growth of the queue (waiting + swapped sessions), in sessions per second: the
// least-squares slope over the samples in [from_s, to_s]; 0 with fewer than 3 samples there.
double queue_growth(const std::vector<sim::TimeSample>& ts, double from_s, double to_s);
// True when queue_growth is faster than `fraction` x `rate` sessions per second.
bool queue_diverges(const std::vector<sim::TimeSample>& ts, double from_s, double to_s, double rate,
                    double fraction);

struct Overload {
  bool overloaded = false;
  double growth_per_s = 0;  // the queue's slope over the span
  double rate = 0;          // the measured arrival rate (sessions/s)
};
Overload judge_overload(const std::vector<sim::SessionRecord>& sessions,
                        const std::vector<sim::TimeSample>& timeseries);

}  // namespace isim::exp
