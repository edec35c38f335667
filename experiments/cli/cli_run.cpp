#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <optional>

#include <fmt/format.h>
#include <boost/program_options.hpp>

#include "core/cli_args.h"
#include "core/cli_help.h"
#include "core/interrupt.h"
#include "core/out_path.h"
#include "core/strict_yaml.h"
#include "experiments/cli/checks_flags.h"
#include "experiments/cli/cli.h"
#include "experiments/cli/threads_flag.h"
#include "experiments/plots/plot_context.h"
#include "experiments/run/bench_json.h"
#include "experiments/run/outputs.h"
#include "experiments/run/progress.h"
#include "experiments/run/run_experiment.h"
#include "experiments/run/run_script.h"
#include "experiments/run/run_views.h"
#include "experiments/spec/run_flags.h"

namespace isim::exp {

namespace po = boost::program_options;

namespace {

std::string replicas_plot_script() {
  if (const char* p = std::getenv("ISIM_PLOT_REPLICAS_SCRIPT"); p && *p) return p;
  return ISIM_PLOT_REPLICAS_SCRIPT_DEFAULT;
}

// replicas.png beside a fleet run's replicas.csv (titled from plot_context.json, written there);
// a note (never a failure) without matplotlib.
void plot_replicas(const std::string& dir, const Experiment& e) {
  std::string tried;
  const std::string py = find_plot_python(&tried);
  if (py.empty()) {
    fmt::print(stderr, "note: no python3 with matplotlib ({}): {}/replicas.png not drawn\n", tried,
               dir);
    return;
  }
  const auto csv = (std::filesystem::path(dir) / "replicas.csv").string();
  const auto png = (std::filesystem::path(dir) / "replicas.png").string();
  write_plot_context(dir, plot_context({&e}));
  if (run_script({py, replicas_plot_script(), csv, png}, true, false) != 0)
    fmt::print(stderr, "warning: {} failed: {} not drawn\n", replicas_plot_script(), png);
}

void add_progress_options(po::options_description& opts, po::options_description& hidden) {
  opts.add_options()("progress", po::bool_switch(),
                     "show each policy's progress and an ETA on stderr (default: when stderr is "
                     "a terminal)")("no-progress", po::bool_switch(), "never show it");
  hidden.add_options()("progress-interval", po::value<std::string>(),
                       "seconds between progress prints (default 1; 0: every report)");
}

ProgressOptions progress_from(const po::variables_map& vm) {
  const bool on = vm["progress"].as<bool>(), off = vm["no-progress"].as<bool>();
  if (on && off) throw InputError("--progress and --no-progress: give one of them, not both");
  ProgressOptions o;
  o.terminal = isatty(STDERR_FILENO) != 0;
  o.enabled = on || (o.terminal && !off);
  o.interval_s = flag_value<double>(vm, "progress-interval", 1.0, "a number of seconds >= 0",
                                    [](double s) { return s >= 0; });
  return o;
}

const Help kRunHelp{
    "usage: isim run EXPERIMENT.yaml [-p key=value ...] [--out DIR]\n"
    "       isim run --trace T --profile P --policy NAME [options]\n"
    "       either form: [--trace-events FILE.json [--trace-events-limit N]] [--plot]\n"
    "                    [--metrics FILE.om [--metrics-epoch S]] [--bench-json FILE.json]\n"
    "                    [--progress | --no-progress] [--threads N]\n",
    "Runs every policy of the experiment (or the one --policy of the flag form) and prints a\n"
    "summary row per policy; each policy's files go to DIR/<policy>/. Exit 0: done; 2: bad\n"
    "input, or sessions that can never fit were skipped.\n",
    "  isim run experiments/specs/quickstart.yaml\n"
    "  isim run experiments/specs/quickstart.yaml -p arrival.rate=2 --out results/rate2\n"
    "  isim run --trace t.jsonl --profile calibrate/profiles/a100-80g-gptj-6b.infercept.yaml \\\n"
    "      --policy preserve --rate 2  (t.jsonl from isim trace gen default t.jsonl)\n"};
// isim run's flags: the experiment's (spec/run_flags.h) and how to run and show it.
struct RunFlags {
  RunSpecFlags spec;
  std::string out;  // --out; "" = results/<name>[-<overrides>]
  cluster::Checks checks;
  RunViews views;
  ProgressOptions progress;
  std::optional<std::string> bench_json;  // --bench-json FILE
  int32_t threads = 1;                    // --threads N
};

// A flag's text, when given.
std::optional<std::string> given(const po::variables_map& vm, const char* flag) {
  if (!vm.count(flag)) return std::nullopt;
  return vm[flag].as<std::string>();
}

// The flags of isim run, checked for the form given; nullopt after --help (printed).
std::optional<RunFlags> parse_run_flags(const Args& args) {
  po::options_description opts, hidden;
  RunFlags f;
  RunSpecFlags& s = f.spec;
  opts.add_options()("help,h", "show this help")("set,p", override_flag(s.overrides, false),
                                                 "override a spec key: -p arrival.rate=2")(
      "add", override_flag(s.overrides, true), kAddHelp)(
      "out,o", po::value(&f.out),
      "output folder (default results/<name>, or results/<name>-<overrides> with -p)")(
      "trace", po::value(&s.trace), "trace file (flag form)")(
      "from", po::value<std::string>(),
      "trace format (default jsonl; isim trace --help lists them)")(
      "profile", po::value(&s.profile), "profile YAML (flag form)")(
      "policy", po::value(&s.policy), "policy name (flag form; isim list)")(
      "scheduler", po::value<std::string>(), "vllm-v0 (default) or chunked")(
      "rate", po::value<std::string>(),
      "Poisson arrival rate, sessions/s (default: replay trace times)")(
      "seed", po::value<std::string>(), "random seed (default 1)")(
      "executor", po::value<std::string>(), "executor (default sim)");
  add_checks_options(opts);
  add_run_view_options(opts);
  add_progress_options(opts, hidden);
  opts.add_options()("bench-json", po::value<std::string>(),
                     "also write each policy's bench.json (vllm bench serve's result JSON) to "
                     "FILE.json; several policies: FILE.POLICY.json");
  add_threads_option(opts);
  hidden.add_options()("experiment", po::value<std::string>(), "experiment YAML");
  po::positional_options_description pos;
  pos.add("experiment", 1);
  const po::variables_map vm = parse_visible_hidden(args, opts, hidden, pos);
  if (vm.count("help")) {
    print_help(kRunHelp, opts);
    return std::nullopt;
  }
  f.checks = checks_from(vm);
  f.views = run_views_from(vm);
  f.progress = progress_from(vm);
  s.rate = given(vm, "rate");
  s.seed = given(vm, "seed");
  s.from = given(vm, "from");
  s.scheduler = given(vm, "scheduler");
  s.executor = given(vm, "executor");
  f.bench_json = given(vm, "bench-json");
  f.threads = threads_from(vm);
  if (vm.count("experiment")) {
    if (!s.trace.empty() || !s.profile.empty() || !s.policy.empty())
      throw UsageError{"give an experiment file or --trace/--profile/--policy, not both", ""};
    // With a spec, --rate and --seed are its keys, checked as -p ones are; the other flags of
    // the flag form have no meaning here and are refused rather than ignored.
    for (const char* flag : {"from", "scheduler", "executor"})
      if (vm.count(flag) && !vm[flag].defaulted())
        throw UsageError{std::string("--") + flag +
                             " belongs to the flag form (--trace ...); with "
                             "EXPERIMENT.yaml set the spec's key with -p",
                         "(see isim run --help)\n"};
    s.spec = vm["experiment"].as<std::string>();
  } else if (s.trace.empty() || s.profile.empty() || s.policy.empty()) {
    throw usage_error("needs EXPERIMENT.yaml, or all of --trace, --profile and --policy", kRunHelp);
  }
  return f;
}

// The files a run reads: its spec, trace and profiles (an output flag must name none of them).
std::vector<std::string> run_inputs(const std::string& spec, const Experiment& e) {
  std::vector<std::string> in = {spec, e.trace.path, e.profile};
  for (const auto& g : e.cluster.groups) in.push_back(g.profile);
  return in;
}

}  // namespace

int cmd_run(const Args& args) {
  std::optional<RunFlags> f = parse_run_flags(args);
  if (!f) return 0;
  const RunExperiment x = load_run_experiment(f->spec);  // spec/
  const Experiment& e = x.experiment;
  const std::string out = f->out.empty() ? default_out_dir(e.name, x.out_keys) : f->out;
  check_run_views(f->views);  // before the folder is made: a refusal leaves nothing behind
  check_out_dir(out, "--out");
  if (f->bench_json) check_bench_json_flag(*f->bench_json, e, run_inputs(f->spec.spec, e));
  const Inputs in = prepare(e);  // the trace and profiles, read before the folder is made
  check_kv_capacity(e, in);
  make_out_dir(out, "--out");
  const RunReport r = run_experiment(
      e, in, out, f->checks, f->views, f->progress,
      [&](const std::string& dir) { plot_replicas(dir, e); }, f->threads);
  if (f->bench_json) copy_bench_json(*f->bench_json, e, out);
  return print_run_report(e, r);
}

}  // namespace isim::exp
