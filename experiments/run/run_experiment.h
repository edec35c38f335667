// What `isim run` does once its flags are read and the experiment is loaded: every policy
// run, written and reported, in the experiment's order.
//
// Contract: the caller prepares the inputs once (prepare) before it makes OUT, so that a
// refusal while reading the trace or a profile leaves no folder; run_experiment prints their
// notes and warnings to stderr, then per policy runs it (its replicas on `threads` threads, with
// a note saying how that went when threads > 1) (with the event trace and progress line
// `views` and `progress` ask for), writes OUT/POLICY (write_run), prints where it went, finishes
// the run's views, warns about extrapolation and overload, and calls `after_fleet_policy(DIR)`
// after a fleet of more than one replica (the replicas plot). The interrupt note always says which
// folders are complete. The report has one summary row and one fleet row per policy, and the number
// of sessions skipped (their errors printed once, under the first policy). print_run_report prints
// the summary table to stdout (then the fleet table for a spec with `cluster:`, and the
// disaggregation table for a disaggregated fleet); with skipped sessions it prints an error to
// stderr and returns 2, else 0: isim run's exit code.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "experiments/run/outputs.h"
#include "experiments/run/progress.h"
#include "experiments/run/run_views.h"

namespace isim::exp {

struct RunReport {
  std::vector<TableRow> rows;
  std::vector<FleetRow> fleet;
  size_t skipped = 0;  // sessions that can never fit (the last policy's count)
};

RunReport run_experiment(const Experiment& e, const Inputs& in, const std::string& out,
                         cluster::Checks checks, const RunViews& views,
                         const ProgressOptions& progress,
                         const std::function<void(const std::string& dir)>& after_fleet_policy,
                         int32_t threads = 1);

int print_run_report(const Experiment& e, const RunReport& r);

}  // namespace isim::exp
