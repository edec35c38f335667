// isim validate: the simulator's fidelity against live execution, and the live integrity checks;
// with --against vllm, against a real vLLM run's recorded requests.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <fmt/format.h>
#include <boost/program_options.hpp>

#include "calibrate/measure.h"
#include "core/atomic_file.h"
#include "core/cli_args.h"
#include "core/cli_help.h"
#include "core/input_error.h"
#include "core/out_path.h"
#include "experiments/cli/cli.h"
#include "experiments/run/outputs.h"
#include "experiments/validate/validate.h"
#include "experiments/validate/validate_vllm.h"

namespace isim::exp {

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace {

std::string percent(double e) {
  if (std::isinf(e)) return "inf";
  return fmt::format("{:+.1f}%", 100.0 * e);
}

const Help kAgainstHelp{
    "usage: isim validate --against vllm RUN_DIR --profile PROFILE.yaml [--out DIR]\n"
    "                     [-p key=value ...] [--scheduler NAME] [--usage-context C]\n",
    "Replays RUN_DIR/requests.jsonl on the engine settings of RUN_DIR/meta.json (policy\n"
    "discard; a setting meta.json does not state takes vLLM's default of the run's version,\n"
    "printed as an assumption), at the predicted KV block count and, when the run states\n"
    "vLLM's count, again at that count (DIR/at-vllm-blocks). Prints real, sim and the\n"
    "relative error per metric, the capacity error and a summary line naming the latency and\n"
    "the capacity error; writes against.json, and against.csv, against_requests.csv and\n"
    "against.png beside each replay's usual outputs.\n"
    "Exit 0: compared; 2: bad input, or a layout not simulated yet (data, pipeline or expert\n"
    "parallel).\n",
    "  isim validate --against vllm ../shared/data/llmservingsim/vllm-RTX4090-llama-3.1-8b \\\n"
    "      --profile calibrate/profiles/rtx4090-llama-3.1-8b.llmservingsim.yaml\n"
    "  isim validate --against vllm RUN_DIR --profile P.yaml -p engine.gpu_blocks=2588\n"};

const Help kValidateHelp{
    "usage: isim validate EXPERIMENT.yaml [--calibrate-first] [-p key=value ...] [--out DIR]\n"
    "       isim validate --against vllm RUN_DIR --profile P (see --against vllm --help)\n"
    "       isim validate --kv-logs DIR (vLLM startup logs; see --kv-logs DIR --help)\n",
    "Runs every policy of the spec with `sim` (on its profile) and with its live executor,\n"
    "prints sim, live and the relative error per metric, and writes validation.csv.\n"
    "Exit 0: integrity checks passed; 1: a check failed, token streams differ, or the\n"
    "comparison is noisy (calibration off its target, host loaded; --accept-noisy); 2: bad\n"
    "input.\n",
    "  isim validate experiments/specs/validate-cpu.yaml\n"
    "  isim validate experiments/specs/validate-cpu.yaml --calibrate-first -p trace.sessions=20\n"};

bool wants_against(const Args& args) {
  return std::any_of(args.begin(), args.end(), [](const std::string& a) {
    return a == "--against" || a.starts_with("--against=");
  });
}

int cmd_validate_against(const Args& args) {
  po::options_description opts, hidden;
  std::string against;
  AgainstOptions o;
  opts.add_options()("help,h", "show this help")("against", po::value(&against),
                                                 "what the run is: vllm")(
      "profile", po::value(&o.profile), "profile YAML of the run's GPU and model")(
      "out,o", po::value(&o.out), "output folder (default results/against-vllm)")(
      "set,p", override_flag(o.overrides, false),
      "override a spec key after the run's settings: -p engine.gpu_blocks=2588")(
      "add", override_flag(o.overrides, true), kAddHelp)(
      "scheduler", po::value(&o.scheduler),
      (std::string("scheduler (default ") + kAgainstVllmScheduler + ")").c_str())(
      "usage-context", po::value(&o.usage_context),
      "how the run's vLLM was started, for the batch defaults of a meta.json that does not "
      "state them: engine (AsyncLLM, LLMServingSim's runner; default), openai-api-server "
      "(vllm serve), llm-class (vllm.LLM)");
  hidden.add_options()("run-dir", po::value(&o.run_dir), "the vLLM run folder");
  po::positional_options_description pos;
  pos.add("run-dir", 1);
  const po::variables_map vm = parse_visible_hidden(args, opts, hidden, pos);
  if (vm.count("help")) return print_help(kAgainstHelp, opts);
  if (against != "vllm")
    throw usage_error("--against: unknown '" + against + "'; valid: vllm", kAgainstHelp);
  if (o.run_dir.empty()) throw usage_error("needs RUN_DIR", kAgainstHelp);
  if (o.profile.empty()) throw usage_error("needs --profile PROFILE.yaml", kAgainstHelp);
  if (o.out.empty()) o.out = "results/against-vllm";
  check_out_dir(o.out, "--out");
  return run_against_vllm(o);
}

}  // namespace

int cmd_validate_kv_logs(const Args& args);  // experiments/cli/cli_validate_kv.cpp

int cmd_validate(const Args& args) {
  if (wants_against(args)) return cmd_validate_against(args);
  if (std::any_of(args.begin(), args.end(), [](const std::string& a) {
        return a == "--kv-logs" || a.starts_with("--kv-logs=");
      }))
    return cmd_validate_kv_logs(args);
  po::options_description opts, hidden;
  std::vector<std::string> overrides;
  std::string out;
  opts.add_options()("help,h", "show this help")("set,p", override_flag(overrides, false),
                                                 "override a spec key: -p trace.sessions=20")(
      "add", override_flag(overrides, true), kAddHelp)(
      "out,o", po::value(&out),
      "output folder (default results/<name>-validate, or ...-validate-<overrides> with -p)")(
      "calibrate-first", "calibrate the live backend (validate.model) and validate against it")(
      "accept-noisy",
      "exit 0 even when the calibration missed its target or the host was loaded (by default "
      "either makes the comparison untrustworthy: exit 1)")(
      "check-invariants", "check engine invariants after every iteration");
  hidden.add_options()("experiment", po::value<std::string>(), "experiment YAML");
  po::positional_options_description pos;
  pos.add("experiment", 1);
  const po::variables_map vm = parse_visible_hidden(args, opts, hidden, pos);
  if (vm.count("help")) return print_help(kValidateHelp, opts);
  if (!vm.count("experiment")) throw usage_error("needs EXPERIMENT.yaml", kValidateHelp);
  Experiment e = load_experiment(vm["experiment"].as<std::string>(), overrides);
  if (e.executor != "live-cpu" && e.executor != "live-cuda")
    throw InputError(fmt::format(
        "{}: executor: isim validate compares sim with a live executor (live-cpu or live-cuda); "
        "this spec runs '{}'",
        e.origin, e.executor));
  if (out.empty()) out = default_out_dir(e.name + "-validate", overrides);
  make_out_dir(out, "--out");
  const bool check = vm.count("check-invariants") > 0;

  std::vector<std::string> noise;  // why the comparison cannot be trusted
  Inputs in = prepare(e, /*with_profile=*/!vm.count("calibrate-first"));
  if (vm.count("calibrate-first")) {
    if (e.validate.model.empty())
      throw InputError(e.origin +
                       ": validate.model: --calibrate-first needs the model to calibrate "
                       "(validate: {model: M.yaml})");
    calib::CalibrateOptions co;
    co.model_path = e.validate.model;
    co.backend = e.executor == "live-cpu" ? "cpu" : "cuda";
    co.quick = e.validate.quick;
    // Measure what this workload runs rather than extrapolate to it: batches up to the token
    // budget, contexts up to the longest session's.
    co.cover_tokens = e.engine.max_num_batched_tokens;
    for (const auto& s : in.trace) co.cover_context = std::max(co.cover_context, s.max_context());
    if (auto it = e.executor_params.values.find("seed"); it != e.executor_params.values.end())
      co.seed = std::stoull(it->second);
    co.progress = [](const std::string& line) { fmt::print(stderr, "calibrate: {}\n", line); };
    // A calibration disturbed by other load predicts its own whole-batch validation batches
    // badly; measure again (at most kAttempts times) and keep the best.
    constexpr int kAttempts = 3;
    constexpr double kGood = 0.05;
    sim::Profile p = calib::calibrate(co);
    for (int attempt = 2; attempt <= kAttempts && p.validation_mean_abs_error() > kGood;
         ++attempt) {
      fmt::print(
          "calibration {} of {}: whole-batch validation mean |error| {:.1f}% > {:.0f}%, "
          "measuring again\n",
          attempt - 1, kAttempts, 100.0 * p.validation_mean_abs_error(), 100.0 * kGood);
      sim::Profile again = calib::calibrate(co);
      if (again.validation_mean_abs_error() < p.validation_mean_abs_error()) p = std::move(again);
    }
    if (auto why = calibration_problem(p.validation_mean_abs_error(), kGood, kAttempts);
        !why.empty())
      noise.push_back(why);
    e.profile = (fs::path(out) / "profile.yaml").string();
    sim::write_profile_file(e.profile, p);
    in.profile = sim::load_profile(e.profile);
    fmt::print(
        "calibrated {} on {}: saturation_tokens {}, whole-batch validation mean |error| "
        "{:.1f}% -> {}\n",
        p.model.name, co.backend, p.saturation_tokens, 100.0 * p.validation_mean_abs_error(),
        e.profile);
  }

  for (const auto& n : in.notes) fmt::print("note: {}\n", n);
  Experiment es = e;
  es.executor = "sim";
  es.executor_params = {};

  std::vector<PolicyValidation> rows;
  std::vector<std::pair<std::string, cluster::RunResult>> lives;
  bool failed = false;
  for (const PolicySpec& p : e.policies) {
    cluster::RunResult live = run_policy(e, in, p, check);
    write_run((fs::path(out) / p.name / "live").string(), e, in, p, live);
    cluster::RunResult simr = run_policy(es, in, p, check);
    write_run((fs::path(out) / p.name / "sim").string(), es, in, p, simr);
    PolicyValidation pv{p.name, compare_runs(simr.summary, live.summary)};
    const auto& rep = live.executor;
    fmt::print(
        "\n{}: {} ran {} iterations in {} s of compute ({} s real) for {:.1f} s of virtual "
        "time; load average {} -> {} on {} hardware threads\n",
        p.name, e.executor, rep.fact("iterations_executed"), rep.fact("compute_s"),
        rep.fact("real_s"), live.summary.makespan_s, rep.fact("host_load_begin"),
        rep.fact("host_load_end"), rep.fact("hardware_threads"));
    fmt::print("  {:<28} {:>14} {:>14} {:>9}\n", "metric", "sim", "live", "error");
    for (const auto& m : pv.metrics)
      fmt::print("  {:<28} {:>14.6g} {:>14.6g} {:>9}\n", m.metric, m.sim, m.live,
                 percent(m.error()));
    // A fact the host could not give (no /proc/loadavg) reads as 0: no evidence of load.
    auto number = [&](const char* k) { return parse_param<double>(rep.fact(k)).value_or(0.0); };
    if (auto why = load_problem(p.name, number("host_load_begin"), number("host_load_end"),
                                static_cast<unsigned>(number("hardware_threads")));
        !why.empty()) {
      fmt::print("  warning: {}\n", why);
      noise.push_back(why);
    }
    const int64_t violations = std::stoll(rep.fact("integrity.violations"));
    fmt::print(
        "  integrity: {} swapped blocks and {} recomputed positions checked (max |error| "
        "{}), fault injection: {}: {}\n",
        rep.fact("integrity.swapped_blocks_checked"),
        rep.fact("integrity.recomputed_positions_checked"),
        rep.fact("integrity.recompute_max_abs_error"), rep.fact("fault"),
        violations == 0 ? "passed" : fmt::format("{} VIOLATIONS", violations));
    for (size_t i = 0; i < rep.violations.size() && i < 5; ++i)
      fmt::print("    {}\n", rep.violations[i]);
    if (violations > 0) failed = true;
    rows.push_back(std::move(pv));
    lives.emplace_back(p.name, std::move(live));
  }

  fmt::print("\ntoken streams ({} sessions, greedy argmax):", in.trace.size());
  bool same = true;
  for (size_t k = 1; k < lives.size(); ++k) {
    const std::string d = first_divergence(in.trace, lives[0].first, lives[0].second,
                                           lives[k].first, lives[k].second);
    if (d.empty()) continue;
    same = false;
    fmt::print("\n  DIFFER: {}", d);
  }
  if (same)
    fmt::print(" identical under {}\n", lives.size() == 1 ? "the one policy run" : "every policy");
  else
    fmt::print("\n");
  if (!same) failed = true;

  write_file_atomic((fs::path(out) / "validation.csv").string(), validation_csv(rows));
  // The headline: mean |error| of the three latency means across policies.
  double sum = 0;
  int n = 0;
  for (const auto& r : rows)
    for (const auto& m : r.metrics)
      if (m.metric == "ttft_s.mean" || m.metric == "tpot_s.mean" ||
          m.metric == "normalized_latency_s.mean") {
        sum += std::fabs(m.error());
        ++n;
      }
  fmt::print("mean |error| of mean TTFT, TPOT and normalized latency over {} policies: {:.1f}%\n",
             rows.size(), n ? 100.0 * sum / n : 0.0);
  fmt::print("wrote {}\n", (fs::path(out) / "validation.csv").string());
  if (!noise.empty()) {
    const bool accept = vm.count("accept-noisy") > 0;
    fmt::print(stderr, "isim validate: {} comparison:\n", accept ? "accepted a noisy" : "a noisy");
    for (const auto& why : noise) fmt::print(stderr, "  - {}\n", why);
    if (!accept) {
      fmt::print(stderr,
                 "rerun on a quiet machine, or give --accept-noisy to accept these figures "
                 "(exit 1)\n");
      failed = true;
    }
  }
  return failed ? 1 : 0;
}

}  // namespace isim::exp
