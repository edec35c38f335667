// Hostile inputs to the spec readers and the CLI (issue 17): every one is an InputError (exit 2)
// that names the file and line, the key, the -p argument or the flag, never an internal error.
#include <doctest/doctest.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "core/input_error.h"
#include "experiments/plan/plan.h"
#include "experiments/run/run.h"
#include "experiments/spec/experiment.h"
#include "experiments/sweep/sweep.h"
#include "tests/cli_helpers.h"
#include "tests/input_error_text.h"
#include "tests/spec_helpers.h"
#include "tests/test_paths.h"

using namespace isim;
namespace fs = std::filesystem;

namespace {

const char* kMinimal = "trace: {from: jsonl, path: t.jsonl}\nprofile: p.yaml\npolicy: swap\n";

std::string profile() {
  return test::source_dir() + "/calibrate/profiles/a100-80g-gptj-6b.infercept.yaml";
}

// The message of `f`'s InputError with the scratch folder `d` cut from it.
std::string error_in(const fs::path& d, const std::function<void()>& f) {
  std::string msg = test::error_of_call(f);
  for (auto at = msg.find(d.string() + "/"); at != std::string::npos;
       at = msg.find(d.string() + "/"))
    msg.erase(at, d.string().size() + 1);
  return msg;
}

int run_isim(const std::string& args, std::string* err) {
  return test::run_bin("isim", args, nullptr, err);
}

}  // namespace

TEST_CASE("an error about a value -p set names the -p argument, not the spec's line 1") {
  const auto d = test::scratch("limits-p");
  const auto spec = test::write_file(d / "e.yaml", kMinimal);
  auto load = [&](const std::vector<std::string>& ps) {
    return error_in(d, [&] { exp::load_experiment(spec, ps); });
  };
  CHECK(load({"arrival.rate=-1"}) == "-p arrival.rate=-1: arrival.rate: must be > 0 sessions "
                                     "per second");
  CHECK(load({"engine={scheduler: fifo}"}) ==
        "-p engine={scheduler: fifo}: engine.scheduler: unknown scheduler 'fifo'; valid: "
        "chunked, vllm-v0, vllm-v1");
  CHECK(load({"engine.schedular=chunked"}).starts_with(
      "-p engine.schedular=chunked: engine.schedular: unknown key; valid keys: scheduler"));
  CHECK(load({"seed=2", "policy=swapp"}) ==
        "-p policy=swapp: policy: unknown policy 'swapp'; valid: discard, improved-discard, lru, "
        "min-waste, pensieve, preserve, swap");
  // A value the file gives is still named by its line, with a -p beside it.
  const auto spec2 = test::write_file(d / "e2.yaml",
                                      std::string(kMinimal) + "engine: {max_num_seqs: many}\n");
  CHECK(error_in(d, [&] { exp::load_experiment(spec2, {"engine.scheduler=chunked"}); }) ==
        "e2.yaml:4: engine.max_num_seqs: expected an integer, got 'many'");
  CHECK(load({"seed=[1"}).starts_with("-p seed=[1: <yaml>: "));
  // A sweep list -p gives is named by that -p, and one the file gives by its line.
  const auto sweep = test::write_file(
      d / "s.yaml", std::string(kMinimal) + "sweep:\n  arrival.rate: [1, -2]\n");
  CHECK(error_in(d, [&] { exp::load_sweep(sweep, {"sweep.arrival.rate=[-1]"}); }) ==
        "-p sweep.arrival.rate=[-1]: sweep.arrival.rate = -1: arrival.rate: must be > 0 sessions "
        "per second");
  CHECK(error_in(d, [&] { exp::load_sweep(sweep, {}); }) ==
        "s.yaml:5: sweep.arrival.rate = -2: arrival.rate: must be > 0 sessions per second");
  CHECK(error_in(d, [&] {
          exp::load_sweep(spec, {"sweep.variants=[{name: v, set: {seed: -1}}]"});
        }).starts_with("-p sweep.variants=[{name: v, set: {seed: -1}}]: sweep.variants[0].set.seed = -1: "));
}

TEST_CASE("-p on a spec whose document is not a map is an input error naming the file") {
  const auto d = test::scratch("limits-scalar");
  const auto spec = test::write_file(d / "e.yaml", "42\n");
  const std::string want = "e.yaml:1: (document): expected a map of keys for -p seed=1 to set, "
                           "got '42'";
  CHECK(error_in(d, [&] { exp::load_experiment(spec, {"seed=1"}); }) == want);
  CHECK(error_in(d, [&] { exp::load_sweep(spec, {"seed=1"}); }) == want);
  CHECK(error_in(d, [&] { exp::load_sweep(spec, {"sweep.seed=[1]"}); }) ==
        "e.yaml:1: (document): expected a map of keys for -p sweep.seed=[1] to set, got '42'");
  CHECK(error_in(d, [&] { exp::load_plan(spec, {"seed=1"}); }) == want);
  YAML::Node scalar = YAML::Load("42");
  CHECK(test::error_of_call([&] { exp::apply_override(scalar, "seed=1"); }) ==
        "-p seed=1: expected a spec that is a map of keys, got '42'");
}

TEST_CASE("pool sizes beyond a pool's limit, NaN and infinities are refused where read") {
  using test::error_of;
  const std::string s = kMinimal;
  CHECK(error_of(s + "engine: {gpu_blocks: 2147483648}\n") ==
        "e.yaml:4: engine.gpu_blocks: must be <= 268435456 (the most blocks a pool holds: ~40 B "
        "each, 10 GiB)");
  CHECK(error_of(s + "engine: {cpu_blocks: 268435457}\n") ==
        "e.yaml:4: engine.cpu_blocks: must be <= 268435456 (the most blocks a pool holds: ~40 B "
        "each, 10 GiB)");
  CHECK(test::parse(s + "engine: {gpu_blocks: 268435456}\n").engine.gpu_blocks == 268435456);
  CHECK(error_of(s + "engine: {swap_space_gib: .inf}\n") ==
        "e.yaml:4: engine.swap_space_gib: expected GiB (a finite number), got '.inf'");
  CHECK(error_of(s + "engine: {activation_reserve_gib: .nan}\n") ==
        "e.yaml:4: engine.activation_reserve_gib: expected GiB (a finite number), got '.nan'");
  CHECK(error_of(s + "arrival: {rate: .inf}\n") ==
        "e.yaml:4: arrival.rate: expected sessions per second (a finite number), got '.inf'");
  CHECK(error_of(s + "metrics: {timeseries_interval_s: .inf}\n") ==
        "e.yaml:4: metrics.timeseries_interval_s: expected seconds (a finite number), got '.inf'");
  CHECK(error_of(s + "metrics: {timeseries_interval_s: 1e-9}\n") ==
        "e.yaml:4: metrics.timeseries_interval_s: must be >= 0.001");
  CHECK(test::parse(s + "metrics: {timeseries_interval_s: 0.001}\n")
            .engine.timeseries_interval_s == 0.001);
}

TEST_CASE("a time series of more samples than the cap is refused before the run") {
  const auto d = test::scratch("limits-ts");
  // One session arriving at 1500 s with a 600 s intercept: the run lasts at least 2100 s.
  test::write_file(d / "t.jsonl",
                   "{\"id\": \"a\", \"arrival_s\": 1500, \"segments\": [{\"input\": 4, \"output\": "
                   "2, \"intercept\": {\"kind\": \"qa\", \"duration_s\": 600}}, {\"input\": 1, "
                   "\"output\": 1}]}\n");
  const auto spec = test::write_file(d / "e.yaml", "trace: {from: jsonl, path: t.jsonl}\n"
                                                   "arrival: {process: replay}\n"
                                                   "profile: " + profile() + "\npolicy: swap\n");
  // 2100 s / 0.002 s = 1,050,000 samples > 1,000,000; 2100 s / 1 s fits.
  const exp::Experiment e = exp::load_experiment(spec, {"metrics.timeseries_interval_s=0.002"});
  CHECK(error_in(d, [&] { exp::prepare(e); }) ==
        "e.yaml: metrics.timeseries_interval_s: 0.002 s takes more than 1050000 samples over this "
        "run (at least 2100.0 s: its last arrival and intercepts), more than the 1000000 a run "
        "may take; raise it, e.g. -p metrics.timeseries_interval_s=1");
  // 0.0025 s: 840,000 samples, allowed.
  CHECK(exp::prepare(exp::load_experiment(spec, {"metrics.timeseries_interval_s=0.0025"}))
            .trace.size() == 1);
}

TEST_CASE("a sweep of more runs than the cap is refused before it is expanded") {
  const auto d = test::scratch("limits-sweep");
  std::string seeds, rates;
  for (int i = 1; i <= 400; ++i) seeds += (i > 1 ? ", " : "") + std::to_string(i);
  for (int i = 1; i <= 300; ++i) rates += (i > 1 ? ", " : "") + std::to_string(i);
  const std::string head = "trace: {from: generator, sessions: 2}\nprofile: " + profile() +
                           "\npolicy: swap\nsweep:\n";
  // 1 x 300 x 400 x 10 = 1,200,000 runs > 1,000,000.
  const auto spec = test::write_file(
      d / "s.yaml", head + "  arrival.rate: [" + rates + "]\n  seed: [" + seeds +
                        "]\n  trace.sessions: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n");
  CHECK(error_in(d, [&] { exp::load_sweep(spec, {}); }) ==
        "s.yaml:6: sweep: 1 policy x 300 arrival.rate x 400 seed x 10 trace.sessions is more "
        "than the 1000000 runs a sweep may have; sweep fewer values (e.g. -p "
        "'sweep.seed=[1, 2]'), or split it into several specs");
  // 10^12 runs: counted without overflow, and at once.
  std::string ten;
  for (int i = 1; i <= 1000; ++i) ten += (i > 1 ? ", " : "") + std::to_string(i);
  const auto huge = test::write_file(
      d / "h.yaml", head + "  seed: [" + ten + "]\n  trace.limit: [" + ten +
                        "]\n  trace.sessions: [" + ten + "]\n  trace.draw: [" + ten + "]\n");
  CHECK(error_in(d, [&] { exp::load_sweep(huge, {}); })
            .starts_with("h.yaml:5: sweep: 1 policy x 1000 seed x 1000 trace.limit x 1000 "
                         "trace.sessions x 1000 trace.draw is more than the 1000000 runs"));
}

TEST_CASE("isim: output folders are checked before any work, and flags like spec values") {
  const auto d = test::scratch("limits-cli");
  const std::string spec = test::source_dir() + "/experiments/specs/quickstart.yaml";
  const std::string file = test::write_file(d / "file.txt", "x");
  std::string err;
  CHECK(run_isim("run " + spec + " --out " + file, &err) == 2);
  CHECK(err == "isim: error: --out " + file + ": exists and is not a folder\n");
  CHECK(run_isim("run " + spec + " --out " + file + "/sub", &err) == 2);
  CHECK(err == "isim: error: --out " + file + "/sub: " + file + " is not a folder\n");
  const std::string sweep = test::source_dir() + "/experiments/specs/infercept-mix.yaml";
  CHECK(run_isim("sweep " + sweep + " --out " + file, &err) == 2);
  CHECK(err == "isim: error: --out " + file + ": exists and is not a folder\n");
  CHECK(run_isim("trace gen default " + d.string() + " --sessions 2", &err) == 2);
  CHECK(err == "isim: error: OUT " + d.string() + ": is a folder; give a file to write\n");
  CHECK(run_isim("trace gen default " + (d / "no" / "t.jsonl").string(), &err) == 2);
  CHECK(err == "isim: error: OUT " + (d / "no" / "t.jsonl").string() + ": no such folder " +
                   (d / "no").string() + "\n");
  CHECK(run_isim("trace gen default " + (d / "t.jsonl").string() + " --rate -1", &err) == 2);
  CHECK(err == "isim: error: --rate: expected a finite number > 0 (sessions/s), got '-1'\n");
  CHECK(run_isim("trace gen default " + (d / "t.jsonl").string() + " --seed -1", &err) == 2);
  CHECK(err == "isim: error: --seed: expected a non-negative integer, got '-1'\n");
  const std::string flags = "run --trace " + test::data_dir() + "/infercept-excerpt.json" +
                            " --from infercept --profile " + profile() + " --policy swap --out " +
                            (d / "o").string();
  CHECK(run_isim(flags + " --rate -2", &err) == 2);
  CHECK(err == "isim: error: --rate -2: arrival.rate: must be > 0 sessions per second\n");
  CHECK(run_isim(flags + " --rate nan", &err) == 2);
  CHECK(err == "isim: error: --rate nan: arrival.rate: expected sessions per second, got "
               "'nan'\n");
  CHECK(!fs::exists(d / "o"));
  // With a spec the flags become -p arrival.rate / -p seed, and their errors still name them.
  CHECK(run_isim("run " + test::source_dir() +
                     "/experiments/specs/quickstart.yaml --rate -2 --out " + (d / "q").string(),
                 &err) == 2);
  CHECK(err == "isim: error: --rate -2: arrival.rate: must be > 0 sessions per second\n");
  CHECK(run_isim("run " + test::source_dir() +
                     "/experiments/specs/quickstart.yaml --seed x --out " + (d / "q").string(),
                 &err) == 2);
  CHECK(err.starts_with("isim: error: --seed x: seed: "));
  CHECK(!fs::exists(d / "q"));
}

TEST_CASE("times the spec makes too large (a tiny rate, a huge intercept scale) are input errors") {
  // One session: 4 tokens, a 10^4 s tool, then 1 token. Scaled by 10^6 (trace.intercept_scale's
  // bound) its intercept is 10^10 s; at 1e-300 sessions/s its first arrival gap is about 1e300 s.
  // Both pass the 4e9 s limit.
  const auto d = test::scratch("limits-times");
  test::write_file(d / "t.jsonl",
                   R"({"id":"a","arrival_s":0,"segments":[{"input":4,"output":1,)"
                   R"("intercept":{"kind":"tool","duration_s":10000}},{"input":1,"output":1}]})"
                   "\n");
  const auto spec = test::write_file(
      d / "e.yaml", "trace: {from: jsonl, path: t.jsonl}\nprofile: " + profile() +
                        "\npolicy: swap\n");
  auto prepared = [&](const std::vector<std::string>& ps) {
    return error_in(d, [&] { exp::prepare(exp::load_experiment(spec, ps), false); });
  };
  // With no arrival key the process is poisson at 1 session/s: a moves to its first gap.
  const std::string scaled = prepared({"trace.intercept_scale=1e6"});
  CHECK(scaled.starts_with("e.yaml: session a: arrives at "));
  CHECK(scaled.find(" s and its intercepts last 10000000000 s in all, past the 4000000000 s "
                    "(about 126 years) limit on a time; from trace.intercept_scale=1000000, "
                    "arrival.process=poisson, arrival.rate=1: use a larger rate or a smaller "
                    "scale") != std::string::npos);
  const std::string slow = prepared({"arrival={process: poisson, rate: 1e-300}"});
  CHECK(slow.starts_with("e.yaml: session a: arrives at "));
  CHECK(slow.find("past the 4000000000 s (about 126 years) limit on a time; from "
                  "trace.intercept_scale=1, arrival.process=poisson, arrival.rate=1e-300") !=
        std::string::npos);
  CHECK(prepared({"trace.intercept_scale=1e-3"}) == "(no error)");  // 10 s: inside it
  CHECK(prepared({"trace.intercept_scale=1e300"}) ==  // past its bound: refused where read
        "-p trace.intercept_scale=1e300: trace.intercept_scale: must be <= 1000000");
}

TEST_CASE("a generator asked for more sessions than the cap is refused where the count is read") {
  const auto d = test::scratch("limits-sessions");
  const auto spec = test::write_file(
      d / "g.yaml", "trace: {from: generator, sessions: 10000001}\nprofile: " + profile() +
                        "\npolicy: swap\n");
  CHECK(error_in(d, [&] { exp::load_experiment(spec, {}); }) ==
        "g.yaml:1: trace.sessions: must be <= 10000000 (the limit on a generated trace)");
  CHECK(error_in(d, [&] { exp::load_experiment(spec, {"trace.sessions=10000000"}); }) ==
        "(no error)");
  std::string err;
  CHECK(run_isim("trace gen default " + (d / "t.jsonl").string() + " --sessions 10000001",
                 &err) == 2);
  CHECK(err == "isim: error: --sessions: expected an integer in [0, 10000000], got '10000001'\n");
  CHECK(!fs::exists(d / "t.jsonl"));
}
