// The experiment `isim run` runs, from its flags: a spec file with -p overrides (and --rate,
// --seed as its keys), or the flag form (--trace, --profile, --policy, ...) built into a spec.
// The verb (experiments/cli/cli_run.cpp) checks which form was given; this builds it.
//
// Contract: load_run_experiment returns the experiment and the keys that name its default
// output folder (default_out_dir).
// - With `spec`: load_experiment(spec, overrides, flags), --rate R as arrival.process=poisson
//   and arrival.rate=R and --seed S as seed=S, their errors naming "--rate R" / "--seed S";
//   the folder keys are the overrides, then those flag overrides.
// - Without: the spec {name: the trace file's stem, seed, trace: {from, path}, arrival: poisson
//   at --rate (replay without it), profile, policy, engine.scheduler, executor}, then the
//   overrides; errors name the flag as typed: "--policy NAME: policy: ...", "--from F",
//   "--trace T", "--profile P", "--scheduler S", "--executor E" (their text taken as it is),
//   "--rate R" and "--seed S" (their text parsed as YAML), "-p KEY=V"; only keys no flag set
//   say "command line"; the folder keys are policy=, rate=, seed=, scheduler=, executor= (those
//   given), then the overrides.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "experiments/spec/experiment.h"

namespace isim::exp {

struct RunSpecFlags {
  std::string spec;                    // EXPERIMENT.yaml; "" = the flag form
  std::vector<std::string> overrides;  // -p / --add, in order
  std::optional<std::string> rate, seed;
  // The flag form's; each set only when given.
  std::string trace, profile, policy;
  std::optional<std::string> from, scheduler, executor;
};

struct RunExperiment {
  Experiment experiment;
  std::vector<std::string> out_keys;  // what names the default output folder
};

RunExperiment load_run_experiment(const RunSpecFlags& f);

}  // namespace isim::exp
