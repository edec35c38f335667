// isim validate's work below its flags (validate_command.h): calibrate when asked, run each
// policy live and in the simulator, compare, and judge whether the comparison can be trusted.
#include "experiments/validate/validate_command.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <utility>

#include <fmt/format.h>

#include "calibrate/measure.h"
#include "core/atomic_file.h"
#include "core/input_error.h"
#include "core/out_path.h"
#include "core/params.h"
#include "experiments/run/outputs.h"
#include "experiments/validate/validate.h"

namespace isim::exp {

namespace fs = std::filesystem;

namespace {

std::string signed_percent(double e) {
  if (std::isinf(e)) return "inf";
  return fmt::format("{:+.1f}%", 100.0 * e);
}

// --calibrate-first: calibrates validate.model into OUT/profile.yaml and makes it the
// experiment's profile; a calibration that missed its target adds to `noise`.
void calibrate_first(Experiment& e, Inputs& in, const std::string& out,
                     std::vector<std::string>& noise) {
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
  for (int attempt = 2; attempt <= kAttempts && p.validation_mean_abs_error() > kGood; ++attempt) {
    fmt::print(
        "calibration {} of {}: whole-batch validation mean |error| {:.1f}% > {:.0f}%, "
        "measuring again\n",
        attempt - 1, kAttempts, 100.0 * p.validation_mean_abs_error(), 100.0 * kGood);
    sim::Profile again = calib::calibrate(co);
    if (again.validation_mean_abs_error() < p.validation_mean_abs_error()) p = std::move(again);
  }
  if (auto why = calibration_problem(p.validation_mean_abs_error(), kGood, kAttempts); !why.empty())
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

// Prints one policy's comparison, host load and integrity checks; a loaded host adds to
// `noise`. True when an integrity check failed.
bool report_policy(const Experiment& e, const PolicySpec& p, const PolicyValidation& pv,
                   const cluster::RunResult& live, std::vector<std::string>& noise) {
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
               signed_percent(m.error()));
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
  return violations > 0;
}

// Prints whether the live runs' token streams agree across policies; true when they do.
bool report_token_streams(const Inputs& in,
                          const std::vector<std::pair<std::string, cluster::RunResult>>& lives) {
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
  return same;
}

// Writes validation.csv and prints the headline: mean |error| of the three latency means
// across policies.
void write_validation(const std::string& out, const std::vector<PolicyValidation>& rows) {
  write_file_atomic((fs::path(out) / "validation.csv").string(), validation_csv(rows));
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
}

// Prints why the comparison is noisy; true when that fails the command (no --accept-noisy).
bool refuse_noise(const std::vector<std::string>& noise, bool accept) {
  if (noise.empty()) return false;
  fmt::print(stderr, "isim validate: {} comparison:\n", accept ? "accepted a noisy" : "a noisy");
  for (const auto& why : noise) fmt::print(stderr, "  - {}\n", why);
  if (accept) return false;
  fmt::print(stderr,
             "rerun on a quiet machine, or give --accept-noisy to accept these figures "
             "(exit 1)\n");
  return true;
}

}  // namespace

int run_validation(const ValidateRequest& r) {
  Experiment e = load_experiment(r.spec, r.overrides);
  if (e.executor != "live-cpu" && e.executor != "live-cuda")
    throw InputError(fmt::format(
        "{}: executor: isim validate compares sim with a live executor (live-cpu or live-cuda); "
        "this spec runs '{}'",
        e.origin, e.executor));
  const std::string out =
      r.out.empty() ? default_out_dir(e.name + "-validate", r.overrides) : r.out;
  check_out_dir(out, "--out");
  const bool check = r.check_invariants;

  std::vector<std::string> noise;  // why the comparison cannot be trusted
  Inputs in = prepare(e, /*with_profile=*/!r.calibrate_first);
  make_out_dir(out, "--out");  // after the inputs are read: a refusal leaves no folder
  if (r.calibrate_first) calibrate_first(e, in, out, noise);

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
    if (report_policy(e, p, pv, live, noise)) failed = true;
    rows.push_back(std::move(pv));
    lives.emplace_back(p.name, std::move(live));
  }
  if (!report_token_streams(in, lives)) failed = true;
  write_validation(out, rows);
  if (refuse_noise(noise, r.accept_noisy)) failed = true;
  return failed ? 1 : 0;
}

}  // namespace isim::exp
