// isim sweep's work below its flags (sweep_command.h): the journal, the runs with their
// progress, results.csv, the plots; and isim sweep merge's.
#include "experiments/sweep/sweep_command.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "core/atomic_file.h"
#include "core/cli_args.h"
#include "core/input_error.h"
#include "core/input_file.h"
#include "core/interrupt.h"
#include "core/out_path.h"
#include "experiments/plots/plot_context.h"
#include "experiments/run/run.h"
#include "experiments/sweep/journal_record.h"
#include "experiments/sweep/sweep_aggregate.h"
#include "experiments/sweep/sweep_report.h"
#include "experiments/sweep/sweep_shards.h"

namespace isim::exp {

namespace fs = std::filesystem;

namespace {

// The plots plot.py (and plot_goodput.py) may draw beside results.csv.
const char* const kSweepPlots[] = {"latency.png", "throughput.png", "waste.png",
                                   "ttft.png",    "recompute.png",  "goodput.png"};

// results.csv and the plots of an earlier sweep in `out`: removed before new runs, so that an
// interrupted sweep never leaves them looking current.
void remove_sweep_outputs(const std::string& out) {
  remove_file((fs::path(out) / "results.csv").string());
  remove_file((fs::path(out) / "aggregate.csv").string());
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
void sweep_draw_bar(size_t done, size_t total, double elapsed) {
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

// plot.py's plots (and goodput.png) beside a whole sweep's results.csv; the exit code.
int plot_sweep(const fs::path& csv, const std::string& out, const Sweep& sweep,
               const SweepResults& res) {
  if (!fs::exists(plot_script_path())) {
    fmt::print(stderr,
               "isim: error: plot: {} not found (set ISIM_PLOT_SCRIPT to experiments/plots/plot.py "
               "of a checkout); results.csv was written\n",
               plot_script_path());
    return 2;
  }
  std::string tried;
  const std::string py = find_plot_python(&tried);
  if (py.empty()) {
    fmt::print(stderr,
               "isim: error: plot: no python3 with matplotlib (tried {}; install Debian's "
               "python3-matplotlib or set ISIM_PYTHON); results.csv was written\n",
               tried);
    return 2;
  }
  if (int prc = run_plot(py, csv.string(), out, sweep.base.plot); prc != 0) {
    fmt::print(stderr, "isim: error: plot: {} {} exited with {}; results.csv was written\n", py,
               plot_script_path(), prc);
    return 2;
  }
  // plot.py draws what the swept axes allow (rate plots, a think-time plot).
  for (const char* png : kSweepPlots)
    if (fs::exists(fs::path(out) / png)) fmt::print("plot: {}\n", (fs::path(out) / png).string());
  return plot_goodput(py, csv, out, sweep, res);
}

// With `seed` among the swept keys: aggregate.csv beside results.csv (sweep_aggregate.h).
void write_aggregate(const std::string& results_path, const std::string& text) {
  const std::string agg = aggregate_csv(text, results_path);
  if (agg.empty()) return;
  const fs::path path = fs::path(results_path).parent_path() / "aggregate.csv";
  write_file_atomic(path.string(), agg);
  fmt::print("aggregate: {} (mean and 95% interval over seeds)\n", path.string());
}

// What follows the runs: plot_context.json, then a shard's merge hint, or a whole sweep's
// results.csv, table and plots. The exit code.
int finish_sweep(const Sweep& sweep, const SweepResults& res, const Journal& journal,
                 const Shard& shard, const std::string& out, const std::string& keep_runs_dir) {
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
  write_file_atomic(csv.string(), res.csv());
  fmt::print("results: {} ({} run(s), {} columns)\n", csv.string(), res.rows.size(),
             res.header.size());
  write_aggregate(csv.string(), res.csv());
  if (!keep_runs_dir.empty()) fmt::print("runs: {}/<index>/\n", keep_runs_dir);
  fmt::print("\n{}", sweep_table(res));
  int rc = sweep.base.has_plot ? plot_sweep(csv, out, sweep, res) : 0;
  if (res.runs_with_skipped_sessions > 0) rc = skipped_error(res);
  return rc;
}

}  // namespace

// Each distinct profile (the spec's and its replica groups') and trace file, once.
void check_sweep_inputs(const Sweep& sweep, const Shard& shard) {
  std::set<std::string> seen;  // profile keys and trace paths already checked
  for (const auto& r : sweep.runs) {
    if (!shard.contains(r)) continue;
    const Experiment& e = r.experiment;
    try {
      const std::string& path = e.trace.path;
      if (!path.empty() && path != "-" && seen.insert("trace\n" + path).second)
        check_input_file(path, "a trace (trace.path)");
      std::string key = "profile\n" + e.profile;
      for (const auto& g : e.cluster.groups) key += "\n" + g.profile;
      if (seen.insert(key).second) load_group_profiles(e, sim::load_profile(e.profile));
    } catch (const InputError& ie) {
      throw InputError(fmt::format("sweep run {} ({}): {}", r.index, r.label(), ie.what()));
    }
  }
}

int run_sweep(const SweepRequest& req) {
  const Shard& shard = req.shard;
  Sweep sweep = load_sweep(req.spec, req.overrides);
  if (req.list) {
    for (const auto& r : sweep.runs)
      if (shard.contains(r)) fmt::print("{:>5}  {}\n", r.index, r.label());
    return 0;
  }
  const std::string out =
      req.out.empty() ? default_out_dir(sweep.base.name, req.overrides) : req.out;
  if (req.resume && req.fresh) throw UsageError{"give --resume or --fresh, not both", req.usage};
  check_out_dir(out, "--out");
  check_sweep_inputs(sweep, shard);  // before the folder is made: a refusal leaves nothing
  make_out_dir(out, "--out");

  const JournalMode mode = req.fresh    ? JournalMode::kFresh
                           : req.resume ? JournalMode::kResume
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
             std::min(req.jobs, std::max<size_t>(todo, 1)));

  SweepOptions o;
  o.jobs = req.jobs;
  o.shard = shard;
  o.checks = req.checks;
  o.threads = req.threads;
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
  if (req.keep_runs) o.keep_runs_dir = (fs::path(out) / "runs").string();
  const bool tty = isatty(STDERR_FILENO) != 0;
  const auto t0 = std::chrono::steady_clock::now();
  o.on_done = [&](const SweepProgress& p) {
    if (tty) {
      sweep_draw_bar(p.done, p.total,
                     std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    } else {
      fmt::print(stderr, "[{}/{}] {}: {:.2f} s\n", p.done, p.total, p.run.label(), p.seconds);
    }
  };
  if (tty && todo > 0) sweep_draw_bar(0, todo, 0);
  SweepResults res = run_sweep(sweep, o);

  for (const auto& n : res.notes) fmt::print(stderr, "note: {}\n", n);
  for (const auto& w : res.warnings) fmt::print(stderr, "warning: {}\n", w);
  return finish_sweep(sweep, res, journal, shard, out, o.keep_runs_dir);
}

int merge_sweep(const std::string& out_csv, const std::vector<std::string>& inputs, bool journals) {
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
  write_file_atomic(out_csv, text);
  write_aggregate(out_csv, text);
  if (!journals)
    fmt::print(stderr,
               "note: results.csv files do not say how many runs their sweep has: runs past "
               "index {} would go unnoticed (journals are checked in full)\n",
               rows > 0 ? rows - 1 : 0);
  const size_t nfiles = journals ? journal_paths(inputs, "shard-").size() : inputs.size();
  fmt::print("merged {} file(s), {} run(s) -> {}\n", nfiles, rows, out_csv);
  return 0;
}

}  // namespace isim::exp
