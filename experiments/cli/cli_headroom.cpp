// isim headroom: per policy, the highest arrival rate (or closed-loop users) at which a spec
// meets its SLO (experiments/headroom/headroom.h); writes headroom.json, headroom.csv and,
// through experiments/plots/plot_headroom.py, headroom.png.
#include <unistd.h>

#include <filesystem>
#include <iostream>

#include <fmt/format.h>
#include <boost/program_options.hpp>

#include "core/atomic_file.h"
#include "core/cli_args.h"
#include "core/cli_help.h"
#include "core/input_error.h"
#include "core/interrupt.h"
#include "core/out_path.h"
#include "experiments/cli/cli.h"
#include "experiments/headroom/headroom.h"
#include "experiments/headroom/headroom_report.h"
#include "experiments/plots/plot_context.h"
#include "experiments/run/run.h"
#include "experiments/run/run_script.h"

namespace isim::exp {

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace {

std::string headroom_plot_script() {
  if (const char* p = std::getenv("ISIM_PLOT_HEADROOM_SCRIPT"); p && *p) return p;
  return ISIM_PLOT_HEADROOM_SCRIPT_DEFAULT;
}

Help headroom_help() {
  return {
      "usage: isim headroom SPEC.yaml [--seeds N] [--target S] [--tolerance F] [--jobs N]\n"
      "                     [--out DIR] [--no-plot] [-p key=value ...]\n",
      "Per policy of the spec, the highest arrival.rate (poisson) or arrival.users (users,\n"
      "a closed loop) at which at least --target of the sessions meet every limit of the\n"
      "spec's `slo:` (and of the turns, its turn limits). Each seed searches on its own:\n"
      "from the spec's value, doubling while it passes or halving while it fails (at most\n"
      "10 times), then bisecting until hi - lo <= tolerance x lo. Prints mean and worst\n"
      "seed (the band) and what limits it at the first failing load (memory, queue, ttft,\n"
      "tpot, latency); writes headroom.json, headroom.csv and headroom.png with " +
          headroom_plot_script() +
          "\n($ISIM_PLOT_HEADROOM_SCRIPT overrides; $ISIM_PYTHON picks the interpreter).\n"
          "Exit 0: done; 2: bad input (a spec without slo:, another arrival process). "
          "See docs/headroom.md.\n",
      "  isim headroom experiments/specs/quickstart.yaml\n"
      "  isim headroom experiments/specs/quickstart.yaml --seeds 5 --target 0.95 -p "
      "policies=[preserve]\n"};
}

// Adds --KEY for each knob of HeadroomKnobs (its help, default and bound from the table).
struct KnobFlags {
  po::options_description& opts;
  template <class T>
  void operator()(const char* key, T& member, const Bound& b, const char* what, const char* help) {
    opts.add_options()(
        key, po::value<std::string>(),
        fmt::format("{} ({}; default {}, {})", help, what, member, b.text()).c_str());
  }
};

// Reads --KEY for each knob given: parsed as the member's type, then checked against its bound.
struct KnobFlagReader {
  const po::variables_map& vm;
  template <class T>
  void operator()(const char* key, T& member, const Bound& b, const char* what, const char*) {
    if (!vm.count(key)) return;
    const std::string& text = vm[key].as<std::string>();
    const std::optional<T> v = parse_param<T>(text);
    if (!v) throw InputError(fmt::format("--{}: expected {}, got '{}'", key, what, text));
    const std::string why = b.check(static_cast<double>(*v));
    if (!why.empty()) throw InputError(fmt::format("--{}: {}, got '{}'", key, why, text));
    member = *v;
  }
};

// Draws headroom.png from headroom.json; a note (never a failure) without matplotlib.
int plot_headroom(const std::string& out, const Experiment& e) {
  const fs::path json = fs::path(out) / "headroom.json";
  std::string tried;
  if (!fs::exists(headroom_plot_script())) {
    fmt::print(stderr,
               "note: plot: {} not found (set ISIM_PLOT_HEADROOM_SCRIPT); headroom.json "
               "was written\n",
               headroom_plot_script());
    return 0;
  }
  const std::string py = find_plot_python(&tried);
  if (py.empty()) {
    fmt::print(stderr,
               "note: plot: no python3 with matplotlib (tried {}; install Debian's "
               "python3-matplotlib or set ISIM_PYTHON); headroom.json was written\n",
               tried);
    return 0;
  }
  write_plot_context(out, plot_context({&e}));
  const std::string png = (fs::path(out) / "headroom.png").string();
  if (int rc = run_script({py, headroom_plot_script(), json.string(), png}, true, false); rc != 0) {
    fmt::print(stderr, "isim: error: plot: {} {} exited with {}; headroom.json was written\n", py,
               headroom_plot_script(), rc);
    return 2;
  }
  fmt::print("plot: {}\n", png);
  return 0;
}

}  // namespace

int cmd_headroom(const Args& args) {
  po::options_description opts, hidden;
  std::vector<std::string> overrides;
  std::string out;
  HeadroomKnobs knobs;
  opts.add_options()("help,h", "show this help")(
      "jobs,j", po::value<std::string>(), "worker threads, 1..1024 (default: the number of cores)")(
      "out,o", po::value(&out),
      "output folder (default results/<name>-headroom, or results/<name>-headroom-<overrides> "
      "with -p)")("no-plot", "write headroom.json and headroom.csv only")(
      "set,p", override_flag(overrides, false), "override a spec key: -p arrival.rate=4")(
      "add", override_flag(overrides, true), kAddHelp);
  KnobFlags add{opts};
  knobs.knobs(add);
  hidden.add_options()("spec", po::value<std::string>(), "experiment spec YAML");
  po::positional_options_description pos;
  pos.add("spec", 1);
  const po::variables_map vm = parse_visible_hidden(args, opts, hidden, pos);
  if (vm.count("help")) return print_help(headroom_help(), opts);
  if (!vm.count("spec")) throw usage_error("needs SPEC.yaml", headroom_help());
  KnobFlagReader read{vm};
  knobs.knobs(read);
  const size_t jobs = jobs_flag(vm);

  const Experiment e = load_experiment(vm["spec"].as<std::string>(), overrides);
  check_headroom_spec(e, knobs);
  if (out.empty()) out = default_out_dir(e.name + "-headroom", overrides);
  check_out_dir(out, "--out");
  {  // the trace and profiles at the spec's own load, read before any search or folder
    const Inputs in = prepare(e);
    check_kv_capacity(e, in);
    for (const auto& n : in.notes) fmt::print(stderr, "note: {}\n", n);
    for (const auto& w : in.warnings) fmt::print(stderr, "warning: {}\n", w);
  }
  const size_t searches = e.policies.size() * static_cast<size_t>(knobs.seeds);
  fmt::print(stderr, "headroom {}: {} policy(ies) x {} seed(s) searched over {}; {} job(s)\n",
             e.name, e.policies.size(), knobs.seeds, headroom_knob(e), std::min(jobs, searches));
  set_interrupt_note("nothing was written to " + out +
                     ": headroom writes it when every search "
                     "has ended");
  const HeadroomResult res = run_headroom(e, knobs, jobs, [&](const HeadroomProgress& p) {
    fmt::print(stderr, "[{}/{}] searches, {} runs\n", p.searches_done, p.searches_total,
               p.runs_done);
  });
  make_out_dir(out, "--out");  // after the search: a refusal or an interrupt leaves no folder
  const fs::path json = fs::path(out) / "headroom.json", csv = fs::path(out) / "headroom.csv";
  write_file_atomic(json.string(), headroom_json(res, e));
  write_file_atomic(csv.string(), headroom_csv(res));
  std::cout << headroom_table(res);
  fmt::print("results: {}, {}\n", json.string(), csv.string());
  if (vm.count("no-plot")) return 0;
  return plot_headroom(out, e);
}

}  // namespace isim::exp
