// Goodput (DistServe's definition, per session), the overload verdict, and the run's `slo:`
// (experiments/run/goodput.h). Expected values are worked out by hand from the inputs.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "experiments/run/goodput.h"
#include "tests/spec_helpers.h"

using isim::test::error_of;
using isim::test::parse;
using namespace isim;

namespace {

const char* kMinimal = "trace: {from: jsonl, path: t.jsonl}\nprofile: p.yaml\npolicy: swap\n";

sim::SessionRecord finished(double ttft, double tpot, double norm) {
  sim::SessionRecord r;
  r.status = "finished";
  r.ttft_s = ttft;
  r.tpot_s = tpot;
  r.normalized_latency_s = norm;
  r.e2e_s = 10;
  return r;
}

}  // namespace

TEST_CASE("slo: per-session limits, checked like every key") {
  const auto e = parse(std::string(kMinimal) + "slo: {ttft_s: 2, tpot_s: 0.05}\n");
  REQUIRE(e.slo.size() == 2);
  CHECK(e.slo[0] == std::pair<std::string, double>{"ttft_s", 2});
  CHECK(e.slo[1] == std::pair<std::string, double>{"tpot_s", 0.05});
  CHECK(parse(kMinimal).slo.empty());
  // resolved() keeps it, so config.resolved.yaml reloads to the same SLO.
  CHECK(exp::parse_experiment(e.resolved(), "r.yaml", "/base").slo == e.slo);

  CHECK(error_of(std::string(kMinimal) + "slo: {ttft_s.p99: 2}\n") ==
        "e.yaml:4: slo.ttft_s.p99: a run's slo: gives each session's limit (METRIC: LIMIT, e.g. "
        "ttft_s: 2); a statistic over the run such as ttft_s.p99 is a target of isim plan");
  CHECK(error_of(std::string(kMinimal) + "slo: {ttft_s: {p99: 2}}\n") ==
        "e.yaml:4: slo.ttft_s: a run's slo: gives each session's limit (METRIC: LIMIT, e.g. "
        "ttft_s: 2); a statistic over the run such as ttft_s.p99 is a target of isim plan");
  CHECK(error_of(std::string(kMinimal) + "slo: {latency: 1}\n") ==
        "e.yaml:4: slo.latency: unknown SLO metric 'latency'; valid: e2e_s, "
        "normalized_latency_s, resume_ttft_s, tpot_s, ttft_s; per turn: itl_max_s, "
        "request_ttft_s");
  const std::string bound =
      "must be a finite upper limit in (0, 4000000000] in the metric's unit (the limit on a "
      "time, about 126 years), got ";
  CHECK(error_of(std::string(kMinimal) + "slo: {ttft_s: 0}\n") ==
        "e.yaml:4: slo.ttft_s: " + bound + "0");
  // The upper end: 4e9 passes, 4.1e9 does not.
  CHECK(error_of(std::string(kMinimal) + "slo: {ttft_s: 4.1e9}\n") ==
        "e.yaml:4: slo.ttft_s: " + bound + "4100000000");
  CHECK(error_of(std::string(kMinimal) + "slo: {ttft_s: .inf}\n") ==
        "e.yaml:4: slo.ttft_s: expected an upper limit in the metric's unit (a finite number), "
        "got '.inf'");
  CHECK(error_of(std::string(kMinimal) + "slo: 2\n") ==
        "e.yaml:4: slo: expected a map of METRIC to a per-session upper limit, e.g. {ttft_s: 2, "
        "tpot_s: 0.05}; METRIC one of e2e_s, normalized_latency_s, resume_ttft_s, tpot_s, "
        "ttft_s");
}

TEST_CASE("a session meets the SLO when it finished within every limit it has a value for") {
  const exp::RunSlo slo = {{"ttft_s", 2}, {"tpot_s", 0.05}, {"normalized_latency_s", 0.1}};
  std::vector<sim::SessionRecord> s = {
      finished(1.0, 0.04, 0.05),   // within all three
      finished(3.0, 0.04, 0.05),   // TTFT 3 > 2
      finished(1.0, -1, 0.05),     // no TPOT (one output token): not held against it
      finished(2.0, 0.05, 0.1),    // exactly at every limit: meets
      finished(0.5, 0.06, 0.05)};  // TPOT 0.06 > 0.05
  sim::SessionRecord skipped;
  skipped.status = "skipped";
  s.push_back(skipped);
  CHECK(exp::meets_slo(s[0], slo));
  CHECK_FALSE(exp::meets_slo(s[1], slo));
  CHECK(exp::meets_slo(s[2], slo));
  CHECK(exp::meets_slo(s[3], slo));
  CHECK_FALSE(exp::meets_slo(s[4], slo));
  CHECK_FALSE(exp::meets_slo(s[5], slo));
  // 3 of 6 sessions met it; over a 4 s busy window that is 0.75 sessions/s.
  const auto a = exp::slo_attainment(s, slo, 4.0);
  CHECK(a.met == 3);
  CHECK(a.share == doctest::Approx(0.5));
  CHECK(a.per_s == doctest::Approx(0.75));
  CHECK(a.limits == slo);
  const auto none = exp::slo_attainment(s, {}, 4.0);
  CHECK(none.limits.empty());
  CHECK(none.met == 0);
}

namespace {

// 101 sessions arriving at 0, 1, ..., 100 s (1 session/s); the measured span is [20, 100].
std::vector<sim::SessionRecord> arrivals(double gap) {
  std::vector<sim::SessionRecord> v(101);
  for (size_t i = 0; i < v.size(); ++i) v[i].arrival_s = gap * static_cast<double>(i);
  return v;
}

// One sample a second, the queue at t being `waiting(t)` + 1 swapped.
template <class F>
std::vector<sim::TimeSample> queue(F waiting) {
  std::vector<sim::TimeSample> ts;
  for (int t = 0; t <= 150; ++t) {
    sim::TimeSample s;
    s.t_s = t;
    s.waiting = waiting(t);
    s.swapped = 1;
    ts.push_back(s);
  }
  return ts;
}

}  // namespace

TEST_CASE("overloaded: the queue grows faster than 5% of the arrival rate while they arrive") {
  const auto s = arrivals(1.0);
  // Growing by one session every 10 s (0.1/s > 0.05 x 1/s) over the span: overloaded.
  auto o = exp::judge_overload(s, queue([](int t) { return t / 10; }));
  CHECK(o.overloaded);
  CHECK(o.rate == doctest::Approx(1.0));
  CHECK(o.growth_per_s == doctest::Approx(0.1).epsilon(0.02));  // floor(t/10) steps: ~0.1
  // A steady queue of 4 (before 20 s and after 100 s it may do anything): not overloaded.
  o = exp::judge_overload(s, queue([](int t) { return t < 20 ? t : t > 100 ? 500 : 3; }));
  CHECK_FALSE(o.overloaded);
  CHECK(o.growth_per_s == doctest::Approx(0.0));
  // One session every 25 s: 0.04/s, under 0.05/s.
  o = exp::judge_overload(s, queue([](int t) { return t / 25; }));
  CHECK_FALSE(o.overloaded);
  // At 10 sessions/s (arrivals 0.1 s apart, span [2, 10]), 0.1/s of growth is 1% of the rate.
  CHECK_FALSE(exp::judge_overload(arrivals(0.1), queue([](int t) { return t / 10; })).overloaded);
  // All at once: no span of arrivals to judge.
  CHECK_FALSE(exp::judge_overload(arrivals(0.0), queue([](int t) { return t; })).overloaded);
}
