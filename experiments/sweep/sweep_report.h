// What `isim sweep` shows at its end: a compact table of the runs by policy, and the goodput
// plot (experiments/plots/plot_goodput.py).
//
// Contract:
// - sweep_table(res) is one line per row of results.csv, in run-index order (policies outermost,
//   as the sweep runs them), so the same results give the same text: the policy (with its
//   estimator), each swept value, p99 normalized latency (s/token), with an SLO the share of
//   sessions meeting it (%) and the goodput (sessions/s within it), throughput over the busy
//   window (sessions/s) and `yes` where the run was overloaded. A cell results.csv leaves
//   empty shows as "-". "" when there are no rows.
// - plot_context(e) is the line that names the GPU, model and workload in a plot's title:
//   "GPU · MODEL · workload NAME (FROM trace)", read from the spec's profile.
// - run_goodput_plot runs `python plot_goodput.py CSV OUT.png --context TEXT` (the script at
//   <source dir>/experiments/plots/plot_goodput.py, or $ISIM_PLOT_GOODPUT_SCRIPT) and returns its
//   exit status (127 when it could not start).
#pragma once

#include <string>

#include "experiments/sweep/sweep.h"

namespace isim::exp {

std::string sweep_table(const SweepResults& res);
// Whether any row of results.csv has a goodput (the spec set an SLO).
bool has_goodput(const SweepResults& res);
std::string plot_context(const Experiment& e);
std::string goodput_script_path();
int run_goodput_plot(const std::string& python, const std::string& csv, const std::string& png,
                     const std::string& context);

}  // namespace isim::exp
