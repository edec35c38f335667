// isim plan: the cheapest deployment per policy that serves a peak rate within the SLOs; writes
// plan.csv and, through experiments/plots/plot_plan.py, cost_capacity.png and slo_headroom.png.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <boost/program_options.hpp>

#include "core/atomic_file.h"
#include "core/cli_args.h"
#include "core/cli_help.h"
#include "core/input_error.h"
#include "core/out_path.h"
#include "experiments/cli/cli.h"
#include "experiments/cli/cli_submit.h"
#include "experiments/plan/plan.h"
#include "experiments/plan/plan_shards.h"
#include "experiments/plan/plan_sim.h"
#include "experiments/plots/plot_context.h"
#include "experiments/run/run_script.h"
#include "experiments/sweep/sweep.h"
#include "experiments/sweep/sweep_shards.h"
#include "traces/workload.h"

namespace isim::exp {

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace {

const char* kPlanUsage =
    "usage: isim plan SPEC.yaml [--jobs N] [--out DIR] [--no-plot] [--shard K/N|auto [--resume]]\n"
    "                 [-p key=value ...]\n"
    "       isim plan merge SPEC.yaml JOURNAL|DIR ... [--out DIR] [--no-plot] [-p key=value ...]\n"
    "       isim plan submit --slurm|--k8s SPEC.yaml --tasks N ... (--help)\n";

const Help kMergeHelp{
    "usage: isim plan merge SPEC.yaml JOURNAL|DIR ... [--out DIR] [--no-plot] [-p key=value ...]\n",
    "Joins the journals of a plan's shards (OUT/shards/plan-shard-K-of-N.jsonl) into the\n"
    "table, plan.csv and plots that `isim plan SPEC.yaml` writes, byte for byte. Give the spec\n"
    "and -p overrides the shards ran with.\n",
    "  isim plan merge experiments/specs/plan-agents.yaml results/plan-agents/shards\n"
    "  isim plan merge experiments/specs/plan-agents.yaml a.jsonl b.jsonl --out results/p "
    "--no-plot\n"};

std::string plan_plot_script() {
  if (const char* p = std::getenv("ISIM_PLOT_PLAN_SCRIPT"); p && *p) return p;
  return ISIM_PLOT_PLAN_SCRIPT_DEFAULT;
}

Help plan_help() {
  return {kPlanUsage,
          "For every deployment x policy, bisects the arrival rate one replica sustains within\n"
          "every SLO (per seed). For every router, it then simulates fleets at peak_rate from\n"
          "the guess ceil(peak / capacity): down while they pass, up while they fail. The\n"
          "smallest passing fleet is the size; GPUs = replicas x tp, cost = GPUs x price.\n"
          "Prints the ranked table, writes plan.csv, and draws cost_capacity.png and\n"
          "slo_headroom.png with " +
              plan_plot_script() +
              " ($ISIM_PLOT_PLAN_SCRIPT overrides;\n$ISIM_PYTHON picks the interpreter). "
              "See docs/capacity-planning.md.\n",
          "  isim plan experiments/specs/plan-agents.yaml --jobs 4\n"
          "  isim plan experiments/specs/plan-agents.yaml -p peak_rate=80 --no-plot\n"
          "  isim plan experiments/specs/plan-agents.yaml --shard 1/4 --out results/pa\n"};
}

bool finished(const PlanProgress& p) {
  return p.searches_done == p.searches_total && p.fleets_done == p.fleets_total;
}

// [#####.....] 12/36 searches, 0/12 fleets, 140 runs, 31.2 s
void draw_bar(const PlanProgress& p, double elapsed) {
  const size_t width = 30;
  const size_t total = p.searches_total + p.fleets_total;
  const size_t fill = total ? (p.searches_done + p.fleets_done) * width / total : width;
  fmt::print(stderr, "\r[{}{}] {}/{} searches, {}/{} fleets, {} runs, {:.1f} s",
             std::string(fill, '#'), std::string(width - fill, '.'), p.searches_done,
             p.searches_total, p.fleets_done, p.fleets_total, p.runs_done, elapsed);
  if (finished(p)) fmt::print(stderr, "\n");
  std::fflush(stderr);
}

// The spec file's root with the overrides applied, as YAML text (the plan fingerprint's input).
std::string spec_yaml(const std::string& path, const std::vector<std::string>& overrides) {
  YAML::Node root = load_spec_yaml(path);
  YamlOrigins origins;
  apply_overrides(root, path, overrides, origins);
  return YAML::Dump(root);
}

// The plots' titles: the deployments' GPUs and models, the workload, the peak rate.
PlotContext plan_plot_context(const PlanSpec& spec) {
  std::vector<const Experiment*> exps;
  for (const auto& c : spec.candidates) exps.push_back(&c.experiment);
  PlotContext ctx = plot_context(exps);  // the workload, and the models of the profiles
  ctx.gpu.clear();
  for (const auto& d : spec.deployments)
    if (std::find(ctx.gpu.begin(), ctx.gpu.end(), d.gpu) == ctx.gpu.end()) ctx.gpu.push_back(d.gpu);
  ctx.rate = {fmt::format("peak {} sessions/s", spec.peak_rate)};
  return ctx;
}

// Prints the table, writes plan.csv and draws the plots (unless no_plot); the exit code.
int report_plan(const PlanResult& res, const std::string& out, bool no_plot) {
  for (const auto& n : res.notes) fmt::print(stderr, "note: {}\n", n);
  std::cout << res.table();
  for (const auto& s : res.savings) fmt::print("saving: {}\n", s);
  for (const auto& w : res.warnings) fmt::print("warning: {}\n", w);
  const fs::path csv = fs::path(out) / "plan.csv";
  write_file_atomic(csv.string(), res.csv());
  fmt::print("results: {}\n", csv.string());
  if (no_plot) return 0;
  write_plot_context(out, plan_plot_context(*res.spec));
  std::string tried;
  if (!fs::exists(plan_plot_script())) {
    fmt::print(stderr,
               "note: plot: {} not found (set ISIM_PLOT_PLAN_SCRIPT); plan.csv was written\n",
               plan_plot_script());
  } else if (const std::string py = find_plot_python(&tried); py.empty()) {
    fmt::print(stderr,
               "note: plot: no python3 with matplotlib (tried {}; install Debian's "
               "python3-matplotlib or set ISIM_PYTHON); plan.csv was written\n",
               tried);
  } else if (int rc = run_script({py, plan_plot_script(), csv.string(), out},
                                 /*quiet_stdout=*/true, /*quiet_stderr=*/false);
             rc != 0) {
    fmt::print(stderr, "isim: error: plot: {} {} exited with {}; plan.csv was written\n", py,
               plan_plot_script(), rc);
    return 2;
  } else {
    for (const char* png : {"cost_capacity.png", "slo_headroom.png"})
      fmt::print("plot: {}\n", (fs::path(out) / png).string());
  }
  return 0;
}

// One shard of the plan: its candidates, each journaled as it finishes.
int run_plan_shard(const PlanSpec& spec, const std::string& yaml, const Shard& shard, bool resume,
                   const std::string& out, const PlanOptions& o) {
  PlanJournal j = open_plan_journal(out, spec, yaml, shard, resume);
  std::vector<size_t> todo;
  size_t mine = 0;
  for (size_t c = 0; c < spec.candidates.size(); ++c) {
    if (!plan_shard_contains(spec, c, shard)) continue;
    ++mine;
    if (!j.kept.count(c)) todo.push_back(c);
  }
  if (resume)
    fmt::print(stderr, "plan shard {}/{}: {} of {} candidate(s) already finished ({})\n", shard.k,
               shard.n, j.kept.size(), mine, j.path);
  if (j.torn)
    fmt::print(stderr, "note: {}: its last line was cut short, and was dropped\n", j.path);
  if (j.dropped > 0)
    fmt::print(stderr, "note: {}: {} finished candidate(s) dropped: {}\n", j.path, j.dropped,
               resume ? "another spec" : "the shard starts anew (--resume keeps them)");
  std::vector<std::string> notes;
  const double tokens = output_tokens_per_session(spec, notes);
  AppendFile log(j.path);
  for (size_t c : todo) {
    fmt::print(stderr, "candidate {} ({})\n", c, candidate_key(spec, c));
    log.append(plan_record_line(spec, c, run_candidates(spec, o, {c}, tokens)));
  }
  fmt::print(
      "journal: {} ({} candidate(s)); when every shard is done: isim plan merge SPEC "
      "{}/shards --out {}\n",
      j.path, mine, out, out);
  return 0;
}

// Every distinct trace the candidates read, loaded and checked (trace::make_workload) before
// the output folder is made, so that a missing or malformed trace leaves no folder behind.
void check_plan_traces(const PlanSpec& spec) {
  std::set<std::string> seen;
  for (const auto& c : spec.candidates) {
    const Experiment& e = c.experiment;
    if (seen.insert(YAML::Dump(e.resolved()["trace"])).second)
      (void)trace::make_workload(e.trace, e.arrival, e.seed, e.origin);
  }
}

int cmd_plan_merge(const Args& args) {
  po::options_description opts, hidden;
  std::vector<std::string> overrides, inputs;
  std::string out, spec_path;
  opts.add_options()("help,h", "show this help")(
      "out,o", po::value(&out),
      "output folder (default results/<name>, or results/<name>-<overrides> with -p)")(
      "no-plot", "write plan.csv only")("set,p", override_flag(overrides, false),
                                        "the -p overrides the shards ran with")(
      "add", override_flag(overrides, true), kAddHelp);
  hidden.add_options()("spec", po::value(&spec_path), "plan spec YAML")(
      "inputs", po::value(&inputs)->composing(), "journals or folders of them");
  po::positional_options_description pos;
  pos.add("spec", 1).add("inputs", -1);
  const po::variables_map vm = parse_visible_hidden(args, opts, hidden, pos);
  if (vm.count("help")) return print_help(kMergeHelp, opts);
  if (spec_path.empty() || inputs.empty())
    throw usage_error("merge needs SPEC.yaml and at least one journal", kMergeHelp);
  const PlanSpec spec = load_plan(spec_path, overrides);
  if (out.empty()) out = default_out_dir(spec.name, overrides);
  check_out_dir(out, "--out");
  const PlanResult res = merge_plan(spec, spec_yaml(spec_path, overrides), inputs);
  make_out_dir(out, "--out");  // after the journals are read: a refusal leaves no folder
  return report_plan(res, out, vm.count("no-plot") > 0);
}

}  // namespace

int cmd_plan(const Args& args) {
  if (!args.empty() && args[0] == "merge")
    return cmd_plan_merge(Args(args.begin() + 1, args.end()));
  if (!args.empty() && args[0] == "submit")
    return cmd_submit("plan", Args(args.begin() + 1, args.end()));
  po::options_description opts, hidden;
  std::vector<std::string> overrides;
  std::string out;
  opts.add_options()("help,h", "show this help")(
      "jobs,j", po::value<std::string>(), "worker threads, 1..1024 (default: the number of cores)")(
      "out,o", po::value(&out),
      "output folder (default results/<name>, or results/<name>-<overrides> with -p)")(
      "no-plot", "write plan.csv only")(
      "set,p", override_flag(overrides, false),
      "override a spec key: -p peak_rate=80, -p deployments.h100-analytic.price_per_gpu_hour=2.5")(
      "add", override_flag(overrides, true), kAddHelp)(
      "shard", po::value<std::string>(),
      "run shard K of N of the candidates (deployment x policy; by a hash of their key), or "
      "auto (Slurm's array or Kubernetes' Indexed Job); writes OUT/shards/ for `plan merge`")(
      "resume", "keep the candidates the shard's journal already holds");
  hidden.add_options()("spec", po::value<std::string>(), "plan spec YAML");
  po::positional_options_description pos;
  pos.add("spec", 1);
  const po::variables_map vm = parse_visible_hidden(args, opts, hidden, pos);
  if (vm.count("help")) return print_help(plan_help(), opts);
  if (!vm.count("spec")) throw usage_error("needs SPEC.yaml", plan_help());
  const size_t jobs = jobs_flag(vm);

  const PlanSpec spec = load_plan(vm["spec"].as<std::string>(), overrides);
  if (out.empty()) out = default_out_dir(spec.name, overrides);
  check_out_dir(out, "--out");
  check_plan_traces(spec);  // before the folder is made: a refusal leaves nothing behind
  make_out_dir(out, "--out");
  const size_t searches = spec.candidates.size() * spec.seeds.size();
  const size_t fleets = spec.candidates.size() * spec.routers.size();
  fmt::print(stderr,
             "plan {}: {} deployment x policy pair(s) x {} seed(s) searched, then {} fleet(s) "
             "({} router(s)) simulated; {} job(s)\n",
             spec.name, spec.candidates.size(), spec.seeds.size(), fleets, spec.routers.size(),
             std::min(jobs, searches));

  PlanOptions o;
  o.jobs = jobs;
  const bool tty = isatty(STDERR_FILENO) != 0;
  const auto t0 = std::chrono::steady_clock::now();
  size_t shown = 0;
  o.on_progress = [&](const PlanProgress& p) {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (tty) {
      draw_bar(p, s);
    } else if (p.searches_done + p.fleets_done > shown) {
      shown = p.searches_done + p.fleets_done;
      fmt::print(stderr, "[{}/{}] searches, [{}/{}] fleets, {} runs, {:.1f} s\n", p.searches_done,
                 p.searches_total, p.fleets_done, p.fleets_total, p.runs_done, s);
    }
  };
  if (vm.count("shard")) {
    const std::string text = vm["shard"].as<std::string>();
    const Shard shard = text == "auto"
                            ? shard_from_env([](const char* v) { return std::getenv(v); })
                            : parse_shard(text);
    o.on_progress = nullptr;  // per candidate, below
    return run_plan_shard(spec, spec_yaml(vm["spec"].as<std::string>(), overrides), shard,
                          vm.count("resume") > 0, out, o);
  }
  if (vm.count("resume")) throw usage_error("--resume is for a shard (--shard)", plan_help());
  if (tty) draw_bar(PlanProgress{0, searches, 0, fleets, 0}, 0);
  const PlanResult res = run_plan(spec, o);

  return report_plan(res, out, vm.count("no-plot") > 0);
}

}  // namespace isim::exp
