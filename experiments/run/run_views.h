// Views into one `isim run`: its event trace (--trace-events FILE.json, --trace-events-limit N;
// experiments/run/event_trace.h) and its time-series plot (--plot: timeseries.png in each policy's
// run folder, drawn by experiments/plots/plot_run.py from the run's timeseries.csv).
//
// Contract:
// - `add_run_view_options` declares the three flags; `run_views_from` reads them: the limit is a
//   whole number from 1 to kMaxTraceEventsLimit (InputError naming --trace-events-limit
//   otherwise), and only with --trace-events (a limit without it is an InputError too).
// - `check_run_views` runs before any simulation: the trace file's folder must exist, the file
//   be writable and not a folder (core/out_path.h check_out_file), and --plot
//   needs a python3 with matplotlib (InputError saying how to get one). So a long run never ends
//   in an error its flags could have shown at once.
// - `event_trace_for` gives the recorder for one policy's run (null without --trace-events);
//   `finish_run_views` writes its file atomically (core/atomic_file.h), prints where it
//   went (and a one-line warning on stderr when it was truncated), then draws the plot from
//   the run's `samples` time-series rows (none: a warning saying how to get some, no plot); a
//   plot script that fails is an InputError naming the PNG.
// - --metrics FILE.om and --metrics-epoch S (experiments/run/metrics_out.h) are declared, read
//   and checked with these; run_experiment writes each policy's file after its run views.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <boost/program_options.hpp>

#include "experiments/run/event_trace.h"
#include "experiments/run/metrics_out.h"
#include "experiments/run/run.h"

namespace isim::exp {

struct RunViews {
  std::string trace_events;  // "" when not asked for
  int64_t limit = kDefaultTraceEventsLimit;
  bool plot = false;
  std::string python;  // with --plot: the python3 that has matplotlib
  MetricsOut metrics;  // --metrics FILE.om (experiments/run/metrics_out.h)
};

void add_run_view_options(boost::program_options::options_description& opts);
RunViews run_views_from(const boost::program_options::variables_map& vm);
void check_run_views(RunViews& v);

std::unique_ptr<EventTrace> event_trace_for(const RunViews& v, const Experiment& e);
void finish_run_views(const RunViews& v, const Experiment& e, const Inputs& in, const PolicySpec& p,
                      const std::string& dir, size_t samples, EventTrace* trace);

// The plot's title: GPU, model, workload, arrivals and policy (and the fleet's size).
std::string run_plot_title(const Experiment& e, const Inputs& in, const PolicySpec& p);

}  // namespace isim::exp
