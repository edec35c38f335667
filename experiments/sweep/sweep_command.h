// What `isim sweep EXPERIMENT.yaml` and `isim sweep merge` do once their flags are read: the
// verbs (experiments/cli/cli_sweep.cpp) only translate flags into these requests.
//
// Contract:
// - run_sweep(SweepRequest) loads the spec with its overrides (load_sweep); with `list` prints
//   the shard's runs ("INDEX  LABEL") and returns 0. Otherwise it creates the output folder
//   (`out`, or default_out_dir), refuses --resume with --fresh (UsageError with `usage`), opens
//   the shard's journal (an unjournaled results.csv is refused unless --fresh), reports what it
//   kept, removes an older results.csv and plots when new runs are due, runs the rest with
//   progress on stderr (a bar on a terminal, a line per run otherwise) and a journal record per
//   run, and writes plot_context.json. A whole sweep then writes results.csv, prints its table
//   and draws the plots of `plot:` (and goodput.png with `slo:`); a shard prints how to merge.
//   Returns the exit code: 0, or 2 when a run skipped sessions or a plot could not be drawn.
// - merge_sweep(out_csv, inputs, journals): joins shard journals (journals = true) or
//   results.csv files into OUT.csv; InputError naming missing run indices of results.csv files
//   (nothing written then); prints a note (results.csv files cannot be checked in full) and
//   "merged N file(s), R run(s) -> OUT.csv". Returns 0.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "experiments/sweep/sweep.h"

namespace isim::exp {

struct SweepRequest {
  std::string spec;                    // EXPERIMENT.yaml
  std::vector<std::string> overrides;  // -p / --add, in order
  std::string out;                     // --out; "" = results/<name>[-<overrides>]
  size_t jobs = 1;
  Shard shard;
  cluster::Checks checks;
  int32_t threads = 1;  // --threads: each run's (cluster::simulate)
  bool list = false, keep_runs = false, resume = false, fresh = false;
  std::string usage;  // the usage lines a UsageError about these flags prints
};

int run_sweep(const SweepRequest& r);
// Every input the shard's runs read (each distinct profile, loaded and checked as prepare()
// does; each trace file, a regular file), checked before any output: InputError "sweep run N
// (LABEL): ..." naming the first run that reads it. run_sweep and `isim sweep submit` call it
// before they make their folder.
void check_sweep_inputs(const Sweep& sweep, const Shard& shard);

int merge_sweep(const std::string& out_csv, const std::vector<std::string>& inputs, bool journals);

}  // namespace isim::exp
