#include <unistd.h>

#include <filesystem>
#include <iostream>

#include <fmt/format.h>
#include <boost/program_options.hpp>

#include "core/cli_args.h"
#include "core/cli_help.h"
#include "core/interrupt.h"
#include "core/out_path.h"
#include "core/strict_yaml.h"
#include "experiments/cli/checks_flags.h"
#include "experiments/cli/cli.h"
#include "experiments/plots/plot_context.h"
#include "experiments/run/outputs.h"
#include "experiments/run/progress.h"
#include "experiments/run/run_experiment.h"
#include "experiments/run/run_script.h"
#include "experiments/run/run_views.h"
#include "experiments/sweep/sweep.h"

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
    "                    [--progress | --no-progress]\n",
    "Runs every policy of the experiment (or the one --policy of the flag form) and prints a\n"
    "summary row per policy; each policy's files go to DIR/<policy>/. Exit 0: done; 2: bad\n"
    "input, or sessions that can never fit were skipped.\n",
    "  isim run experiments/specs/quickstart.yaml\n"
    "  isim run experiments/specs/quickstart.yaml -p arrival.rate=2 --out results/rate2\n"
    "  isim run --trace t.jsonl --profile calibrate/profiles/a100-80g-gptj-6b.infercept.yaml \\\n"
    "      --policy preserve --rate 2  (t.jsonl from isim trace gen default t.jsonl)\n"};
}  // namespace

int cmd_run(const Args& args) {
  po::options_description opts, hidden;
  std::vector<std::string> overrides;
  std::string out, trace_path, trace_from = "jsonl", profile, policy, scheduler, executor;
  opts.add_options()("help,h", "show this help")("set,p", override_flag(overrides, false),
                                                 "override a spec key: -p arrival.rate=2")(
      "add", override_flag(overrides, true), kAddHelp)(
      "out,o", po::value(&out),
      "output folder (default results/<name>, or results/<name>-<overrides> with -p)")(
      "trace", po::value(&trace_path), "trace file (flag form)")(
      "from", po::value(&trace_from),
      "trace format (default jsonl; isim trace --help lists them)")(
      "profile", po::value(&profile), "profile YAML (flag form)")(
      "policy", po::value(&policy), "policy name (flag form; isim list)")(
      "scheduler", po::value(&scheduler), "vllm-v0 (default) or chunked")(
      "rate", po::value<std::string>(),
      "Poisson arrival rate, sessions/s (default: replay trace times)")(
      "seed", po::value<std::string>(), "random seed (default 1)")(
      "executor", po::value(&executor), "executor (default sim)");
  add_checks_options(opts);
  add_run_view_options(opts);
  add_progress_options(opts, hidden);
  hidden.add_options()("experiment", po::value<std::string>(), "experiment YAML");
  po::positional_options_description pos;
  pos.add("experiment", 1);
  const po::variables_map vm = parse_visible_hidden(args, opts, hidden, pos);
  if (vm.count("help")) return print_help(kRunHelp, opts);
  const cluster::Checks checks = checks_from(vm);
  RunViews views = run_views_from(vm);
  const ProgressOptions progress = progress_from(vm);

  Experiment e;
  std::vector<std::string> out_keys;  // what names the default output folder
  YamlOrigins origins;  // the flag form's values are checked like a spec's, naming the flag
  // A flag's text as the spec value at `slot`, named "--FLAG TEXT" in errors.
  auto from_flag = [&](YAML::Node slot, const std::string& flag) {
    const std::string origin = "--" + flag + " " + vm[flag].as<std::string>();
    slot = parse_yaml_value(vm[flag].as<std::string>(), origin);
    origins.add(slot, origin);
  };
  if (vm.count("experiment")) {
    if (!trace_path.empty() || !profile.empty() || !policy.empty())
      throw UsageError{"give an experiment file or --trace/--profile/--policy, not both", ""};
    // With a spec, --rate and --seed are its keys, checked as -p ones are; the other flags of
    // the flag form have no meaning here and are refused rather than ignored.
    for (const char* f : {"from", "scheduler", "executor"})
      if (vm.count(f) && !vm[f].defaulted())
        throw UsageError{std::string("--") + f +
                             " belongs to the flag form (--trace ...); with "
                             "EXPERIMENT.yaml set the spec's key with -p",
                         "(see isim run --help)\n"};
    std::vector<FlagOverride> flags;  // their errors name the flag, as in the flag form
    if (vm.count("rate")) {
      const std::string rate = vm["rate"].as<std::string>();
      flags.push_back({"arrival.process=poisson", "--rate " + rate});
      flags.push_back({"arrival.rate=" + rate, "--rate " + rate});
    }
    if (vm.count("seed")) {
      const std::string seed = vm["seed"].as<std::string>();
      flags.push_back({"seed=" + seed, "--seed " + seed});
    }
    e = load_experiment(vm["experiment"].as<std::string>(), overrides, flags);
    out_keys = overrides;
    for (const auto& f : flags) out_keys.push_back(f.kv);
  } else {
    if (trace_path.empty() || profile.empty() || policy.empty())
      throw usage_error("needs EXPERIMENT.yaml, or all of --trace, --profile and --policy",
                        kRunHelp);
    YAML::Node y;
    y["name"] = std::filesystem::path(trace_path).stem().string();
    if (vm.count("seed")) from_flag(y["seed"], "seed");
    y["trace"]["from"] = trace_from;
    y["trace"]["path"] = trace_path;
    if (vm.count("rate")) {
      y["arrival"]["process"] = "poisson";
      from_flag(y["arrival"]["rate"], "rate");
    } else {
      y["arrival"]["process"] = "replay";
    }
    y["profile"] = profile;
    y["policy"] = policy;
    if (!scheduler.empty()) y["engine"]["scheduler"] = scheduler;
    if (!executor.empty()) y["executor"] = executor;
    for (const char* f : {"policy", "rate", "seed", "scheduler", "executor"})
      if (vm.count(f)) out_keys.push_back(std::string(f) + "=" + vm[f].as<std::string>());
    out_keys.insert(out_keys.end(), overrides.begin(), overrides.end());
    apply_overrides(y, "command line", overrides, origins);
    e = parse_experiment(y, "command line", ".");
  }
  if (out.empty()) out = default_out_dir(e.name, out_keys);
  make_out_dir(out, "--out");
  check_run_views(views);

  const RunReport r = run_experiment(e, out, checks, views, progress,
                                     [&](const std::string& dir) { plot_replicas(dir, e); });
  fmt::print("{}", summary_table(r.rows));
  if (e.cluster.given) fmt::print("\n{}", fleet_table(r.fleet));
  if (!r.fleet.empty() && r.fleet.front().disagg.enabled) fmt::print("\n{}", disagg_table(r.fleet));
  if (r.skipped > 0) {
    fmt::print(stderr,
               "isim: error: {} session(s) can never fit and were skipped (listed above and in "
               "summary.json); the other results were written\n",
               r.skipped);
    return 2;
  }
  return 0;
}

}  // namespace isim::exp
