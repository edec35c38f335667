// The simulations of a plan (experiments/plan.h): the workload of one run, and one judged run of
// a candidate on one replica (a capacity probe) or on a fleet behind a router (a fleet check).
//
// Contract:
// - `make_workload` gives the trace of one run at `rate` with `seed`: ceil(rate x window_s)
//   sessions with Poisson arrivals, or the trace's own arrivals scaled so that the mean gap is
//   1/rate; plus the measured span of arrivals and the drain deadline.
// - `run_judged` simulates `replicas` replicas of the candidate's deployment, each with its own
//   executor and policy instance, behind a fresh instance of `router` (nullptr: a cluster of
//   one, where nothing is routed), stops a run still busy at the drain deadline, and judges it
//   with judge_run. Equal arguments give equal verdicts.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "experiments/plan.h"
#include "experiments/run.h"

namespace isim::exp {

struct Workload {
  Inputs in;
  double from_s = 0, to_s = 0;  // the measured span of arrivals
  double deadline_s = 0;        // a run still busy after this is cut
};

Workload make_workload(Experiment e, const SearchSpec& s, double rate, uint64_t seed);

Verdict run_judged(const PlanSpec& p, const Candidate& c, const RouterChoice* router,
                   int64_t replicas, double rate, uint64_t seed);

// Mean decoded tokens per session of the workload at the peak rate, first seed; `notes` gets
// what the trace importers reported.
double output_tokens_per_session(const PlanSpec& p, std::vector<std::string>& notes);

}  // namespace isim::exp
