// isim validate: metric comparison and token-stream divergence by hand, and the verb through
// the real binary (success, integrity failures with exit 1, bad input with exit 2).
#include <doctest/doctest.h>

#include <filesystem>
#include <limits>

#include "experiments/validate/validate.h"
#include "tests/cli_helpers.h"
#include "tests/sim_fixtures.h"

using namespace isim;
namespace fs = std::filesystem;

TEST_CASE("compare_runs: relative error of sim against live, metric by metric") {
  sim::Summary s, l;
  s.ttft = {3, 0.11, 0.10, 0, 0, 0.30, 0};  // n, mean, p50, p90, p95, p99, max
  l.ttft = {3, 0.10, 0.10, 0, 0, 0.40, 0};
  s.counters.iterations = 90;
  l.counters.iterations = 100;
  s.counters.recomputed_tokens = 5;
  l.counters.recomputed_tokens = 0;
  const auto m = exp::compare_runs(s, l);
  REQUIRE(m.size() == 12);
  CHECK(m[0].metric == "ttft_s.mean");
  CHECK(m[0].error() == doctest::Approx(0.1));
  CHECK(m[1].error() == 0.0);
  CHECK(m[2].error() == doctest::Approx(-0.25));
  CHECK(m[10].metric == "iterations");
  CHECK(m[10].error() == doctest::Approx(-0.1));
  CHECK(m[11].metric == "recomputed_tokens");
  CHECK(m[11].error() == std::numeric_limits<double>::infinity());
  CHECK(m[3].metric == "tpot_s.mean");
  CHECK(m[3].error() == 0.0);  // both 0
  const std::string csv = exp::validation_csv({{"swap", m}});
  CHECK(csv.rfind("policy,metric,sim,live,rel_error\nswap,ttft_s.mean,0.11,0.1,", 0) == 0);
  CHECK(csv.find("swap,iterations,90,100,-0.1\n") != std::string::npos);
}

TEST_CASE("first_divergence names the session, segment and token") {
  trace::Trace t;
  t.push_back({"a", 0.0, {test::seg(3, 2, "math", 1), test::seg(2, 3)}, {}});
  t.push_back({"b", 0.0, {test::seg(2, 2)}, {}});
  cluster::RunResult x, y;
  for (auto* r : {&x, &y}) {
    r->sessions.resize(2);
    r->sessions[0].status = r->sessions[1].status = "finished";
    r->executor.tokens = {{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, {1, 2, 3, 4}};
  }
  CHECK(exp::first_divergence(t, "discard", x, "swap", y).empty());
  y.executor.tokens[0][8] = 42;  // segment 1's second output
  CHECK(exp::first_divergence(t, "discard", x, "swap", y) ==
        "session a segment 1 output token 1 (stream position 8): discard gives 9, swap gives 42");
  y.sessions[0].status = "unfinished";  // skipped: it did not finish in one run
  CHECK(exp::first_divergence(t, "discard", x, "swap", y).empty());
  y.executor.tokens[1].pop_back();
  CHECK(exp::first_divergence(t, "discard", x, "swap", y) ==
        "session b segment 0 output token 1 (stream position 3): discard gives 4, swap gives "
        "(none)");
}

namespace {

// A tiny live-cpu validation: 8 generated sessions with short contexts.
std::string tiny_spec(const fs::path& dir, const std::string& extra = "") {
  const std::string src = test::source_dir();
  return test::write_file(dir / "v.yaml", "name: v\nseed: 3\n"
                                          "trace:\n  from: generator\n  path: " +
                                              src +
                                              "/traces/generators/infercept-mix.yaml\n"
                                              "  sessions: 8\n  max_context: 160\n"
                                              "  intercept_scale: 0.01\n"
                                              "arrival: {process: poisson, rate: 20}\n"
                                              "profile: " +
                                              src +
                                              "/calibrate/profiles/cpu-tiny.yaml\n"
                                              "engine: {gpu_blocks: 40, cpu_blocks: 200, "
                                              "max_num_batched_tokens: 512}\n"
                                              "executor: live-cpu\n"
                                              "policies: [discard, swap]\n" +
                                              extra);
}

}  // namespace

TEST_CASE("isim validate: sim against live-cpu, integrity passed, validation.csv written") {
  const auto d = test::scratch("validate-ok");
  std::string out, err;
  // --accept-noisy: the suite runs tests side by side, so the host's load may well exceed its
  // threads; what this case checks does not depend on timing.
  REQUIRE(test::run_bin("isim",
                        "validate " + tiny_spec(d) + " --accept-noisy --out " + (d / "o").string(),
                        &out,
                        &err) == 0);
  CHECK(out.find("token streams (8 sessions, greedy argmax): identical under every policy") !=
        std::string::npos);
  CHECK(out.find("integrity:") != std::string::npos);
  const std::string csv = test::slurp(d / "o" / "validation.csv");
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 1 + 2 * 12);
  for (const char* f : {"discard/live/summary.json", "discard/sim/summary.json",
                        "swap/live/sessions.csv", "swap/sim/config.resolved.yaml"})
    CHECK(fs::exists(d / "o" / f));
  // The live summary carries the measured seconds and the integrity section; sim's does not.
  CHECK(test::slurp(d / "o" / "swap/live/summary.json").find("\"compute_s\"") != std::string::npos);
  CHECK(test::slurp(d / "o" / "swap/sim/summary.json").find("\"executor\"") == std::string::npos);
}

TEST_CASE("isim validate exits 1 when an integrity check fails") {
  const auto d = test::scratch("validate-fault");
  std::string out;
  CHECK(test::run_bin("isim",
                      "validate " + tiny_spec(d) + " -p executor.fault=swap -p policies=[swap] --out " +
                          (d / "o").string(),
                      &out) == 1);
  CHECK(out.find("VIOLATIONS") != std::string::npos);
  CHECK(out.find("did not come back as it was swapped out") != std::string::npos);
  CHECK(test::run_bin("isim",
                      "validate " + tiny_spec(d) +
                          " -p executor.fault=recompute -p policies=[discard] --out " +
                          (d / "o2").string(),
                      &out) == 1);
  CHECK(out.find("recomputed KV differs from the original") != std::string::npos);
}

TEST_CASE("isim validate: bad input exits 2 with the reason") {
  const auto d = test::scratch("validate-bad");
  std::string err;
  CHECK(test::run_bin("isim", "validate " + tiny_spec(d) + " -p executor=sim", nullptr, &err) == 2);
  CHECK(err.find("executor: isim validate compares sim with a live executor (live-cpu or "
                 "live-cuda); this spec runs 'sim'") != std::string::npos);
  CHECK(test::run_bin("isim", "validate " + tiny_spec(d) + " --calibrate-first", nullptr, &err) ==
        2);
  CHECK(err.find("validate.model: --calibrate-first needs the model to calibrate") !=
        std::string::npos);
  CHECK(test::run_bin("isim", "validate", nullptr, &err) == 2);
  CHECK(err.find("needs EXPERIMENT.yaml") != std::string::npos);
  CHECK(test::run_bin("isim", "validate " + tiny_spec(d) + " -p executor.fault=disk", nullptr,
                      &err) == 2);
  CHECK(err.find("executor.fault: expected none, swap or recompute, got 'disk'") !=
        std::string::npos);
  CHECK(test::run_bin("isim", "validate " + tiny_spec(d, "validate: {modle: x}\n"), nullptr,
                      &err) == 2);
  CHECK(err.find("validate.modle") != std::string::npos);
  CHECK(test::run_bin("isim", "validate " + tiny_spec(d) + " -p trace.intercept_scale=0", nullptr,
                      &err) == 2);
  CHECK(err.find("trace.intercept_scale: must be > 0") != std::string::npos);
  CHECK(test::run_bin("isim", "validate " + tiny_spec(d) + " -p engine.gpu_blocks=100000000",
                      nullptr, &err) == 2);
  CHECK(err.find("executor.max_pool_gib") != std::string::npos);
}

TEST_CASE("a calibration off its target or a loaded host makes validate's comparison noisy") {
  CHECK(exp::calibration_problem(0.05, 0.05, 3).empty());  // at the target is within it
  CHECK(exp::calibration_problem(0.206, 0.05, 3) ==
        "the calibration missed its own target after 3 attempt(s): whole-batch validation mean "
        "|error| 20.6% > 5%");
  CHECK(exp::load_problem("swap", 1.5, 2.0, 2).empty());  // 2.0 on 2 threads: not over
  CHECK(exp::load_problem("swap", 5.0, 0.5, 2) ==
        "swap: the load average during the live run (5 -> 0.5) exceeded the 2 hardware "
        "thread(s): other work shared the CPU, so live times are not the kernels' own");
  CHECK(exp::load_problem("swap", 1.0, 2.25, 2).rfind("swap: the load average during the live "
                                                      "run (1 -> 2.25) exceeded", 0) == 0);
  CHECK(exp::load_problem("swap", 9.0, 9.0, 0).empty());  // threads unknown: no verdict
}
