// isim headroom's parts, without a simulation: the bracketing and bisection on synthetic
// monotone pass functions (every probe worked out by hand), the limiting-factor tests on
// hand-made facts and runs, the pass rule, and headroom.csv / the table of a hand-made result.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "experiments/headroom/bisect.h"
#include "experiments/headroom/headroom.h"
#include "experiments/headroom/headroom_report.h"
#include "experiments/headroom/limit.h"

using namespace isim;
using namespace isim::exp;

namespace {

std::vector<double> probe_values(const BisectResult& r) {
  std::vector<double> xs;
  for (const auto& p : r.probes) xs.push_back(p.x);
  return xs;
}

sim::SessionRecord session(double ttft, double tpot, double norm) {
  sim::SessionRecord r;
  r.status = "finished";
  r.ttft_s = ttft;
  r.tpot_s = tpot;
  r.normalized_latency_s = norm;
  return r;
}

}  // namespace

TEST_CASE("headroom bisect: a continuous knob, bracketed by doubling, then bisected") {
  // pass(x) = x <= 3.7, from 2 with tolerance 0.05:
  //   2 pass (lo 2); 4 fail (hi 4): bracketed.
  //   hi - lo = 2    > 0.05 x 2     = 0.1     -> 3     pass (lo 3)
  //   hi - lo = 1    > 0.05 x 3     = 0.15    -> 3.5   pass (lo 3.5)
  //   hi - lo = 0.5  > 0.05 x 3.5   = 0.175   -> 3.75  fail (hi 3.75)
  //   hi - lo = 0.25 > 0.175                  -> 3.625 pass (lo 3.625)
  //   hi - lo = 0.125 <= 0.05 x 3.625 = 0.18125: stop. 6 probes.
  const BisectResult r = bisect(2, 0.05, false, [](double x) { return x <= 3.7; });
  CHECK(r.outcome == BisectResult::kFound);
  CHECK(probe_values(r) == std::vector<double>{2, 4, 3, 3.5, 3.75, 3.625});
  CHECK(r.lo == 3.625);
  CHECK(r.hi == 3.75);
  CHECK(r.probes[1].pass == false);
  CHECK(r.probes[5].pass == true);
}

TEST_CASE("headroom bisect: a failing start is halved until it passes") {
  // pass(x) = x <= 1.2, from 8 with tolerance 0.1: 8, 4, 2 fail, 1 passes (lo 1, hi 2).
  //   1   > 0.1 x 1      = 0.1     -> 1.5    fail (hi 1.5)
  //   0.5 > 0.1                    -> 1.25   fail (hi 1.25)
  //   0.25 > 0.1                   -> 1.125  pass (lo 1.125)
  //   0.125 > 0.1 x 1.125 = 0.1125 -> 1.1875 pass (lo 1.1875)
  //   0.0625 <= 0.11875: stop.
  const BisectResult r = bisect(8, 0.1, false, [](double x) { return x <= 1.2; });
  CHECK(r.outcome == BisectResult::kFound);
  CHECK(probe_values(r) == std::vector<double>{8, 4, 2, 1, 1.5, 1.25, 1.125, 1.1875});
  CHECK(r.lo == 1.1875);
  CHECK(r.hi == 1.25);
}

TEST_CASE("headroom bisect: an integer knob (closed-loop users) stops at a gap of 1") {
  // pass(u) = u <= 45, from 32 with tolerance 0.001: 32 pass, 64 fail;
  //   mid 32 + floor(32 / 2) = 48 fail; 32 + 8 = 40 pass; 40 + 4 = 44 pass; 44 + 1 = 46 fail;
  //   44 + floor(2 / 2) = 45 pass; hi - lo = 1: stop.
  const BisectResult r = bisect(32, 0.001, true, [](double u) { return u <= 45; });
  CHECK(probe_values(r) == std::vector<double>{32, 64, 48, 40, 44, 46, 45});
  CHECK(r.lo == 45);
  CHECK(r.hi == 46);
  // With tolerance 0.05 it stops earlier: after 44 pass and 46 fail, 2 <= 0.05 x 44 = 2.2.
  const BisectResult t = bisect(32, 0.05, true, [](double u) { return u <= 45; });
  CHECK(probe_values(t) == std::vector<double>{32, 64, 48, 40, 44, 46});
  CHECK(t.lo == 44);
}

TEST_CASE("headroom bisect: above every doubling, below every halving") {
  // Always passing, from 1: 1, 2, 4, ..., 1024 (1 + kMaxBracketSteps probes); lo 1024, no hi.
  const BisectResult up = bisect(1, 0.05, false, [](double) { return true; });
  CHECK(up.outcome == BisectResult::kAboveAll);
  CHECK(up.probes.size() == 11);
  CHECK(up.lo == 1024);
  CHECK(up.hi == 0);
  // Never passing, from 1: 1, 1/2, ..., 1/1024; no lo, hi = 1/1024.
  const BisectResult down = bisect(1, 0.05, false, [](double) { return false; });
  CHECK(down.outcome == BisectResult::kBelowAll);
  CHECK(down.probes.size() == 11);
  CHECK(down.lo == 0);
  CHECK(down.hi == 1.0 / 1024);
  // An integer knob stops at 1: 5, floor(5/2) = 2, 1.
  const BisectResult users = bisect(5, 0.05, true, [](double) { return false; });
  CHECK(probe_values(users) == std::vector<double>{5, 2, 1});
  CHECK(users.outcome == BisectResult::kBelowAll);
  CHECK(outcome_name(users.outcome) == "below-all");
  CHECK(outcome_name(up.outcome) == "above-all");
  CHECK(outcome_name(BisectResult::kFound) == "found");
}

TEST_CASE("headroom limit: each factor's test, in order") {
  LimitFacts f;
  CHECK(classify_limit(f) == Limit::kNone);
  f.other_miss = 0.1;
  CHECK(classify_limit(f) == Limit::kLatency);
  f.tpot_miss = 0.2;
  CHECK(classify_limit(f) == Limit::kTpot);
  f.ttft_miss = 0.2;  // a tie goes to TTFT
  CHECK(classify_limit(f) == Limit::kTtft);
  f.ttft_miss = 0.1;
  CHECK(classify_limit(f) == Limit::kTpot);
  f.overloaded = true;
  CHECK(classify_limit(f) == Limit::kQueue);
  f.kv_peak = 0.9499;  // below kKvFullShare
  CHECK(classify_limit(f) == Limit::kQueue);
  f.kv_peak = 0.95;
  CHECK(classify_limit(f) == Limit::kMemory);
  LimitFacts p;
  p.preemptions = 1;
  CHECK(classify_limit(p) == Limit::kMemory);
  LimitFacts s;
  s.skipped = 1;
  CHECK(classify_limit(s) == Limit::kMemory);
  CHECK(limit_name(Limit::kQueue) == "queue");
  CHECK(limit_why(Limit::kMemory, LimitFacts{1, 12, 0, false, 0, 0, 0, 0}) ==
        "memory (KV peak 100%, 12 preemptions)");
  CHECK(limit_why(Limit::kTpot, LimitFacts{0, 0, 0, false, 0, 0, 0.25, 0}) ==
        "TPOT/ITL (25% over)");
}

TEST_CASE("headroom limit: facts of a hand-made run") {
  cluster::RunResult r;
  // slo ttft 1 s, tpot 0.1 s, normalized latency 0.5 s/token; five sessions:
  //   a: ttft 2 (over)            b: tpot 0.2 (over)      c: ttft 3 and tpot 0.3 (both over)
  //   d: within every limit       e: no tpot (undefined), normalized 0.9 (over)
  // ttft_miss = {a, c} / 5 = 0.4; tpot_miss = {b, c} / 5 = 0.4; other_miss = {e} / 5 = 0.2.
  r.sessions = {session(2, 0.05, 0.1), session(0.5, 0.2, 0.1), session(3, 0.3, 0.1),
                session(0.5, 0.05, 0.1), session(0.5, -1, 0.9)};
  // One replica of 200 GPU blocks: samples 50, 190, 120 in use -> peak 190 / 200 = 0.95.
  r.summary.gpu_blocks = 200;
  for (int64_t used : {50, 190, 120}) {
    sim::TimeSample t;
    t.gpu_blocks_used = used;
    r.timeseries.push_back(t);
  }
  r.summary.counters.preemptions = 2;
  r.summary.counters.idle_evictions = 1;
  const RunSlo slo = {{"ttft_s", 1}, {"tpot_s", 0.1}, {"normalized_latency_s", 0.5}};
  LimitFacts f = limit_facts(r, slo, TurnSlo{});
  CHECK(f.ttft_miss == doctest::Approx(0.4));
  CHECK(f.tpot_miss == doctest::Approx(0.4));
  CHECK(f.other_miss == doctest::Approx(0.2));
  CHECK(f.kv_peak == doctest::Approx(0.95));
  CHECK(f.preemptions == 3);  // 2 preemptions + 1 idle eviction
  // Turn limit request_ttft_s 1 over turns of TTFT 0.5, 2, 3, 0.1: 2 of 4 over -> 0.5 > 0.4.
  for (double t : {0.5, 2.0, 3.0, 0.1}) {
    sim::TurnRecord tr;
    tr.ttft_s = t;
    r.turns.push_back(tr);
  }
  f = limit_facts(r, slo, TurnSlo{1, 0});
  CHECK(f.ttft_miss == doctest::Approx(0.5));
  CHECK(f.tpot_miss == doctest::Approx(0.4));
  // Two replicas (100 and 200 GPU blocks): replica 0 at 90 of 100, replica 1 at 150 of 200:
  // the peak is replica 0's 0.9, not the fleet's (90 + 150) / 300 = 0.8.
  r.replicas.resize(2);
  r.replicas[0].blocks.gpu = 100;
  r.replicas[1].blocks.gpu = 200;
  sim::TimeSample a, b;
  a.gpu_blocks_used = 90;
  b.gpu_blocks_used = 150;
  r.replica_timeseries = {{0, a}, {1, b}};
  CHECK(limit_facts(r, slo, TurnSlo{}).kv_peak == doctest::Approx(0.9));
}

TEST_CASE("headroom: a load passes when every attainment given reaches the target") {
  CHECK(headroom_pass(0.9, -1, 0.9));  // equal to the target passes
  CHECK_FALSE(headroom_pass(0.89, -1, 0.9));
  CHECK(headroom_pass(-1, 0.95, 0.9));  // only turn limits
  CHECK_FALSE(headroom_pass(0.95, 0.85, 0.9));
  CHECK(headroom_pass(0.95, 0.92, 0.9));
}

TEST_CASE("headroom report: headroom.csv and the table of a hand-made result") {
  HeadroomResult r;
  r.name = "t";
  r.knob = "arrival.rate";
  r.unit = "sessions/s";
  r.start = 2;
  r.knobs.seeds = 2;
  PolicyHeadroom p;
  p.policy = "preserve";
  SeedSearch s1;  // 2 pass, 4 fail (memory), 3 pass: answer 3, first fail 4
  s1.seed = 1;
  s1.lo = 3;
  s1.hi = 4;
  HeadroomProbe fail4{4, 1, 0.8, -1, false, Limit::kMemory, LimitFacts{1, 3, 0, false, 0, 0, 0, 0}};
  s1.probes = {HeadroomProbe{2, 1, 0.95, -1, true, Limit::kNone, LimitFacts{0.5}}, fail4,
               HeadroomProbe{3, 1, 0.92, -1, true, Limit::kNone, LimitFacts{0.75}, 360, 120}};
  SeedSearch s2;  // every doubling passed: 2+ ... shown as a lower bound
  s2.seed = 2;
  s2.outcome = BisectResult::kAboveAll;
  s2.lo = 2048;
  s2.probes = {HeadroomProbe{2048, 2, 1, -1, true, Limit::kNone, LimitFacts{}}};
  p.seeds = {s1, s2};
  p.mean = (3 + 2048) / 2.0;  // 1025.5
  p.worst = 3;
  p.worst_seed = 0;
  p.limit = Limit::kMemory;
  r.policies = {p};
  CHECK(headroom_csv(r) ==
        "policy,seed,probe,rate,attainment,turn_attainment,pass,limit,kv_peak,preemptions,"
        "overloaded,queue_growth_per_s\n"
        "preserve,1,0,2,0.95,,1,none,0.5,0,0,0\n"
        "preserve,1,1,4,0.8,,0,memory,1,3,0,0\n"
        "preserve,1,2,3,0.92,,1,none,0.75,0,0,0\n"
        "preserve,2,0,2048,1,,1,none,0,0,0,0\n");
  CHECK(headroom_table(r) ==
        "headroom t: highest arrival.rate (sessions/s) with SLO attainment >= 0.9; 2 seed(s), "
        "tolerance 0.05\n"
        "policy        mean     worst  seeds    first fail  runs  limited by (at first fail)\n"
        "preserve      1026         3  3 2048+           4     4  memory (KV peak 100%, 3 "
        "preemptions)\n"
        // The worst seed's passing probe at its answer (3) saw arrivals over 120 s < 300 s.
        "note: at an answer the spec's sessions arrive within 120 s: a burst that short may pass "
        "where a steady load fails; --duration 300 keeps each probe's arrivals that long\n");
  r.knobs.duration_s = 300;  // with --duration, no note
  CHECK(headroom_table(r).find("note:") == std::string::npos);
  CHECK(p.runs() == 4);
  CHECK(s1.first_fail() == &s1.probes[1]);
  CHECK(s2.first_fail() == nullptr);
}
