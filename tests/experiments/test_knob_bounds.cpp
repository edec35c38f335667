// Every knob's bound is enforced and named (issue 36): generated from the knob tables. For each
// table and each numeric knob, both ends are finite; a value just outside each end is refused
// by the real reader of its section, naming the file, line, key and the end ("must be <= N
// (WHY)"); a value just inside each end is read. Then the hand-written cases: sizes that once
// reached std::bad_alloc (cluster.replicas, trace.draw, plan windows and rates), the memory
// estimate of trace.draw, the flag form's messages and the documented zeros.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "core/knobs.h"
#include "experiments/plan/plan.h"
#include "experiments/plan/plan_sim.h"
#include "experiments/run/turn_metrics.h"
#include "experiments/spec/arrival_spec.h"
#include "experiments/spec/cluster_spec.h"
#include "experiments/spec/experiment.h"
#include "experiments/spec/plan_spec.h"
#include "experiments/spec/run_flags.h"
#include "sim/engine_config.h"
#include "tests/cli_helpers.h"
#include "tests/experiments/plan_fixtures.h"
#include "tests/input_error_text.h"
#include "traces/jsonl.h"
#include "traces/workload.h"

using namespace isim;

namespace {

// One numeric knob of a table: its key, bound and whether it holds an integer.
struct NumericKnob {
  std::string key;
  Bound bound;
  bool integer = false;
};
struct NumericKnobs {
  std::vector<NumericKnob> knobs;
  template <class T>
  void operator()(const char* key, T&, const Bound& b, const char*, const char*) {
    if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>)
      knobs.push_back({key, b, std::is_integral_v<T>});
  }
};

// The engine's three tables as one (what an `engine:` map reads).
struct EngineAll {
  sim::EngineConfig c;
  template <class Visit>
  void knobs(Visit&& k) {
    c.all_knobs(k);
  }
};

// A number as YAML text that reads back exactly: integers whole, doubles in shortest round trip.
std::string text_of(double v, bool integer) {
  return integer ? fmt::format("{}", static_cast<int64_t>(v)) : fmt::format("{}", v);
}

// A step of a double at `end`: 10^-12 of it (of 1 near 0), far above the rounding of its text
// and clear of denormals.
double step_at(double end) {
  return std::max(std::fabs(end), 1.0) * 1e-12;
}
// The value one step past `end` away from the inside (`dir` -1 below, +1 above): for an open
// end the end itself.
double outside(double end, bool open, bool integer, int dir) {
  if (open) return end;
  return end + dir * (integer ? 1.0 : step_at(end));
}
// The value one step inside `end` (the end itself when closed).
double inside(double end, bool open, bool integer, int dir) {
  if (!open) return end;
  return end - dir * (integer ? 1.0 : step_at(end));
}

// The error a section's real reader gives for `key: text` on line 1 of its file.
using Wire = std::function<std::string(const std::string& key, const std::string& text)>;

// Checks every numeric knob of table S: `section` prefixes its keys in messages ("engine").
template <class S>
void check_table(const std::string& section, const Wire& wire, S s = {}) {
  NumericKnobs n;
  s.knobs(n);
  REQUIRE(!n.knobs.empty());
  for (const auto& k : n.knobs) {
    CAPTURE(section + "." + k.key);
    const Bound& b = k.bound;
    REQUIRE(std::isfinite(b.lo));  // a bound on both ends
    REQUIRE(std::isfinite(b.hi));
    const std::string at = "x.yaml:1: " + (section.empty() ? "" : section + ".") + k.key + ": ";
    const std::string lo = text_of(outside(b.lo, b.lo_open, k.integer, -1), k.integer);
    // The lower end's refusal may go on to say the unit ("must be > 0 sessions per second").
    const std::string lo_why =
        at + fmt::format("must be {} {}", b.lo_open ? ">" : ">=", text_of(b.lo, k.integer));
    const std::string lo_got = wire(k.key, lo);
    CHECK((lo_got == lo_why || lo_got.starts_with(lo_why + " ")));
    const std::string hi = text_of(outside(b.hi, b.hi_open, k.integer, +1), k.integer);
    CHECK(wire(k.key, hi) == at + fmt::format("must be {} {}{}",
                                              b.hi_open ? "<" : "<=", text_of(b.hi, k.integer),
                                              b.why ? fmt::format(" ({})", b.why) : ""));
    for (const double v :
         {inside(b.lo, b.lo_open, k.integer, -1), inside(b.hi, b.hi_open, k.integer, +1)}) {
      const std::string t = text_of(v, k.integer);
      CAPTURE(t);
      S read_into;
      const YamlMap m(YAML::Load("{" + k.key + ": " + t + "}"), "x.yaml", section, knob_names<S>());
      KnobReader r{m};
      CHECK(test::error_of_call([&] { read_into.knobs(r); }) == "(no error)");
      double value = 0;  // the value read is the value written
      auto find = [&](const char* key, auto& member, const Bound&, const char*, const char*) {
        using T = std::remove_reference_t<decltype(member)>;
        if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>)
          if (k.key == key) value = static_cast<double>(member);
      };
      read_into.knobs(find);
      CHECK(value == v);
    }
  }
}

std::string experiment_error(const std::string& text) {
  return test::error_of_call([&] { exp::parse_experiment(YAML::Load(text), "x.yaml", "/base"); });
}
const char* const kRest = "profile: p.yaml\npolicy: swap\n";
const char* const kTrace = "trace: {from: jsonl, path: t.jsonl}\n";

std::string plan_error(const std::string& text) {
  return test::error_of_call([&] { exp::parse_plan(YAML::Load(text), "x.yaml", "/base"); });
}
const char* const kPlanRest = "slo: {ttft_s.p99: 1}\n";

}  // namespace

TEST_CASE("every knob's bound is enforced and named: engine, cluster and group tables") {
  check_table<EngineAll>("engine", [](const std::string& k, const std::string& v) {
    return experiment_error("engine: {" + k + ": " + v + "}\n" + kTrace + kRest);
  });
  check_table<exp::FleetKnobs>("cluster", [](const std::string& k, const std::string& v) {
    return experiment_error("cluster: {" + k + ": " + v + "}\n" + kTrace + kRest);
  });
  check_table<exp::ArrivalKnobs>("arrival", [](const std::string& k, const std::string& v) {
    return experiment_error("arrival: {process: poisson, " + k + ": " + v + "}\n" + kTrace + kRest);
  });
  check_table<exp::MetricsKnobs>("metrics", [](const std::string& k, const std::string& v) {
    return experiment_error("metrics: {" + k + ": " + v + "}\n" + kTrace + kRest);
  });
  check_table<exp::ParallelKnobs>("cluster.replicas[0]",
                                  [](const std::string& k, const std::string& v) {
                                    return experiment_error("cluster: {replicas: [{count: 1, " + k +
                                                            ": " + v + "}]}\n" + kTrace + kRest);
                                  });
}

TEST_CASE("every knob's bound is enforced and named: trace and plan tables") {
  check_table<trace::WorkloadSpec>("trace", [](const std::string& k, const std::string& v) {
    return experiment_error("trace: {from: jsonl, path: t.jsonl, " + k + ": " + v + "}\n" + kRest);
  });
  check_table<exp::SearchSpec>("search", [](const std::string& k, const std::string& v) {
    return plan_error("search: {" + k + ": " + v + "}\npeak_rate: 1\n" + kPlanRest);
  });
  check_table<exp::PlanKnobs>("", [](const std::string& k, const std::string& v) {
    return plan_error(k + ": " + v + "\n" + kPlanRest);  // the plan's own keys: at the root
  });
}

TEST_CASE("sizes that reached bad_alloc are refused where read, with the reason") {
  const std::string rest = std::string(kTrace) + kRest;
  // 10^9 replicas once grew to 7.5 GB before failing; the limit is 65536 engine cores.
  CHECK(experiment_error("cluster: {replicas: 1000000000}\n" + rest) ==
        "x.yaml:1: cluster.replicas: must be <= 65536 (each engine core holds ~60 KB: ~4 GB at "
        "the limit)");
  CHECK(experiment_error("cluster: {replicas: [{count: 65537}]}\n" + rest) ==
        "x.yaml:1: cluster.replicas[0].count: must be <= 65536 (each engine core holds ~60 KB: "
        "~4 GB at the limit)");
  // Two groups within the limit, 40000 + 30000 = 70000 cores over it.
  CHECK(experiment_error("cluster: {replicas: [{count: 40000}, {count: 30000}]}\n" + rest) ==
        "x.yaml:1: cluster.replicas: the groups' count x dp sum to 70000 engine cores, more than "
        "65536 (each engine core holds ~60 KB: ~4 GB at the limit)");
  CHECK(experiment_error("trace: {from: jsonl, path: t.jsonl, draw: 1000000000000}\n" +
                         std::string(kRest)) ==
        "x.yaml:1: trace.draw: must be <= 10000000 (the most sessions a run holds: a few GB)");
  // By -p, the override is named.
  const auto d = test::scratch("knob-bounds-draw");
  const auto spec = test::write_file(d / "e.yaml", rest);
  CHECK(test::error_of_call([&] { exp::load_experiment(spec, {"trace.draw=1000000000000"}); }) ==
        "-p trace.draw=1000000000000: trace.draw: must be <= 10000000 (the most sessions a "
        "run holds: a few GB)");
}

TEST_CASE("isim plan's window, rates and fleet factor are bounded by what a run holds") {
  const std::string rest = kPlanRest;
  CHECK(plan_error("search: {window_s: 1e12}\npeak_rate: 1\n" + rest) ==
        "x.yaml:1: search.window_s: must be <= 10000000 (about 116 days)");
  CHECK(plan_error("peak_rate: 1e9\n" + rest) == "x.yaml:1: peak_rate: must be <= 1000000");
  CHECK(plan_error("search: {max_fleet_factor: 1e9}\npeak_rate: 1\n" + rest) ==
        "x.yaml:1: search.max_fleet_factor: must be <= 64 (fleets past 64 x the guess say the "
        "guess is wrong)");
  // 100000 sessions/s x 1000 s = 10^8 sessions at the peak, over the 10^7 a run holds; the
  // window given names the window, otherwise the rate.
  CHECK(plan_error("search: {window_s: 1000}\npeak_rate: 100000\n" + rest +
                   "trace: {from: jsonl, path: t.jsonl}\n") ==
        "x.yaml:1: search.window_s: peak_rate x search.window_s must be <= 10000000 sessions (a "
        "fleet run at the peak draws ceil(rate x window_s) sessions; the most a run holds), got "
        "100000 x 1000");
  // The default window, 300 s: 40000 x 300 = 1.2 x 10^7.
  CHECK(plan_error("peak_rate: 40000\n" + rest + "trace: {from: jsonl, path: t.jsonl}\n") ==
        "x.yaml:1: peak_rate: peak_rate x search.window_s must be <= 10000000 sessions (a fleet "
        "run at the peak draws ceil(rate x window_s) sessions; the most a run holds), got 40000 "
        "x 300");
}

TEST_CASE("a plan probe whose rate x window_s passes what a run holds is refused before it draws") {
  // 2 sessions/s over 10^7 s: 2 x 10^7 sessions, over the 10^7 a run holds.
  exp::Experiment e = exp::parse_experiment(
      YAML::Load("trace: {from: generator, sessions: 1}\n" + std::string(kRest)), "p.yaml",
      "/base");
  exp::SearchSpec s;
  s.window_s = 1e7;
  CHECK(test::error_of_call([&] { exp::make_workload(e, s, 2, 1); }) ==
        "p.yaml: search.window_s: a probe at 2 sessions/s over 10000000 s draws 20000000 "
        "sessions, more than the 10000000 a run holds; lower search.window_s or search.max_rate");
}

TEST_CASE("a fleet guess past 65536 engine cores is refused before any fleet is built") {
  // The hand plan's capacity is 7.875 sessions/s per replica (test_plan.cpp); at 600000
  // sessions/s the guess is ceil(600000 / 7.875) = ceil(76190.48) = 76191 replicas of one core.
  const auto d = test::scratch("knob-bounds-fleet");
  const std::string spec = test::hand_plan(d);
  const exp::PlanSpec p = exp::load_plan(spec, {"peak_rate=600000"});
  CHECK(test::error_of_call([&] { exp::run_plan(p, exp::PlanOptions{}); }) ==
        spec +
            ": peak_rate: 600000 sessions/s at the capacity 7.875 sessions/s per replica of test "
            "(discard) needs 76191 replicas of 1 engine core(s), more than the 65536 engine cores "
            "a fleet may hold (each engine core holds ~60 KB: ~4 GB at the limit)");
}

TEST_CASE("metrics.window_s is refused before a run's windows are allocated when too many") {
  // A turn starting at 2000 s with 1 ms windows: 2 x 10^6 windows, over the 10^6 a run has;
  // 2000 / 0.0019 = 1052631.6 is too many too; 2000 / 0.0021 = 952380.95 fits.
  std::vector<sim::TurnRecord> turns(1);
  turns[0].start_s = 2000;
  const exp::TurnSlo slo;
  CHECK(test::error_of_call([&] { exp::time_windows(turns, {}, 0.001, slo); }) ==
        "metrics.window_s: 0.001 s makes more than 1000000 windows over this run (2000 s to the "
        "last turn's start); raise it");
  CHECK(test::error_of_call([&] { exp::time_windows(turns, {}, 0.0019, slo); }) ==
        "metrics.window_s: 0.0019 s makes more than 1000000 windows over this run (2000 s to the "
        "last turn's start); raise it");
  CHECK(exp::time_windows(turns, {}, 0.0021, slo).size() == 952381);  // floor(952380.95) + 1
}

TEST_CASE("trace.draw is refused before drawing when the draws would not fit in memory") {
  // One session "a" of 9 segments (shared by its copies: no bytes per copy) whose 100-token
  // prompt has 100 prefix hashes (1 token a block): 160 + 1 (its id) + 100 x 8 = 961 B per
  // drawn copy. 10^7 draws: 9.61 x 10^9 B = ~9.6 GB, over 8 GB; 8 x 10^9 / 961 = 8324661.8,
  // so at most 8324661 draws.
  const auto d = test::scratch("knob-bounds-draw-memory");
  trace::Session s;
  s.id = "a";
  for (int i = 0; i < 9; ++i) {  // tool calls between the turns, none after the last
    s.segments.push_back({i == 0 ? 100 : 10, 1, std::nullopt});
    if (i < 8) s.segments.back().intercept = trace::Intercept{"tool", 1.0};
  }
  s.prefix.block_tokens = 1;
  for (uint64_t h = 1; h <= 100; ++h) s.prefix.hashes.push_back(h);
  {
    std::ofstream f(d / "t.jsonl");
    trace::write_jsonl(f, trace::Trace{s});
  }
  trace::WorkloadSpec w;
  w.path = (d / "t.jsonl").string();
  w.draw = 10000000;
  trace::ArrivalSpec a;
  CHECK(test::error_of_call([&] { trace::make_workload(w, a, 1, "e.yaml"); }) ==
        "e.yaml: trace.draw: 10000000 draws need ~9.6 GB (961 B per session of this trace), "
        "more than the 8 GB a run's drawn sessions may take; draw at most 8324661");
  w.draw = 3;  // 2883 B: drawn
  CHECK(trace::make_workload(w, a, 1, "e.yaml").trace.size() == 3);
}

TEST_CASE("the flag form names the flag as typed, not 'command line'") {
  exp::RunSpecFlags f;
  f.trace = "t.jsonl";
  f.profile = "p.yaml";
  f.policy = "nope";
  CHECK(test::error_of_call([&] { exp::load_run_experiment(f); }) ==
        "--policy nope: policy: unknown policy 'nope'; valid: discard, improved-discard, lru, "
        "min-waste, pensieve, preserve, swap");
  f.policy = "swap";
  f.from = "nope";
  CHECK(test::error_of_call([&] {
          exp::load_run_experiment(f);
        }).starts_with("--from nope: trace.from: unknown trace source 'nope'; valid: "));
  f.from.reset();
  f.scheduler = "nope";
  CHECK(test::error_of_call([&] { exp::load_run_experiment(f); }) ==
        "--scheduler nope: engine.scheduler: unknown scheduler 'nope'; valid: chunked, vllm-v0, "
        "vllm-v1");
  f.scheduler.reset();
  f.executor = "nope";
  CHECK(test::error_of_call([&] { exp::load_run_experiment(f); }) ==
        "--executor nope: executor: unknown executor 'nope'; valid: live-cpu, live-cuda, sim");
}

TEST_CASE("--jobs is bounded: more threads than that is no speed, only memory") {
  std::string err;
  CHECK(test::run_bin("isim", "sweep x.yaml --jobs 1025", nullptr, &err) == 2);
  CHECK(err.find("--jobs: expected an integer in 1..1024 (worker threads), got '1025'") !=
        std::string::npos);
  std::string help;
  CHECK(test::run_bin("isim", "plan --help", &help) == 0);
  CHECK(help.find("worker threads, 1..1024") != std::string::npos);
}

TEST_CASE("a zero trace.limit, draw or max_context is 'off', and isim list says so") {
  const auto rows = knob_rows<trace::WorkloadSpec>();
  REQUIRE(rows.size() == 8);
  CHECK(rows[0].key == "limit");
  CHECK(rows[0].help ==
        "keep the first N sessions of the trace (0 = off: all) (the most sessions a run holds)");
  CHECK(rows[3].key == "max_context");
  CHECK(rows[3].help ==
        "cut sessions to this many context tokens (0 = off: no cut; not 1) (the "
        "limit on a token count)");
  std::string out;
  REQUIRE(test::run_bin("isim", "list", &out) == 0);
  CHECK(out.find("trace keys (trace: KEY: VALUE; 0 = off for limit, draw, max_context):\n"
                 "  limit                          0         [0, 10000000]        keep the first N "
                 "sessions of the trace (0 = off: all)") != std::string::npos);
}
