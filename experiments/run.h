// Running an experiment: prepare its inputs once (trace with arrivals, profile), then simulate
// each policy on them.
//
// Contract:
// - `prepare` loads and validates everything the runs need; all bad input surfaces here as
//   InputError, before any simulation starts.
// - `run_policy` is deterministic: the same Inputs and PolicySpec give identical results.
#pragma once

#include <string>
#include <vector>

#include "experiments/experiment.h"
#include "sim/profile.h"
#include "cluster/simulation.h"
#include "traces/session.h"

namespace isim::exp {

struct Inputs {
  trace::Trace trace;
  sim::Profile profile;
  std::string trace_fingerprint;   // FNV-1a 64 of the trace as native JSONL (after arrivals)
  std::vector<std::string> notes;  // what importers reported (dropped intercepts, ...)
};

// `with_profile` false leaves Inputs::profile empty (isim validate --calibrate-first measures it).
Inputs prepare(const Experiment& e, bool with_profile = true);

cluster::RunResult run_policy(const Experiment& e, const Inputs& in, const PolicySpec& p,
                          bool check_invariants = false);

}  // namespace isim::exp
