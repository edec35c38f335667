// isim sweep: run a spec's cross product of policies and swept values; isim sweep merge: join
// the results.csv files of shards.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include <fmt/format.h>
#include <boost/program_options.hpp>

#include "core/atomic_file.h"
#include "core/cli_args.h"
#include "core/cli_help.h"
#include "core/input_error.h"
#include "core/interrupt.h"
#include "core/out_path.h"
#include "experiments/cli/checks_flags.h"
#include "experiments/cli/cli.h"
#include "experiments/cli/cli_submit.h"
#include "experiments/plots/plot_context.h"
#include "experiments/sweep/journal_record.h"
#include "experiments/sweep/sweep.h"
#include "experiments/sweep/sweep_report.h"
#include "experiments/sweep/sweep_shards.h"

namespace isim::exp {

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace {

const char* kSweepUsage =
    "usage: isim sweep EXPERIMENT.yaml [--jobs N] [--shard K/N|auto] [--resume|--fresh]\n"
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
      "waste.png and ttft.png (or recompute.png for a think-time sweep) beside it, using\n"
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

void write_file(const fs::path& p, const std::string& text) {
  write_file_atomic(p.string(), text);
}

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
  check_out_file(out_csv, "OUT.csv");
  std::vector<size_t> missing;
  std::string text = journals ? merge_shards(inputs) : merge_results(inputs, &missing);
  size_t rows = static_cast<size_t>(std::count(text.begin(), text.end(), '\n')) - 1;
  if (!missing.empty()) {
    std::string list;
    for (size_t i = 0; i < missing.size() && i < 20; ++i) {
      if (i) list += ", ";
      list += std::to_string(missing[i]);
    }
    if (missing.size() > 20) list += ", ...";
    throw InputError(fmt::format(
        "{} run index(es) below the highest one given ({}) are missing: {} (a shard not "
        "merged?); nothing was written to {}. results.csv files do not say how many runs a "
        "sweep has, so runs past the highest index cannot be counted: merge the shards' "
        "journals (DIR/shards) for a complete check",
        missing.size(), rows + missing.size() - 1, list, out_csv));
  }
  write_file(out_csv, text);
  if (!journals)
    fmt::print(stderr,
               "note: results.csv files do not say how many runs their sweep has: runs past "
               "index {} would go unnoticed (journals are checked in full)\n",
               rows > 0 ? rows - 1 : 0);
  const size_t nfiles = journals ? journal_paths(inputs, "shard-").size() : inputs.size();
  fmt::print("merged {} file(s), {} run(s) -> {}\n", nfiles, rows, out_csv);
  return 0;
}

// The plots plot.py (and plot_goodput.py) may draw beside results.csv.
const char* const kSweepPlots[] = {"latency.png", "throughput.png", "waste.png",
                                   "ttft.png",    "recompute.png",  "goodput.png"};

// results.csv and the plots of an earlier sweep in `out`: removed before new runs, so that an
// interrupted sweep never leaves them looking current.
void remove_sweep_outputs(const std::string& out) {
  remove_file((fs::path(out) / "results.csv").string());
  for (const char* png : kSweepPlots) remove_file((fs::path(out) / png).string());
}

// A results.csv without a journal is an older sweep's (or another tool's): never replaced
// unless --fresh says so.
void refuse_unjournaled(const std::string& out, const std::string& journal) {
  const fs::path csv = fs::path(out) / "results.csv";
  if (!fs::exists(csv) || fs::exists(journal)) return;
  throw InputError(fmt::format(
      "{}: holds a results.csv but no journal ({}), so its runs cannot be resumed; give --fresh "
      "to replace it, or another --out",
      out, journal));
}

// One line redrawn in place: [#####.....] 12/24 runs, 3.2 s
void draw_bar(size_t done, size_t total, double elapsed) {
  const size_t width = 30;
  size_t fill = total ? done * width / total : width;
  fmt::print(stderr, "\r[{}{}] {}/{} runs, {:.1f} s", std::string(fill, '#'),
             std::string(width - fill, '.'), done, total, elapsed);
  if (done == total) fmt::print(stderr, "\n");
  std::fflush(stderr);
}

int skipped_error(const SweepResults& res) {
  fmt::print(stderr,
             "isim: error: {} run(s) skipped sessions that can never fit (warnings above); the "
             "other results were written\n",
             res.runs_with_skipped_sessions);
  return 2;
}

// What the journal held: runs kept (resumed) or dropped (--fresh, or not matching).
void report_journal(const Journal& j, const Shard& shard, size_t runs, JournalMode mode) {
  const std::string which =
      shard.whole() ? std::string("sweep") : fmt::format("shard {}/{}", shard.k, shard.n);
  if (!j.kept.empty())
    fmt::print(stderr, "{}: {} of {} run(s) already finished ({}), running the other {}\n", which,
               j.kept.size(), runs, j.path, runs - j.kept.size());
  if (j.torn)
    fmt::print(stderr, "note: {}: its last line was cut short, and was dropped\n", j.path);
  if (j.dropped > 0)
    fmt::print(stderr, "note: {}: {} finished run(s) {}\n", j.path, j.dropped,
               mode == JournalMode::kFresh ? "were dropped: --fresh starts anew"
                                           : "of another spec or build were dropped");
}

// goodput.png beside results.csv when the spec sets an SLO (experiments/plots/plot_goodput.py).
int plot_goodput(const std::string& py, const fs::path& csv, const std::string& out,
                 const Sweep& sweep, const SweepResults& res) {
  if (!has_goodput(res)) return 0;
  const std::string png = (fs::path(out) / "goodput.png").string();
  if (int prc = run_goodput_plot(py, csv.string(), png, plot_context(sweep.base)); prc != 0) {
    fmt::print(stderr, "isim: error: plot: {} {} exited with {}; results.csv was written\n", py,
               goodput_script_path(), prc);
    return 2;
  }
  if (fs::exists(png)) fmt::print("plot: {}\n", png);  // none without an arrival.rate column
  return 0;
}

}  // namespace

int cmd_sweep(const Args& args) {
  if (!args.empty() && args[0] == "merge")
    return cmd_sweep_merge(Args(args.begin() + 1, args.end()));
  if (!args.empty() && args[0] == "submit")
    return cmd_submit("sweep", Args(args.begin() + 1, args.end()));

  po::options_description opts, hidden;
  std::vector<std::string> overrides;
  std::string out, shard_text = "1/1";
  opts.add_options()("help,h", "show this help")("jobs,j", po::value<std::string>(),
                                                 "worker threads (default: the number of cores)")(
      "shard", po::value(&shard_text),
      "run shard K of N (1-based; runs assigned by a hash of their key); auto: from Slurm's "
      "SLURM_ARRAY_TASK_ID/_MIN/_COUNT or Kubernetes' JOB_COMPLETION_INDEX and ISIM_SHARDS")(
      "resume",
      "keep the runs of the journal (DIR/shards/) that match this spec, even when the spec "
      "changed; run the rest (without it, a journal of this very spec is resumed, and one of "
      "another spec is refused)")(
      "fresh", "start anew: drop the journal's runs and the folder's results.csv and plots")(
      "out,o", po::value(&out),
      "output folder (default results/<name>, or results/<name>-<overrides> with -p)")(
      "keep-runs", "also write each run's files (summary.json, ...) to DIR/runs/<index>/")(
      "list", "print the runs (of the shard) with their indices and exit")(
      "set,p", override_flag(overrides, false),
      "override a spec key: -p trace.limit=50; a swept list: -p 'sweep.seed=[1,2]'")(
      "add", override_flag(overrides, true), kAddHelp);
  add_checks_options(opts);
  hidden.add_options()("experiment", po::value<std::string>(), "sweep spec YAML");
  po::positional_options_description pos;
  pos.add("experiment", 1);
  const po::variables_map vm = parse_visible_hidden(args, opts, hidden, pos);
  if (vm.count("help")) return print_help(sweep_help(), opts);
  if (!vm.count("experiment")) throw usage_error("needs EXPERIMENT.yaml", sweep_help());
  const size_t jobs = jobs_flag(vm);
  const std::string spec = vm["experiment"].as<std::string>();
  const Shard shard = shard_text == "auto"
                          ? shard_from_env([](const char* v) { return std::getenv(v); })
                          : parse_shard(shard_text);
  const cluster::Checks checks = checks_from(vm);

  Sweep sweep = load_sweep(spec, overrides);
  if (vm.count("list")) {
    for (const auto& r : sweep.runs)
      if (shard.contains(r)) fmt::print("{:>5}  {}\n", r.index, r.label());
    return 0;
  }
  if (out.empty()) out = default_out_dir(sweep.base.name, overrides);
  make_out_dir(out, "--out");

  if (vm.count("resume") && vm.count("fresh"))
    throw UsageError{"give --resume or --fresh, not both", kSweepUsage};
  const JournalMode mode = vm.count("fresh")    ? JournalMode::kFresh
                           : vm.count("resume") ? JournalMode::kResume
                                                : JournalMode::kAuto;
  if (mode == JournalMode::kAuto && shard.whole())
    refuse_unjournaled(out, journal_path(out, shard));
  Journal journal = open_journal(out, sweep, shard, mode);
  size_t todo = 0;
  for (const auto& r : sweep.runs) todo += shard.contains(r) ? 1 : 0;
  const size_t in_shard = todo;
  report_journal(journal, shard, todo, mode);
  todo -= journal.kept.size();
  // Whatever results.csv and plots the folder holds describe other runs than those to come.
  if (shard.whole() && (todo > 0 || mode == JournalMode::kFresh)) remove_sweep_outputs(out);
  size_t recorded = journal.kept.size();
  auto note = [&] {
    set_interrupt_note(
        fmt::format("{} of {} run(s) are kept in {}; the same command resumes them{}", recorded,
                    in_shard, journal.path, shard.whole() ? " and writes results.csv" : ""));
  };
  note();
  fmt::print(stderr, "sweep {}: {} run(s){}, {} job(s)\n", sweep.base.name, todo,
             shard.whole()
                 ? std::string()
                 : fmt::format(" (shard {}/{} of {})", shard.k, shard.n, sweep.runs.size()),
             std::min(jobs, std::max<size_t>(todo, 1)));

  SweepOptions o;
  o.jobs = jobs;
  o.shard = shard;
  o.checks = checks;
  o.finished = &journal.kept;
  AppendFile log(journal.path);
  o.on_record = [&](const RunRecord& r) {
    RunRecord rec = r;
    rec.key = sweep.runs[r.index].key;
    rec.fingerprint = journal.fingerprints[r.index];
    log.append(record_line(rec));
    ++recorded;
    note();
  };
  if (vm.count("keep-runs")) o.keep_runs_dir = (fs::path(out) / "runs").string();
  const bool tty = isatty(STDERR_FILENO) != 0;
  const auto t0 = std::chrono::steady_clock::now();
  o.on_done = [&](const SweepProgress& p) {
    if (tty) {
      draw_bar(p.done, p.total,
               std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    } else {
      fmt::print(stderr, "[{}/{}] {}: {:.2f} s\n", p.done, p.total, p.run.label(), p.seconds);
    }
  };
  if (tty && todo > 0) draw_bar(0, todo, 0);
  SweepResults res = run_sweep(sweep, o);

  for (const auto& n : res.notes) fmt::print(stderr, "note: {}\n", n);
  for (const auto& w : res.warnings) fmt::print(stderr, "warning: {}\n", w);
  {  // the plots' titles: GPU, model, workload and rate of every run (shards write the same)
    std::vector<const Experiment*> exps;
    for (const auto& r : sweep.runs) exps.push_back(&r.experiment);
    write_plot_context(out, plot_context(exps));
  }
  if (!shard.whole()) {
    fmt::print(
        "journal: {} ({} run(s)); when every shard is done: isim sweep merge "
        "{}/results.csv {}/shards\n",
        journal.path, res.rows.size(), out, out);
    return res.runs_with_skipped_sessions > 0 ? skipped_error(res) : 0;
  }
  fs::path csv = fs::path(out) / "results.csv";
  write_file(csv, res.csv());
  fmt::print("results: {} ({} run(s), {} columns)\n", csv.string(), res.rows.size(),
             res.header.size());
  if (!o.keep_runs_dir.empty()) fmt::print("runs: {}/<index>/\n", o.keep_runs_dir);
  fmt::print("\n{}", sweep_table(res));

  int rc = 0;
  if (sweep.base.has_plot) {
    if (!shard.whole()) {
      fmt::print(stderr,
                 "note: plot: skipped for a shard; after `isim sweep merge MERGED.csv ...` run "
                 "python3 {} MERGED.csv DIR\n",
                 plot_script_path());
    } else if (!fs::exists(plot_script_path())) {
      fmt::print(
          stderr,
          "isim: error: plot: {} not found (set ISIM_PLOT_SCRIPT to experiments/plots/plot.py "
          "of a checkout); results.csv was written\n",
          plot_script_path());
      rc = 2;
    } else if (std::string tried, py = find_plot_python(&tried); py.empty()) {
      fmt::print(stderr,
                 "isim: error: plot: no python3 with matplotlib (tried {}; install Debian's "
                 "python3-matplotlib or set ISIM_PYTHON); results.csv was written\n",
                 tried);
      rc = 2;
    } else if (int prc = run_plot(py, csv.string(), out, sweep.base.plot); prc != 0) {
      fmt::print(stderr, "isim: error: plot: {} {} exited with {}; results.csv was written\n", py,
                 plot_script_path(), prc);
      rc = 2;
    } else {
      // plot.py draws what the swept axes allow (rate plots, a think-time plot).
      for (const char* png : kSweepPlots)
        if (fs::exists(fs::path(out) / png))
          fmt::print("plot: {}\n", (fs::path(out) / png).string());
      rc = plot_goodput(py, csv, out, sweep, res);
    }
  }
  if (res.runs_with_skipped_sessions > 0) rc = skipped_error(res);
  return rc;
}

}  // namespace isim::exp
