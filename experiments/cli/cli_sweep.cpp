// isim sweep: run a spec's cross product of policies and swept values; isim sweep merge: join
// the results.csv files of shards.
#include <cstdlib>
#include <filesystem>
#include <optional>

#include <fmt/format.h>
#include <boost/program_options.hpp>

#include "core/cli_args.h"
#include "core/cli_help.h"
#include "experiments/cli/checks_flags.h"
#include "experiments/cli/cli.h"
#include "experiments/cli/cli_submit.h"
#include "experiments/cli/threads_flag.h"
#include "experiments/sweep/sweep_command.h"
#include "experiments/sweep/sweep_shards.h"

namespace isim::exp {

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace {

const char* kSweepUsage =
    "usage: isim sweep EXPERIMENT.yaml [--jobs N] [--threads N] [--shard K/N|auto] "
    "[--resume|--fresh]\n"
    "                  [--out DIR]\n"
    "                  [--keep-runs] [--list] [-p key=value ...]\n"
    "       isim sweep merge OUT.csv JOURNAL|DIR ...   (or results.csv files of old shards)\n"
    "       isim sweep submit --slurm|--k8s EXPERIMENT.yaml --tasks N ... (--help)\n";

Help sweep_help() {
  return {
      kSweepUsage,
      "Runs the cross product of the spec's policies and swept values, and writes\n"
      "results.csv: one row per run: run_index, policy, each swept key, estimator, then\n"
      "every summary metric (nested ones as dotted names).\n"
      "With plot: in the spec, experiments/plots/plot.py draws latency.png, throughput.png,\n"
      "waste.png, ttft.png and recompute.png (against think time for a think-time sweep) beside "
      "it, using\n"
      "$ISIM_PYTHON or the first python3 with matplotlib; the script is\n" +
          plot_script_path() + " ($ISIM_PLOT_SCRIPT overrides).\n" +
          "With slo: too, experiments/plots/plot_goodput.py draws goodput.png (goodput against\n"
          "rate per policy).\n",
      "  isim sweep experiments/specs/multiturn.yaml --jobs 4\n"
      "  isim sweep experiments/specs/multiturn.yaml --list -p 'sweep.seed=[1,2]'\n"
      "  isim sweep experiments/specs/multiturn.yaml --shard 1/2 --out results/mt\n"};
}

const Help kMergeHelp{
    "usage: isim sweep merge OUT.csv JOURNAL|DIR ...   (or results.csv files of old shards)\n",
    "Joins the journals of a sweep's shards (DIR/shards/shard-K-of-N.jsonl, or the folder\n"
    "DIR/shards) into OUT.csv: the results.csv an unsharded run writes, byte for byte. Every\n"
    "shard and every run must be there exactly once, from one spec and one build of isim\n"
    "(exit 2 otherwise).\n",
    "  isim sweep merge results/mt/results.csv results/mt/shards\n"
    "  isim sweep merge all.csv a/shards/shard-1-of-2.jsonl b/shards/shard-2-of-2.jsonl\n"};

// OUT.csv and the inputs of `isim sweep merge`, checked as a usage; then merge_sweep.
int cmd_sweep_merge(const Args& args) {
  po::options_description opts, hidden;
  std::vector<std::string> files;
  opts.add_options()("help,h", "show this help");
  hidden.add_options()("files", po::value(&files)->composing(), "OUT.csv, then the inputs");
  po::positional_options_description pos;
  pos.add("files", -1);
  const po::variables_map vm = parse_visible_hidden(args, opts, hidden, pos);
  if (vm.count("help")) return print_help(kMergeHelp, opts);
  if (files.size() < 2) throw usage_error("merge needs OUT.csv and at least one input", kMergeHelp);
  const std::string& out_csv = files[0];
  std::vector<std::string> inputs(files.begin() + 1, files.end());
  for (const auto& in : inputs)
    if (fs::exists(out_csv) && fs::exists(in) && fs::equivalent(out_csv, in))
      throw usage_error("OUT.csv " + out_csv + " is also an input", kMergeHelp);
  size_t journals = 0;
  for (const auto& in : inputs) journals += is_journal(in) ? 1 : 0;
  if (journals != 0 && journals != inputs.size())
    throw usage_error("give shard journals (or their folders) or results.csv files, not both",
                      kMergeHelp);
  return merge_sweep(out_csv, inputs, journals != 0);
}

// The flags of `isim sweep EXPERIMENT.yaml` as a request; nullopt after --help (printed).
std::optional<SweepRequest> parse_sweep_flags(const Args& args) {
  po::options_description opts, hidden;
  SweepRequest r;
  std::string shard_text = "1/1";
  opts.add_options()("help,h", "show this help")(
      "jobs,j", po::value<std::string>(), "worker threads, 1..1024 (default: the number of cores)")(
      "shard", po::value(&shard_text),
      "run shard K of N (1-based; runs assigned by a hash of their key); auto: from Slurm's "
      "SLURM_ARRAY_TASK_ID/_MIN/_COUNT or Kubernetes' JOB_COMPLETION_INDEX and ISIM_SHARDS")(
      "resume",
      "keep the runs of the journal (DIR/shards/) that match this spec, even when the spec "
      "changed; run the rest (without it, a journal of this very spec is resumed, and one of "
      "another spec is refused)")(
      "fresh", "start anew: drop the journal's runs and the folder's results.csv and plots")(
      "out,o", po::value(&r.out),
      "output folder (default results/<name>, or results/<name>-<overrides> with -p)")(
      "keep-runs", "also write each run's files (summary.json, ...) to DIR/runs/<index>/")(
      "list", "print the runs (of the shard) with their indices and exit")(
      "set,p", override_flag(r.overrides, false),
      "override a spec key: -p trace.limit=50; a swept list: -p 'sweep.seed=[1,2]'")(
      "add", override_flag(r.overrides, true), kAddHelp);
  add_checks_options(opts);
  add_threads_option(opts);
  hidden.add_options()("experiment", po::value<std::string>(), "sweep spec YAML");
  po::positional_options_description pos;
  pos.add("experiment", 1);
  const po::variables_map vm = parse_visible_hidden(args, opts, hidden, pos);
  if (vm.count("help")) {
    print_help(sweep_help(), opts);
    return std::nullopt;
  }
  if (!vm.count("experiment")) throw usage_error("needs EXPERIMENT.yaml", sweep_help());
  r.jobs = jobs_flag(vm);
  r.spec = vm["experiment"].as<std::string>();
  r.shard = shard_text == "auto" ? shard_from_env([](const char* v) { return std::getenv(v); })
                                 : parse_shard(shard_text);
  r.checks = checks_from(vm);
  r.threads = threads_from(vm);
  r.list = vm.count("list") > 0;
  r.keep_runs = vm.count("keep-runs") > 0;
  r.resume = vm.count("resume") > 0;
  r.fresh = vm.count("fresh") > 0;
  r.usage = kSweepUsage;
  return r;
}

}  // namespace

int cmd_sweep(const Args& args) {
  if (!args.empty() && args[0] == "merge")
    return cmd_sweep_merge(Args(args.begin() + 1, args.end()));
  if (!args.empty() && args[0] == "submit")
    return cmd_submit("sweep", Args(args.begin() + 1, args.end()));
  const std::optional<SweepRequest> r = parse_sweep_flags(args);
  return r ? run_sweep(*r) : 0;
}

}  // namespace isim::exp
