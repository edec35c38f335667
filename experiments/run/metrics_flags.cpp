// isim run's --metrics and --metrics-epoch flags (metrics_out.h); beside run_views.cpp in the isim
// binary, which links Boost.Program_options.
#include <fmt/format.h>

#include "core/cli_args.h"
#include "core/input_error.h"
#include "experiments/run/metrics_out.h"

namespace isim::exp {

namespace po = boost::program_options;

void add_metrics_options(po::options_description& opts) {
  opts.add_options()("metrics", po::value<std::string>(),
                     "write the run's time series as OpenMetrics under vLLM's metric names "
                     "(Prometheus, Grafana) to FILE.om; several policies: FILE.POLICY.om")(
      "metrics-epoch", po::value<std::string>(),
      "Unix seconds that simulated time 0 maps to in that file (default 0)");
}

MetricsOut metrics_out_from(const po::variables_map& vm) {
  MetricsOut m;
  if (vm.count("metrics")) {
    m.file = vm["metrics"].as<std::string>();
    if (m.file.empty()) throw InputError("--metrics: expected a file name, got ''");
  }
  m.epoch_s = flag_value<int64_t>(
      vm, "metrics-epoch", 0,
      fmt::format("a whole number of seconds from 0 to {} (Unix time)", kMaxMetricsEpoch),
      [](int64_t s) { return s >= 0 && s <= kMaxMetricsEpoch; });
  if (vm.count("metrics-epoch") && m.file.empty())
    throw InputError(
        "--metrics-epoch: needs --metrics FILE.om (there is no metrics file to "
        "date)");
  return m;
}

}  // namespace isim::exp
