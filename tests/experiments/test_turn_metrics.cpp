// Turn-level goodput, time windows, recovery after a load shift (experiments/run/turn_metrics.h),
// their spec keys, and aggregate.csv over seeds (experiments/sweep/sweep_aggregate.h). Every
// expected value is worked out by hand in the comments from the synthetic records.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/csv.h"
#include "experiments/run/turn_metrics.h"
#include "experiments/sweep/sweep_aggregate.h"
#include "tests/cli_helpers.h"
#include "tests/experiments/sweep_fixtures.h"
#include "tests/spec_helpers.h"
#include "tests/test_paths.h"

using namespace isim;

namespace {

const char* kTurnSpec = "trace: {from: jsonl, path: t.jsonl}\nprofile: p.yaml\npolicy: swap\n";

sim::TurnRecord turn_at(double start, double ttft, double itl, int64_t outputs) {
  sim::TurnRecord t;
  t.start_s = start;
  t.ttft_s = ttft;
  t.itl_max_s = itl;
  t.output_tokens = outputs;
  return t;
}

sim::SessionRecord session_at(double arrival, const char* status, double e2e, double intercept,
                              int64_t segments) {
  sim::SessionRecord r;
  r.status = status;
  r.arrival_s = arrival;
  r.e2e_s = e2e;
  r.intercept_s = intercept;
  r.segments = segments;
  return r;
}

// Four turns; SLO request TTFT <= 1 s, itl_max <= 0.1 s.
//   t1 start 1,  TTFT 0.5, gap 0.05, 10 outputs: meets
//   t2 start 5,  TTFT 1.5, gap 0.2,  20 outputs: misses both
//   t3 start 12, TTFT 0.4, one output (no gap), 1 output: meets (no gap held against it)
//   t4 start 25, TTFT 0.8, gap 0.08, 5 outputs: meets
std::vector<sim::TurnRecord> four_turns() {
  return {turn_at(1, 0.5, 0.05, 10), turn_at(5, 1.5, 0.2, 20), turn_at(12, 0.4, -1, 1),
          turn_at(25, 0.8, 0.08, 5)};
}

// s1 arrives at 1: finished, e2e 10, intercepts 4, 2 segments: (10 - 4) / 2 = 3 s per request.
// s2 arrives at 12: finished, e2e 2, 1 segment: 2 s. s3 arrives at 25, unfinished, 1 segment.
std::vector<sim::SessionRecord> three_sessions() {
  return {session_at(1, "finished", 10, 4, 2), session_at(12, "finished", 2, 0, 1),
          session_at(25, "unfinished", -1, 0, 1)};
}

}  // namespace

TEST_CASE("turn SLO: a turn meets it when each given limit holds; goodput over the trace's turns") {
  const exp::TurnSlo slo{1.0, 0.1};
  const auto t = four_turns();
  CHECK(exp::meets_turn_slo(t[0], slo));
  CHECK_FALSE(exp::meets_turn_slo(t[1], slo));
  CHECK(exp::meets_turn_slo(t[2], slo));
  CHECK(exp::meets_turn_slo(t[3], slo));
  // TTFT limit only: t2's gap no longer counts, its TTFT 1.5 > 1 still does.
  CHECK_FALSE(exp::meets_turn_slo(t[1], exp::TurnSlo{1.0, 0}));
  CHECK(exp::meets_turn_slo(t[1], exp::TurnSlo{0, 0.25}));
  // 3 of the trace's 4 turns met it; 3 / 6 s busy window = 0.5 per s.
  const auto g = exp::turn_goodput(t, 4, slo, 6.0);
  CHECK(g.set);
  CHECK(g.turns == 4);
  CHECK(g.met == 3);
  CHECK(g.share == doctest::Approx(0.75));
  CHECK(g.per_s == doctest::Approx(0.5));
  // A turn that never completed has no record but counts among the turns: 3 of 5.
  CHECK(exp::turn_goodput(t, 5, slo, 6.0).share == doctest::Approx(0.6));
  CHECK_FALSE(exp::turn_goodput(t, 4, exp::TurnSlo{}, 6.0).set);
}

TEST_CASE("windows: turns by start, sessions by arrival, nearest-rank statistics") {
  // W = 10 s; the latest start or arrival is 25: windows [0,10), [10,20), [20,30).
  const auto w = exp::time_windows(four_turns(), three_sessions(), 10.0, exp::TurnSlo{1.0, 0.1});
  REQUIRE(w.size() == 3);
  // [0,10): t1, t2. TTFT {0.5, 1.5}: mean 1, p50 = 1st = 0.5, p95 = ceil(1.9) = 2nd = 1.5.
  // Gaps {0.05, 0.2}: p99 0.2. Sessions: s1, 3 s. Goodput 1 of 2. Outputs 10 + 20.
  CHECK(w[0].start_s == 0);
  CHECK(w[0].end_s == 10);
  CHECK(w[0].turns == 2);
  CHECK(w[0].ttft_mean == doctest::Approx(1.0));
  CHECK(w[0].ttft_p50 == doctest::Approx(0.5));
  CHECK(w[0].ttft_p95 == doctest::Approx(1.5));
  CHECK(w[0].ttft_p99 == doctest::Approx(1.5));
  CHECK(w[0].itl_max_p99 == doctest::Approx(0.2));
  CHECK(w[0].request_latency_mean == doctest::Approx(3.0));
  CHECK(w[0].goodput_share == doctest::Approx(0.5));
  CHECK(w[0].output_tokens == 30);
  // [10,20): t3 (no gap), s2 (2 s), goodput 1 of 1, 1 output.
  CHECK(w[1].turns == 1);
  CHECK(w[1].ttft_p95 == doctest::Approx(0.4));
  CHECK(w[1].itl_max_p99 < 0);
  CHECK(w[1].request_latency_mean == doctest::Approx(2.0));
  CHECK(w[1].goodput_share == doctest::Approx(1.0));
  CHECK(w[1].output_tokens == 1);
  // [20,30): t4; s3 unfinished: no request latency.
  CHECK(w[2].ttft_mean == doctest::Approx(0.8));
  CHECK(w[2].itl_max_p99 == doctest::Approx(0.08));
  CHECK(w[2].request_latency_mean < 0);
  CHECK(w[2].output_tokens == 5);
  // No turn SLO: no goodput share; no window length: no windows.
  CHECK(exp::time_windows(four_turns(), three_sessions(), 10.0, exp::TurnSlo{})[0].goodput_share <
        0);
  CHECK(exp::time_windows(four_turns(), three_sessions(), 0, exp::TurnSlo{}).empty());
}

TEST_CASE(
    "recovery: the first 30 s bucket whose p95 TTFT and the next one's are within the limit") {
  // Limit 2 s. Buckets from a shift at 100:
  //   [100,130): TTFT {5, 5}    p95 5 > 2: bad
  //   [130,160): {1}            good
  //   [160,190): {3}            bad
  //   [190,220): {1, 1.5}       p95 1.5: good
  //   [220,250): {0.5}          good  -> buckets 3 and 4: recovery 3 x 30 = 90 s
  const std::vector<sim::TurnRecord> t = {turn_at(101, 5, -1, 1),  turn_at(110, 5, -1, 1),
                                          turn_at(140, 1, -1, 1),  turn_at(170, 3, -1, 1),
                                          turn_at(200, 1, -1, 1),  turn_at(210, 1.5, -1, 1),
                                          turn_at(230, 0.5, -1, 1)};
  CHECK(exp::recovery_time(t, 100, 2.0) == doctest::Approx(90));
  // From 160: [160,190) bad, [190,220) and [220,250) good: 30 s.
  CHECK(exp::recovery_time(t, 160, 2.0) == doctest::Approx(30));
  // From 190: the first two buckets already meet it: 0.
  CHECK(exp::recovery_time(t, 190, 2.0) == doctest::Approx(0));
  // From 220: [220,250) good, but no later turn shows a second good bucket: never (< 0).
  CHECK(exp::recovery_time(t, 220, 2.0) < 0);
  // A limit no bucket meets: never.
  CHECK(exp::recovery_time(t, 100, 0.1) < 0);
}

TEST_CASE("metrics.window_s, metrics.shifts_s and the turn-level slo keys, checked") {
  const auto e = test::parse(std::string(kTurnSpec) +
                             "slo: {ttft_s: 5, request_ttft_s: 2, itl_max_s: 0.1}\n"
                             "metrics: {window_s: 600, shifts_s: [1200, 2400]}\n");
  // The turn keys leave the per-session SLO: its goodput is unchanged.
  REQUIRE(e.slo.size() == 1);
  CHECK(e.slo[0].first == "ttft_s");
  CHECK(e.turn_slo.request_ttft_s == 2);
  CHECK(e.turn_slo.itl_max_s == 0.1);
  CHECK(e.run_metrics.window_s == 600);
  CHECK(e.run_metrics.shifts_s == std::vector<double>{1200, 2400});
  // config.resolved.yaml reloads to the same.
  const auto back = exp::parse_experiment(e.resolved(), "r.yaml", "/base");
  CHECK(back.slo == e.slo);
  CHECK(back.turn_slo.request_ttft_s == 2);
  CHECK(back.turn_slo.itl_max_s == 0.1);
  CHECK(back.run_metrics.window_s == 600);
  CHECK(back.run_metrics.shifts_s == e.run_metrics.shifts_s);
  // Turn keys alone: no per-session SLO.
  const auto only = test::parse(std::string(kTurnSpec) + "slo: {itl_max_s: 0.2}\n");
  CHECK(only.slo.empty());
  CHECK(only.turn_slo.itl_max_s == 0.2);

  CHECK(test::error_of(std::string(kTurnSpec) + "slo: {request_ttft_s: 0}\n") ==
        "e.yaml:4: slo.request_ttft_s: must be a finite upper limit in (0, 4000000000] in the "
        "metric's unit (the limit on a time, about 126 years), got 0");
  CHECK(test::error_of(std::string(kTurnSpec) + "metrics: {window_s: 0}\n") ==
        "e.yaml:4: metrics.window_s: must be >= 0.001");
  CHECK(test::error_of(std::string(kTurnSpec) + "metrics: {shifts_s: 5}\n") ==
        "e.yaml:4: metrics.shifts_s: expected a non-empty list of shift times in seconds, e.g. "
        "[1200, 2400]");
  CHECK(test::error_of(std::string(kTurnSpec) +
                       "slo: {request_ttft_s: 2}\nmetrics: {shifts_s: [-1]}\n") ==
        "e.yaml:5: metrics.shifts_s[0]: must be >= 0 s");
  CHECK(test::error_of(std::string(kTurnSpec) + "metrics: {shifts_s: [600]}\n") ==
        "e.yaml:4: metrics.shifts_s: the time to recover is judged against slo.request_ttft_s: "
        "give that limit too");
}

TEST_CASE("aggregate.csv: mean and Student-t 95% half-width per point over seeds") {
  CHECK(exp::student_t95(2) == doctest::Approx(4.303));
  CHECK(exp::student_t95(29) == doctest::Approx(2.045));
  CHECK(exp::student_t95(30) == doctest::Approx(1.96));
  // Values 1, 2, 3: mean 2, sd 1, t(2) = 4.303: 4.303 / sqrt(3) = 2.48434...
  CHECK(exp::ci95_half_width({1, 2, 3}) == doctest::Approx(2.4843).epsilon(1e-4));
  CHECK(exp::ci95_half_width({7}) < 0);
  const std::string results =
      "run_index,policy,arrival.rate,seed,estimator,ttft_s.p95,router,overloaded,never\n"
      "0,swap,1,1,,1,rr,0,\n"
      "1,swap,1,2,,2,rr,1,\n"
      "2,swap,1,3,,3,rr,0,\n"
      "3,swap,2,1,,10,rr,0,\n";
  const auto recs = read_csv(exp::aggregate_csv(results, "results.csv"), "aggregate.csv");
  REQUIRE(recs.size() == 3);
  // `router` is text and `never` empty everywhere: not metrics.
  CHECK(recs[0].fields == std::vector<std::string>{"policy", "arrival.rate", "estimator", "seeds",
                                                   "ttft_s.p95", "ttft_s.p95.ci95", "overloaded",
                                                   "overloaded.ci95"});
  // Rate 1: seeds 1..3. ttft 1, 2, 3: mean 2, half-width 2.4843. overloaded 0, 1, 0: mean 1/3,
  // sd sqrt(((1/3)^2 + (2/3)^2 + (1/3)^2) / 2) = sqrt(1/3), half-width 4.303 / 3 = 1.43433.
  const auto& a = recs[1].fields;
  CHECK(a[0] == "swap");
  CHECK(a[1] == "1");
  CHECK(a[3] == "3");
  CHECK(a[4] == "2");
  CHECK(std::stod(a[5]) == doctest::Approx(2.4843).epsilon(1e-4));
  CHECK(std::stod(a[6]) == doctest::Approx(1.0 / 3));
  CHECK(std::stod(a[7]) == doctest::Approx(1.43433).epsilon(1e-4));
  // Rate 2: one seed: the mean is its value, no half-width.
  const auto& b = recs[2].fields;
  CHECK(b[1] == "2");
  CHECK(b[3] == "1");
  CHECK(b[4] == "10");
  CHECK(b[5].empty());
  // No seed column: no aggregate.
  CHECK(exp::aggregate_csv("run_index,policy,arrival.rate,estimator,x\n0,swap,1,,1\n", "r.csv")
            .empty());
}

namespace {

// "one" (1 output) at 0, "two" (3 outputs) at 0.1 s, "tool" at 0.2 s: 2 outputs, a 100 s tool
// call, 2 outputs. Four turns; the last starts after 100.2 s.
std::string turn_trace(const std::filesystem::path& d) {
  return test::write_file(
      d / "t.jsonl", R"({"id":"one","arrival_s":0,"segments":[{"input":20,"output":1}]})"
                     "\n"
                     R"({"id":"two","arrival_s":0.1,"segments":[{"input":20,"output":3}]})"
                     "\n"
                     R"({"id":"tool","arrival_s":0.2,"segments":[{"input":20,"output":2,)"
                     R"("intercept":{"kind":"tool","duration_s":100}},{"input":5,"output":2}]})"
                     "\n");
}

std::string turn_spec(const std::string& trace, const std::string& extra) {
  return "name: tm\ntrace: {from: jsonl, path: " + trace +
         "}\narrival: {process: replay}\nprofile: " + test::sweep::profile() +
         "\npolicy: preserve\nslo: {request_ttft_s: 5, itl_max_s: 10}\n"
         "metrics: {window_s: 50, shifts_s: [0]}\n" +
         extra;
}

}  // namespace

TEST_CASE(
    "isim run and sweep: the turn metrics in summary.json, windows.csv, results.csv and "
    "aggregate.csv") {
  const auto d = test::scratch("turn-metrics-cli");
  const auto trace = turn_trace(d);
  const auto run = test::write_file(d / "r.yaml", turn_spec(trace, ""));
  REQUIRE(test::sweep::run_isim("run " + run + " --out " + (d / "o").string()) == 0);
  const auto j = nlohmann::json::parse(test::slurp(d / "o/preserve/summary.json"));
  CHECK(j["request_ttft_s"]["n"] == 4);
  CHECK(j["itl_max_s"]["n"] == 3);  // "one" has a single output token
  CHECK(j["request_latency_s"]["n"] == 3);
  // Milliseconds each, far within 5 s and 10 s: all 4 turns meet the turn SLO.
  CHECK(j["turn_goodput"]["turns"] == 4);
  CHECK(j["turn_goodput"]["met"] == 4);
  // Windows of 50 s up to the last start (> 100 s): [0,50), [50,100) empty, [100,150).
  REQUIRE(j["windows"].size() == 3);
  CHECK(j["windows"][0]["turns"] == 3);
  CHECK(j["windows"][1]["turns"] == 0);
  CHECK(j["windows"][1]["request_ttft_s"]["p95"].is_null());
  CHECK(j["windows"][2]["turns"] == 1);
  // From the shift at 0: [0,30) good, [30,60) empty (not good), ... [90,120) good, and no turn
  // after it: never recovered by the rule (null).
  REQUIRE(j["recovery_s"].size() == 1);
  CHECK(j["recovery_s"][0].is_null());
  CHECK(j["recovery_max_s"].is_null());
  const auto w = read_csv(test::slurp(d / "o/preserve/windows.csv"), "windows.csv");
  REQUIRE(w.size() == 4);
  CHECK(w[0].fields[0] == "start_s");
  CHECK(w[2].fields[2] == "0");
  CHECK(w[2].fields[3].empty());

  const auto sw = test::write_file(d / "s.yaml", turn_spec(trace, "sweep: {seed: [1, 2]}\n"));
  REQUIRE(test::sweep::run_isim("sweep " + sw + " --jobs 1 --out " + (d / "s").string()) == 0);
  const auto res = read_csv(test::slurp(d / "s/results.csv"), "results.csv");
  const auto& h = res.front().fields;
  auto has = [&h](const std::string& c) { return std::find(h.begin(), h.end(), c) != h.end(); };
  CHECK(has("request_ttft_s.p95"));
  CHECK(has("itl_max_s.p99"));
  CHECK(has("request_latency_s.mean"));
  CHECK(has("turn_goodput.share"));
  CHECK(has("recovery_max_s"));
  CHECK_FALSE(has("windows"));
  CHECK_FALSE(has("recovery_s"));
  // Replayed arrivals: both seeds give the same run, so the half-widths are 0.
  const auto agg = read_csv(test::slurp(d / "s/aggregate.csv"), "aggregate.csv");
  REQUIRE(agg.size() == 2);
  CHECK(agg[0].fields[0] == "policy");
  CHECK(agg[0].fields[2] == "seeds");
  CHECK(agg[1].fields[2] == "2");
  const auto& ah = agg[0].fields;
  const auto c = std::find(ah.begin(), ah.end(), "request_ttft_s.n.ci95") - ah.begin();
  REQUIRE(c < static_cast<long>(ah.size()));
  CHECK(agg[1].fields[static_cast<size_t>(c)] == "0");
}
