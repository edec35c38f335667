#include "experiments/run/run_views.h"

#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include "core/atomic_file.h"
#include "core/cli_args.h"
#include "core/input_error.h"
#include "core/out_path.h"
#include "experiments/run/run_script.h"

namespace isim::exp {

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace {

std::string run_plot_script() {
  if (const char* p = std::getenv("ISIM_PLOT_RUN_SCRIPT"); p && *p) return p;
  return ISIM_PLOT_RUN_SCRIPT_DEFAULT;
}

}  // namespace

void add_run_view_options(po::options_description& opts) {
  opts.add_options()("trace-events", po::value<std::string>(),
                     "write the run's events as a Chrome trace (Perfetto, chrome://tracing) to "
                     "FILE.json; several policies: FILE.POLICY.json")(
      "trace-events-limit", po::value<std::string>(),
      fmt::format("at most N events in that trace (default {}); past it the file is cut short "
                  "and says so",
                  kDefaultTraceEventsLimit)
          .c_str())("plot", po::bool_switch(),
                    "draw timeseries.png (queues, KV use by tier, batch tokens) in each policy's "
                    "run folder");
  add_metrics_options(opts);
}

RunViews run_views_from(const po::variables_map& vm) {
  RunViews v;
  if (vm.count("trace-events")) {
    v.trace_events = vm["trace-events"].as<std::string>();
    if (v.trace_events.empty()) throw InputError("--trace-events: expected a file name, got ''");
  }
  v.limit =
      flag_value<int64_t>(vm, "trace-events-limit", kDefaultTraceEventsLimit,
                          fmt::format("a whole number from 1 to {} (events)", kMaxTraceEventsLimit),
                          [](int64_t n) { return n >= 1 && n <= kMaxTraceEventsLimit; });
  if (vm.count("trace-events-limit") && v.trace_events.empty())
    throw InputError(
        "--trace-events-limit: needs --trace-events FILE.json (there is no trace "
        "to limit)");
  v.plot = vm.count("plot") && vm["plot"].as<bool>();
  v.metrics = metrics_out_from(vm);
  return v;
}

void check_run_views(RunViews& v) {
  if (!v.trace_events.empty()) check_flag_file(v.trace_events, "--trace-events");
  check_metrics_out(v.metrics);
  if (!v.plot) return;
  std::string tried;
  v.python = find_plot_python(&tried);
  if (v.python.empty())
    throw InputError(fmt::format(
        "--plot: no python3 with matplotlib (tried {}; install Debian's python3-matplotlib or "
        "set ISIM_PYTHON); nothing was run",
        tried));
}

std::unique_ptr<EventTrace> event_trace_for(const RunViews& v, const Experiment& e) {
  if (v.trace_events.empty()) return nullptr;
  return std::make_unique<EventTrace>(replica_names(e), v.limit);
}

std::string run_plot_title(const Experiment& e, const Inputs& in, const PolicySpec& p) {
  const std::string workload =
      e.trace.path.empty() ? e.trace.from + " generator"
                           : e.trace.from + " trace " + fs::path(e.trace.path).filename().string();
  const std::string arrivals = e.arrival.process == "poisson"
                                   ? fmt::format("Poisson {:g} sessions/s", e.arrival.rate)
                                   : "arrivals: " + e.arrival.process;
  const std::string fleet =
      e.cluster.given ? fmt::format(", {} replicas", e.cluster.replicas()) : "";
  return fmt::format("{} · {} · {}\n{} · policy {}{}", in.profile.device.name,
                     in.profile.model.name, workload, arrivals, p.name, fleet);
}

void finish_run_views(const RunViews& v, const Experiment& e, const Inputs& in, const PolicySpec& p,
                      const std::string& dir, size_t samples, EventTrace* trace) {
  if (trace) {
    const std::string path = event_trace_path(v.trace_events, p.name, e.policies.size());
    nlohmann::ordered_json other;
    other["generator"] = "isim run --trace-events";
    other["clock"] = "simulated; ts and dur in microseconds";
    other["experiment"] = e.name;
    other["policy"] = p.name;
    other["seed"] = e.seed;
    other["replicas"] = replica_names(e).size();
    write_file_atomic(path, trace->text(other));
    fmt::print(stderr, "{}: {} trace events -> {}\n", p.name, trace->events(), path);
    if (trace->truncated())
      fmt::print(stderr,
                 "warning: {}: the event trace stopped at --trace-events-limit {} events; {} "
                 "covers the start of the run only\n",
                 p.name, trace->limit(), path);
  }
  if (!v.plot) return;
  if (samples == 0) {
    fmt::print(stderr,
               "warning: {}: --plot: timeseries.csv has no samples (the run lasted less than "
               "metrics.timeseries_interval_s = {} s): no plot; a smaller interval gives some, "
               "e.g. -p metrics.timeseries_interval_s={:g}\n",
               p.name, e.engine.timeseries_interval_s, e.engine.timeseries_interval_s / 10);
    return;
  }
  const std::string csv = (fs::path(dir) / "timeseries.csv").string();
  const std::string png = (fs::path(dir) / "timeseries.png").string();
  const int rc =
      run_script({v.python, run_plot_script(), csv, png, "--title", run_plot_title(e, in, p)},
                 /*quiet_stdout=*/true, /*quiet_stderr=*/false);
  if (rc != 0)
    throw InputError(
        fmt::format("{}: {} {} failed (exit {})", png, v.python, run_plot_script(), rc));
  fmt::print(stderr, "{}: plot -> {}\n", p.name, png);
}

}  // namespace isim::exp
