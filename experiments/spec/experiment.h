// Experiment: one YAML file that says what to run: a trace and its arrivals, a profile, the
// engine's settings, an executor and one or more policies.
//
// Contract:
// - Every key is checked; unknown keys and bad values are InputError("FILE:LINE: key: reason").
// - Relative paths are resolved against the experiment file's folder, so a spec runs the same
//   from any working directory.
// - `-p key=value` overrides are applied to the YAML before it is checked, so an override is
//   validated exactly like the file (dotted keys: `arrival.rate=3`, `engine.scheduler=chunked`,
//   `policy=swap`, `policy.estimator=history`, `executor.threads=2`, `cluster.roles.prefill=6`,
//   `cluster.roles=4:12`, `cluster.planner=online`, `cluster.split.threshold_tokens=256`).
//   A key below one given as a scalar shorthand (policy, executor, cluster.router and
//   cluster.planner: a name; cluster.split: a mode) first turns it into {name: NAME} or
//   {mode: MODE}.
//   An error about a value (or key) an override set names the override: "-p arrival.rate=-1:
//   arrival.rate: must be > 0 ...", not the spec's file and line.
// - `resolved()` is the complete spec with every default filled in; it is what
//   config.resolved.yaml records, and loading it back gives the same experiment.
// - `slo:` (optional) gives per-session latency limits; each run then reports its SLO
//   attainment and goodput (experiments/run/goodput.h).
// - A spec may carry `sweep:` (dotted override path -> list of scalar values) and `plot:`; those
//   are read here but run only by `isim sweep` (experiments/sweep/sweep.h). `load_experiment`,
//   which `isim run` uses, rejects a spec that has either.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "core/strict_yaml.h"
#include "experiments/spec/cluster_spec.h"
#include "experiments/spec/metrics_spec.h"
#include "experiments/spec/slo.h"
#include "policies/builtin.h"
#include "sim/engine_config.h"
#include "sim/executor.h"
#include "traces/arrival.h"
#include "traces/workload.h"

namespace isim::exp {

// The shortest metrics.timeseries_interval_s a spec may give (run.h caps the samples too).
inline constexpr double kMinTimeSeriesInterval_s = 0.001;

using TraceSpec = trace::WorkloadSpec;  // `trace:` (traces/workload.h shapes it)

struct PolicySpec {
  std::string name;
  policy::PolicyParams params;
};

// One entry of `sweep.variants` (experiments/spec/sweep_variants.h): a named bundle of overrides.
struct SweepVariant {
  std::string name;
  std::vector<std::pair<std::string, std::string>> set;  // dotted key -> YAML flow text, in order
  std::vector<int> lines;  // 1-based line of each `set` key (0 = unknown)
};

// One `sweep:` entry: a dotted override path and the values it takes, as their YAML text; or
// `variants` (key "variants"), whose values are the variants' names.
struct SweepAxis {
  std::string key;
  std::vector<std::string> values;
  std::vector<SweepVariant> variants;  // key "variants" only: one per value, in list order
  int line = 0;                        // 1-based line of the key in the spec (0 = unknown)
  std::string origin;  // "-p sweep.KEY=..." when -p gave the list ("" = the spec's `line`)
};

// `plot:` of a sweep.
struct PlotSpec {
  double latency_target_s = 0;  // > 0: normalized-latency target of the throughput plot
  // waste.png's arrival rate; must be one of the swept arrival.rate values (expand_sweep checks).
  // Not given: plot.py picks the highest rate where every policy keeps up.
  bool has_waste_rate = false;
  double waste_rate = 0;
  std::string waste_rate_where;  // "FILE:LINE: plot.waste_rate" (or the -p argument) for errors
};

// `validate:` of a spec that `isim validate` runs: what --calibrate-first measures.
struct ValidateSpec {
  std::string model;  // model YAML for the calibration ("" = none given)
  bool quick = true;  // isim-calibrate --quick grids
};

struct Experiment {
  std::string name = "experiment";
  std::string origin;  // the file it came from (for messages)
  uint64_t seed = 1;
  TraceSpec trace;
  trace::ArrivalSpec arrival;
  std::string profile;
  sim::EngineConfig engine;
  std::string executor = "sim";
  sim::ExecutorParams executor_params;  // `executor: {name: live-cpu, threads: 2}`
  std::vector<PolicySpec> policies;
  ClusterSpec cluster;           // `cluster:`; not given = a cluster of one
  RunSlo slo;                    // `slo:` per-session limits (experiments/spec/slo.h); empty: none
  TurnSlo turn_slo;              // `slo:`'s turn-level limits (request_ttft_s, itl_max_s)
  RunMetricsSpec run_metrics;    // `metrics.window_s`, `metrics.shifts_s`
  std::vector<SweepAxis> sweep;  // in file order; empty = not a sweep
  bool has_plot = false;
  PlotSpec plot;
  bool has_validate = false;
  ValidateSpec validate;

  YAML::Node resolved() const;
};

// Parses a spec node. `base_dir` resolves relative paths.
Experiment parse_experiment(const YAML::Node& root, const std::string& origin,
                            const std::string& base_dir);
// Reads a spec file as YAML (InputError naming the file and line when it is not YAML).
YAML::Node load_spec_yaml(const std::string& path);
// `p` made absolute against `base_dir` ("" stays ""), as every path in a spec is.
std::string resolve_spec_path(const std::string& base_dir, const std::string& p);
// The folder that relative paths in the spec file `path` resolve against.
std::string spec_base_dir(const std::string& path);
// Loads a single experiment and applies overrides ("key=value") first. A spec with `sweep:` or
// `plot:` is an InputError telling the user to run it with `isim sweep`.
// A key that a flag other than -p sets (`isim run SPEC --rate R` sets arrival.rate): the
// override `kv`, named `origin` ("--rate R") in errors.
struct FlagOverride {
  std::string kv;
  std::string origin;
};
Experiment load_experiment(const std::string& path, const std::vector<std::string>& overrides,
                           const std::vector<FlagOverride>& flags = {});
// Sets a dotted key in a YAML map; InputError "-p KV: ..." on a malformed override or a root
// that is not a map. With `origins`, the nodes it adds are named "-p KV" in later errors.
// - A component names the longest run of components that is an existing key, so
//   `slo.ttft_s.p99=1` sets the key `ttft_s.p99` of `slo:`; a missing map is created.
// - In a list, a component is a 0-based index (`policies.2.estimator=oracle`; a scalar element of
//   `policies`/`routers` becomes {name: ELEMENT}); any other component is an error naming the
//   valid indices.
// - A new entry of a map of user-chosen names (`deployments`, the axes of `sweep`) is an error
//   listing the entries, unless KV starts with '+' (`-p +KEY=V`, or `--add KEY=V`, which the
//   front ends pass as "+KEY=V"): then it is created, and a list index equal to the list's size
//   appends. Errors then name "--add KEY=V".
// - A non-empty `origin` names the override instead (a flag that sets a key: "--rate 2").
void apply_override(YAML::Node& root, const std::string& kv, YamlOrigins* origins = nullptr,
                    const std::string& origin = "");
// InputError "FILE:LINE: (document): expected a map of keys for -p KV to set, got ..." unless
// `root` is a map.
void check_override_root(const YAML::Node& root, const std::string& file, const std::string& kv);
// Every override in order (check_override_root, then apply_override with `origins`): `origins`
// must outlive the parse of `root`, so that its errors name the -p argument at fault.
void apply_overrides(YAML::Node& root, const std::string& file,
                     const std::vector<std::string>& overrides, YamlOrigins& origins);

}  // namespace isim::exp
