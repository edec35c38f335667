// Sweeps: one experiment spec expanded into many runs, run on a thread pool, one row per run in
// results.csv.
//
// Contract:
// - A sweep spec is an experiment spec plus `sweep:` (dotted override path -> list of values)
//   and optionally `plot:`. Its `policies:` list is itself a dimension: each entry, with its
//   parameters, is one value.
// - The reserved sweep key `variants` is a list of {name: NAME, set: {dotted.key: value, ...}}:
//   one dimension whose values are named bundles of overrides, for keys that must change
//   together (a fleet's roles and its planner). Its values in `set` may be scalars, lists or
//   maps. A variant's keys may not overlap a swept key (equal, or one below the other), so the
//   order in which a run's overrides apply never changes its values
//   (experiments/spec/sweep_variants.h).
// - Run order (and so the run index, from 0): policies outermost, then the sweep keys in file
//   order (`variants` at its position among them), each key's values (variants) in list order;
//   the last key varies fastest.
// - Each run's Experiment is the spec with that run's values applied exactly like `-p key=value`
//   (apply_override), a variant's `set` in the order given, and parsed again, with its one
//   policy; so every value is validated like a `-p`. A bad key or value is an InputError naming
//   `sweep.<key>` and the value, or `sweep.variants[I].set.<key>` and the value (the first of
//   the variant's keys whose overrides so far fail).
// - A sweep has at most kMaxSweepRuns runs (policies x the values of each key), counted before
//   any is expanded: more is an InputError "FILE:LINE: sweep: 2 policies x 1000 arrival.rate x
//   ... is more than the 1000000 runs a sweep may have; sweep fewer values (e.g. -p
//   'sweep.KEY=[A, B]') ...", so `isim sweep --list` of a huge sweep answers at once.
// - `run_sweep` gives the same rows, in run-index order, for any number of jobs; results.csv is
//   byte-identical for any --jobs, and merging the shards of a sweep gives the file an unsharded
//   run writes.
// - results.csv: run_index, policy, one column per swept key (named by its dotted path; the
//   `variants` column is `variant` and holds the variant's name),
//   estimator (the policy's `estimator` parameter or empty), then every metric of summary.json
//   flattened (nested objects become dotted names: normalized_latency_s.p99, waste_share.free),
//   without its `slo` limits: goodput.sessions, goodput.share and goodput.per_s (empty without
//   an SLO), and `overloaded` (1 or 0). Numbers use the shortest representation that reads back
//   to the same value; a value that does not apply (null in summary.json, such as a statistic
//   over no sessions) is an empty cell; booleans are 1 or 0.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "cluster/cluster.h"
#include "core/csv.h"
#include "experiments/run/run_script.h"
#include "experiments/spec/experiment.h"

namespace isim::exp {

inline constexpr size_t kMaxSweepRuns = 1000000;

struct SweepRun {
  size_t index = 0;
  std::string key;        // label() with the policy's parameters; unique (sweep_shards.h)
  uint64_t key_hash = 0;  // shard_hash(key): which shard runs it
  Experiment experiment;  // exactly one policy; this run's values applied
  // swept key -> value, file order; ("variant", NAME) for `variants`
  std::vector<std::pair<std::string, std::string>> point;
  std::string estimator;  // the policy's `estimator` parameter, or ""

  const PolicySpec& policy() const { return experiment.policies.front(); }
  // "policy=swap arrival.rate=2 seed=1" (with estimator=... when the policy has one, and
  // variant=NAME for `variants`).
  std::string label() const;
};

struct Sweep {
  Experiment base;             // the spec as written (every policy, its sweep and plot)
  std::vector<SweepRun> runs;  // in run-index order
};

// Expands a spec's YAML (with any -p overrides already applied). `file` names the spec in
// messages; `base_dir` resolves its relative paths.
Sweep expand_sweep(const YAML::Node& root, const std::string& file, const std::string& base_dir);
// Loads a spec file, applies `-p` overrides, expands it. An override of a key the spec sweeps is
// an InputError (override the list instead: -p 'sweep.arrival.rate=[1, 2]'), and so is one of
// a key that a variant sets.
Sweep load_sweep(const std::string& path, const std::vector<std::string>& overrides);

// `--shard K/N` (1-based K): the runs whose key hashes to K - 1 modulo N (sweep_shards.h).
struct Shard {
  size_t k = 1, n = 1;
  bool contains(const SweepRun& r) const { return r.key_hash % n == k - 1; }
  bool whole() const { return n == 1; }
};
Shard parse_shard(const std::string& text);  // InputError unless "K/N" with 1 <= K <= N

struct SweepProgress {
  const SweepRun& run;
  size_t done, total;  // runs finished so far (this one included), runs to do
  double seconds;      // this run's wall time
};

// What a finished run contributes to results.csv (and to a shard journal, sweep_shards.h).
struct RunRecord {
  size_t index = 0;
  std::string key, fingerprint;
  std::string policy;
  std::vector<std::string> point;  // the swept values, in column order
  std::string estimator;           // the estimator the policy used ("" = none)
  std::vector<std::pair<std::string, std::string>> metrics;  // column -> value
  std::string warning;   // sessions skipped, profile extrapolated ("" = none)
  bool skipped = false;  // sessions that can never fit were skipped
};
// The results.csv row of `r` under `header`: run_index, policy, point, estimator, then each
// metric column (empty where the run has no such metric).
std::vector<std::string> results_row(const std::vector<std::string>& header, const RunRecord& r);

struct SweepOptions {
  size_t jobs = 1;  // worker threads (0 = 1); 1 whenever a run uses a live (measuring) executor
  Shard shard;
  std::string keep_runs_dir;  // non-empty: each run's four files go to DIR/<index>/
  cluster::Checks checks;     // invariants each run checks (none by default)
  int32_t threads = 1;        // each run's replicas advance on this many (cluster::simulate)
  // Called once per finished run, one call at a time, in completion order.
  std::function<void(const SweepProgress&)> on_done;
  // Runs finished before (a resumed journal): not run again; their records give their rows.
  const std::map<size_t, RunRecord>* finished = nullptr;
  // Called once per run this call finishes, one call at a time, in run-index order (a run
  // waits for the earlier runs of the shard), with its record (key and fingerprint empty).
  std::function<void(const RunRecord&)> on_record;
};

struct SweepResults {
  std::vector<std::string> header;
  std::vector<size_t> indices;                 // run index of each row
  std::vector<std::vector<std::string>> rows;  // fields, in run-index order
  std::vector<std::string> warnings;           // sessions skipped, profile extrapolated
  size_t runs_with_skipped_sessions = 0;       // runs where a session could never fit
  std::vector<std::string> notes;              // what the trace importers reported (deduplicated)

  std::string csv() const;  // header and rows, comma-separated, "\n" line ends
};

// The columns of results.csv for a sweep.
std::vector<std::string> results_header(const Sweep& s);
// Runs the sweep's runs in `o.shard`. The first error (by run index) is rethrown after the
// running runs end; no later run starts once one has failed.
SweepResults run_sweep(const Sweep& s, const SweepOptions& o);

// Joins results.csv files of shards: identical headers, no run index twice, rows sorted by run
// index. InputError otherwise. `missing` receives the indices absent below the largest one.
std::string merge_results(const std::vector<std::string>& paths, std::vector<size_t>* missing);

// The plot script (an interpreter that can run it: run/run_script.h, find_plot_python).
// plot.py is found at <source dir>/experiments/plots/plot.py, the source folder this isim was
// built from (recorded at compile time), or at $ISIM_PLOT_SCRIPT when set.
std::string plot_script_path();
// Runs `python plot.py CSV OUTDIR [--latency-target S] [--waste-rate R]` from `plot:` (its
// stdout silenced, its stderr passed on); returns its exit status (127 when it could not start).
int run_plot(const std::string& python, const std::string& csv, const std::string& outdir,
             const PlotSpec& plot);

}  // namespace isim::exp
