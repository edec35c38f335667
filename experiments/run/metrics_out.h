// `isim run --metrics FILE.om [--metrics-epoch S]`: each policy's run as an OpenMetrics file
// under vLLM's metric names (experiments/run/openmetrics.h).
//
// Contract:
// - `add_metrics_options` declares the two flags; `metrics_out_from` reads them (both in
//   metrics_flags.cpp, in the isim binary). The epoch is
//   the Unix time (whole seconds, 0 to kMaxMetricsEpoch) that simulated time 0 maps to:
//   default 0, so timestamps are the simulated seconds. InputError naming the flag: an empty
//   file name, an epoch that is not such a number, an epoch without --metrics.
// - `check_metrics_out` runs before any simulation (nothing written yet): the file's folder
//   must exist and the file be writable and not a folder (core/out_path.h check_out_file).
// - With several policies each gets its own file, `metrics_path`: FILE.POLICY.om (the policy's
//   name inserted before a final ".om"; FILE.POLICY when FILE does not end in ".om"); with one
//   policy, FILE itself.
// - `write_metrics_out` (nothing without --metrics) writes one policy's file atomically
//   (core/atomic_file.h), in pieces, and says on stderr where and how big it is. Its series'
//   labels: each replica's model (its group's profile) and engine (index within its data-parallel
//   group), from the spec as run_policy builds the fleet; the token histograms reach up to the
//   trace's longest context.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "cluster/run_result.h"
#include "experiments/run/openmetrics.h"
#include "experiments/run/run.h"

namespace isim::exp {

inline constexpr int64_t kMaxMetricsEpoch = 4102444800;  // 2100-01-01T00:00:00Z

struct MetricsOut {
  std::string file;  // "" when not asked for
  int64_t epoch_s = 0;
};

void add_metrics_options(boost::program_options::options_description& opts);
MetricsOut metrics_out_from(const boost::program_options::variables_map& vm);
void check_metrics_out(const MetricsOut& m);
std::string metrics_path(const std::string& file, const std::string& policy, size_t policies);
// Each replica's labels, in the order run_policy builds the fleet.
std::vector<OmReplica> om_replicas(const Experiment& e, const Inputs& in);
void write_metrics_out(const MetricsOut& m, const Experiment& e, const Inputs& in,
                       const PolicySpec& p, const cluster::RunResult& r);

}  // namespace isim::exp
