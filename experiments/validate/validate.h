// Validation: one experiment run twice per policy, by the `sim` executor on its profile and by
// a live executor, and the simulator's fidelity read off the difference.
//
// Contract:
// - validation_metrics lists, in a fixed order, the metrics compared: mean/p50/p99 TTFT, TPOT
//   and normalized latency, throughput (tokens/s), iteration count and recomputed tokens.
//   relative error = (sim - live) / live (0 when both are 0; infinite when only live is 0).
// - first_divergence compares two runs' token streams session by session (sessions unfinished
//   in either run are skipped) and names the first differing token by session, segment and
//   position within that segment's input or outputs; "" when they agree.
// - validation_csv: header `policy,metric,sim,live,rel_error`, one row per policy and metric,
//   numbers in shortest round-trip form.
// - Noise: a comparison is not to be trusted when the calibration missed its own target after
//   its attempts (calibration_problem: mean |error| > target), or when the host's load average
//   at the start or end of a live run exceeded its hardware threads (load_problem: other work
//   shared the CPU, so live times are not the kernels' own). Each returns "" when there is no
//   problem, else one sentence naming the figures; isim validate exits 1 on any, unless
//   --accept-noisy.
#pragma once

#include <string>
#include <vector>

#include "cluster/simulation.h"
#include "traces/session.h"

namespace isim::exp {

struct MetricError {
  std::string metric;
  double sim = 0, live = 0;
  double error() const;
};

std::vector<MetricError> compare_runs(const sim::Summary& sim, const sim::Summary& live);

std::string first_divergence(const trace::Trace& trace, const std::string& name_a,
                             const cluster::RunResult& a, const std::string& name_b,
                             const cluster::RunResult& b);

struct PolicyValidation {
  std::string policy;
  std::vector<MetricError> metrics;
};
std::string validation_csv(const std::vector<PolicyValidation>& rows);

std::string calibration_problem(double mean_abs_error, double target, int attempts);
std::string load_problem(const std::string& policy, double load_begin, double load_end,
                         unsigned hardware_threads);

}  // namespace isim::exp
