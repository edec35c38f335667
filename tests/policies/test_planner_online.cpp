// online, rebuilt (policies/planners/online.cpp): the learned tool-wait model, one forecast
// from a hand-built paused-agent population, the SLO sizing on a linear profile, and the control
// law's dead band, switch-cost rule, hysteresis and determinism, all by hand.
#include <doctest/doctest.h>

#include "policies/planners/forecast.h"
#include "policies/planners/pool_sizing.h"
#include "policies/planners/tool_waits.h"
#include "tests/planner_fixtures.h"
#include "tests/sim_fixtures.h"

using namespace isim;
using namespace isim::test::planner_names;  // P, D, M, Changes
using policy::planners::Demand;
using policy::planners::DemandRates;
using policy::planners::PoolSizing;
using policy::planners::SloTargets;
using policy::planners::ToolWaits;
using test::make_planner;
using test::PlannerFleet;

TEST_CASE("tool waits: P(return in (e, e + h] | still paused at e) from the samples") {
  ToolWaits w(10, 3);
  for (const double d : {1.0, 2.0, 4.0, 8.0}) w.add_wait("grep", d, static_cast<int64_t>(d * 100));
  // Alive after 1.5 s: 2, 4, 8; of those, 2 and 4 end by 4.5 s: 2/3.
  CHECK(w.p_return("grep", 1.5, 3) == doctest::Approx(2.0 / 3));
  CHECK(w.p_return("grep", 0, 1) == doctest::Approx(0.25));      // 1 of 4 ends in (0, 1]
  CHECK(w.p_return("grep", 8, 5) == doctest::Approx(5.0 / 13));  // none outlived 8 s: prior
  CHECK(w.returned_tokens("grep") == doctest::Approx(375));      // (100 + 200 + 400 + 800) / 4
  // One "edit" sample is below min_samples 3: the pool (1, 2, 4, 8, 100) answers. Alive after
  // 5 s: 8 and 100; only 8 ends by 15 s: 1/2. Returned: (100 + 200 + 400 + 800 + 1000) / 5.
  w.add_wait("edit", 100, 1000);
  CHECK(w.p_return("edit", 5, 10) == doctest::Approx(0.5));
  CHECK(w.returned_tokens("edit") == doctest::Approx(500));
  CHECK(w.next_output("grep") == 0);  // no outputs at all yet
  w.add_output("grep", 30);
  w.add_output("grep", 60);
  w.add_output("edit", 90);
  CHECK(w.next_output("grep") == doctest::Approx(60));  // pooled: (30 + 60 + 90) / 3
  w.add_output("grep", 120);
  CHECK(w.next_output("grep") == doctest::Approx(70));  // its own: (30 + 60 + 120) / 3
  CHECK(w.waits_seen() == 5);

  ToolWaits cold(3, 1);
  CHECK(cold.p_return("x", 10, 30) == doctest::Approx(0.75));  // prior 30 / (10 + 30)
  for (const double d : {1.0, 2.0, 4.0, 8.0}) cold.add_wait("x", d, 0);
  CHECK(cold.p_return("x", 0, 2) == doctest::Approx(1.0 / 3));  // window 3 keeps 2, 4, 8
}

TEST_CASE("forecast: three paused sessions, their kinds' history, new sessions and the pools") {
  ToolWaits w(16, 2);
  const double bash[] = {2, 6, 10, 30};
  const int64_t bash_ret[] = {400, 400, 800, 800};
  for (int i = 0; i < 4; ++i) w.add_wait("bash", bash[i], bash_ret[i]);
  w.add_wait("read", 1, 2000);
  w.add_wait("read", 3, 4000);
  w.add_output("bash", 100);
  w.add_output("bash", 300);
  w.add_output("read", 50);  // one sample: "read" answers from the pool

  cluster::FleetSnapshot s;
  s.replicas.resize(3);
  s.replicas[0].role = P;
  s.replicas[0].queued_prefill_tokens = 1000;
  s.replicas[1].role = D;
  s.replicas[1].decoding_sessions = 4;
  s.replicas[1].waiting_sessions = 1;
  s.replicas[1].kv_utilization = 0.5;
  s.replicas[2].role = D;
  s.replicas[2].decoding_sessions = 2;
  s.replicas[2].kv_utilization = 0.25;
  s.paused = {{"bash", 5, 10000, 10000, 1}, {"bash", 0, 4000, 0, 2}, {"read", 2, 8000, 8000, 0}};
  const std::vector<int64_t> cap = {100000, 100000, 100000};
  DemandRates r;
  r.new_sessions = 0.1;
  r.new_input_tokens = 500;
  r.output_per_turn = 400;
  r.routed_requests = 2;
  r.routed_tokens = 3000;

  // h = 10 s. bash returns 600 tokens (mean of 400, 400, 800, 800), outputs 200 (100, 300);
  // read returns 3000, outputs 150 (the pool: 100, 300, 50).
  // A: bash at 5 s, durations alive 6, 10, 30, ending by 15 s: 6, 10: P = 2/3; its KV is held on
  //    a decode replica: uncached 600.
  // B: bash at 0 s: 2, 6, 10 of 4 end by 10 s: P = 3/4; nothing held: uncached 600 + 4000.
  // C: read at 2 s: alive 3, ends by 12 s: P = 1; held on a prefill replica, so not counted:
  //    uncached 3000 + 8000.
  const Demand d = policy::planners::forecast(s, cap, w, r, 10, 0.05);
  // 2/3 x 600 + 3/4 x 4600 + 11000 + 500 x 10 = 400 + 3450 + 11000 + 5000.
  CHECK(d.prefill_tokens == doctest::Approx(19850));
  CHECK(d.prefill_requests == doctest::Approx(2.0 / 3 + 0.75 + 1 + 1));
  CHECK(d.backlog_tokens == doctest::Approx(1000));
  // 2/3 x 200 + 3/4 x 200 + 150 + 0.1 x 10 x 400 + 6 decoding x 400 / 2.
  CHECK(d.decode_tokens == doctest::Approx(400.0 / 3 + 150 + 150 + 400 + 1200));
  CHECK(d.decoders == doctest::Approx((400.0 / 3 + 1900) * 0.05 / 10));
  // KV in use 50000 + 25000, + 2/3 x 800 + 3/4 x 4800 + 11150 + 5000 + 400.
  CHECK(d.kv_tokens == doctest::Approx(75000 + 1600.0 / 3 + 3600 + 11150 + 5400));

  // The ablation sees only now: routed rates x 10 s, 7 sessions on the decode replicas.
  const Demand o = policy::planners::observed(s, cap, r, 10, 0.05);
  CHECK(o.prefill_tokens == doctest::Approx(30000));
  CHECK(o.prefill_requests == doctest::Approx(20));
  CHECK(o.decode_tokens == doctest::Approx(1400));
  CHECK(o.decoders == doctest::Approx(7));
  CHECK(o.kv_tokens == doctest::Approx(75000));
}

TEST_CASE("pool sizing on a linear profile: TTFT queueing with headroom, the ITL batch, the KV") {
  // T = 20 ms + 0.125 ms per batched token: a 640-token chunk takes 100 ms, mu = 6400 tokens/s.
  sim::Profile prof = test::round_profile();
  prof.linear = {20.0, 0.125};
  const PoolSizing z(prof, 640, 512, 100000, SloTargets{0.5, 0.05, 0.8});
  CHECK(z.prefill_tokens_per_s() == doctest::Approx(6400));
  // 640-token prompts: s = 0.1 s, x = 0.4 s, rho_ttft = 0.8 / 0.9 = 0.89 > headroom 0.8.
  CHECK(z.prefill_capacity(640) == doctest::Approx(0.8 * 6400));
  // TTFT 0.2 s: x = 0.1, rho = 0.2 / 0.3; TTFT 0.05 s < s: headroom alone.
  CHECK(PoolSizing(prof, 640, 512, 0, {0.2, 0.05, 0.8}).prefill_capacity(640) ==
        doctest::Approx(6400.0 * 2 / 3));
  CHECK(PoolSizing(prof, 640, 512, 0, {0.05, 0.05, 0.8}).prefill_capacity(640) ==
        doctest::Approx(5120));
  // 20 + 0.125 b <= 50 ms up to b = 240; max_num_seqs 100 caps it; a 10 ms ITL fits none: 1.
  CHECK(z.decode_batch(1000) == 240);
  CHECK(PoolSizing(prof, 640, 100, 0, {0.5, 0.05, 0.8}).decode_batch(1000) == 100);
  CHECK(PoolSizing(prof, 640, 512, 0, {0.5, 0.01, 0.8}).decode_batch(1000) == 1);
  // (96000 + 6400) tokens over 10 s at 5120 tokens/s: 2 replicas. Decode: 600 / 240 = 2.5 by
  // ITL, 300000 / 100000 = 3 by KV.
  Demand d;
  d.prefill_tokens = 96000;
  d.prefill_requests = 150;
  d.backlog_tokens = 6400;
  d.decoders = 600;
  d.kv_tokens = 300000;
  const auto n = z.needs(d, 10, 1000);
  CHECK(n.prefill == doctest::Approx(2.0));
  CHECK(n.decode == doctest::Approx(3.0));
  d.kv_tokens = 0;
  CHECK(z.needs(d, 10, 1000).decode == doctest::Approx(2.5));
}

namespace {

// Two prefill and four decode replicas on the linear profile above, each with 100000 KV tokens;
// online with forecast off (the observed demand), h = 10 s, smoothing 1.
struct OnlineFleet {
  sim::Profile prof;
  std::unique_ptr<sim::CostModel> cm;
  PlannerFleet f{{P, P, D, D, D, D}};

  OnlineFleet() : prof(test::round_profile()) {
    prof.linear = {20.0, 0.125};
    cm = std::make_unique<sim::CostModel>(prof);
    const int32_t running[] = {0, 0, 30, 10, 20, 40};
    for (size_t r = 0; r < 6; ++r) {
      f.c.cost_models[r] = cm.get();
      f.c.max_num_seqs[r] = 512;
      f.m[r].running_sessions = running[r];
      f.m[r].kv_utilization = f.c.roles[r] == D ? 0.2 : 0;
    }
    f.c.kv_capacity_tokens.assign(6, 100000);
  }
  // One pull: `requests` prefills of 640 tokens routed in the second, `decoding` sessions
  // decoding on each decode replica.
  std::vector<cluster::RoleChange> decide(cluster::Planner& p, int64_t requests, int32_t decoding) {
    f.s.prefill_requests = requests;
    f.s.prefill_tokens = requests * 640;
    for (size_t r = 0; r < 6; ++r) f.m[r].decoding_sessions = f.c.roles[r] == D ? decoding : 0;
    f.pull(p);
    return f.decide(p);
  }
};

std::unique_ptr<cluster::Planner> observed_online(const std::string& patience = "2") {
  return make_planner(
      "online",
      {{"forecast", "false"}, {"horizon_s", "10"}, {"smoothing", "1"}, {"patience", patience}});
}

}  // namespace

TEST_CASE("planner online: dead band, switch cost against the SLO it saves, hysteresis") {
  // Prefill capacity 5120 tokens/s a replica (640-token prompts, headroom 0.8); a decode
  // replica takes 240 sessions within the 50 ms ITL. Decode KV: 4 x 0.2 x 100000 = 0.8
  // replicas. A decode replica leaving costs 0.2 x 100000 / 6400 = 3.125 s of prefill.
  OnlineFleet o;
  auto p = observed_online();
  // 10 x 640 / 5120 = 1.25 prefill, 400 / 240 = 1.67 decode: both satisfied.
  CHECK(o.decide(*p, 10, 100).empty());
  // 17 requests: 2.125, short by less than the dead band 0.25.
  CHECK(o.decide(*p, 17, 100).empty());
  CHECK(o.decide(*p, 17, 100).empty());
  // 20 requests: need 2.5. V(2) = 10 x 0.5 x 2.5 / 2 = 6.25, V(3) = 0; decode stays satisfied
  // with 3. Gain 6.25 > 3.125: after a second agreeing decision, the least-running decode
  // replica (3) moves. A hold in between restarts the count.
  CHECK(o.decide(*p, 20, 100).empty());
  CHECK(o.decide(*p, 10, 100).empty());
  CHECK(o.decide(*p, 20, 100).empty());
  CHECK(o.decide(*p, 20, 100) == Changes{{3, P}});
  CHECK(o.f.of(P) == std::vector<int32_t>{0, 1, 3});
}

TEST_CASE("planner online: the switch cost blocks a move worth less, not one worth more") {
  OnlineFleet o;
  o.f.c.switch_cost_s = 5;  // cost 5 + 3.125 = 8.125
  auto p = observed_online("1");
  CHECK(o.decide(*p, 20, 100).empty());  // gain 6.25
  // 30 requests: need 3.75; V(2) = 10 x 1.75 x 3.75 / 2 = 32.8125, V(3) = 10 x 0.75 x 3.75 / 3 =
  // 9.375: gain 23.4375 > 8.125.
  CHECK(o.decide(*p, 30, 100) == Changes{{3, P}});
}

TEST_CASE("planner online: both pools short, it favours the one whose shortfall costs more") {
  OnlineFleet o;
  auto p = observed_online("1");
  // Prefill need 3.75 (V 32.8125 at 2, 9.375 at 3); decode 270 x 4 / 240 = 4.5 (V(4) = 10 x 0.5
  // x 4.5 / 4 = 5.625, V(3) = 10 x 1.5 x 4.5 / 3 = 22.5). Prefill costs more: gain 32.8125 +
  // 5.625 - 9.375 - 22.5 = 6.5625 > 3.125, a decode replica moves.
  CHECK(o.decide(*p, 30, 270) == Changes{{3, P}});
  // Now 3:3 with 270 on each of 3 decode replicas: decode need 810 / 240 = 3.375, V(3) = 10 x
  // 0.375 x 3.375 / 3 = 4.21875; prefill V(3) = 9.375 still costs more, but another decode
  // replica taken would leave V(2) = 10 x 1.375 x 3.375 / 2 = 23.203125: gain 9.375 + 4.21875 -
  // 23.203125 < 0, hold.
  CHECK(o.decide(*p, 30, 270).empty());
}

TEST_CASE("planner online: equal snapshots give equal decisions; parameters named") {
  OnlineFleet a, b;
  auto pa = make_planner("online", {{"horizon_s", "10"}, {"smoothing", "1"}, {"patience", "1"}});
  auto pb = make_planner("online", {{"horizon_s", "10"}, {"smoothing", "1"}, {"patience", "1"}});
  for (int k = 0; k < 6; ++k) {
    for (OnlineFleet* o : {&a, &b}) {
      o->f.s.paused = {{"bash", 1.0 * k, 5000, 0, 2}, {"read", 0.5, 20000, 20000, 3}};
      o->f.s.intercepts_ended = {{"bash", 2.0 + k, 300}};
      o->f.s.resumed_turns = {{"bash", 150}};
      o->f.s.arrivals = k % 2;
      o->f.s.arrival_input_tokens = 3000 * (k % 2);
    }
    CHECK(a.decide(*pa, 12 + 4 * k, 100) == b.decide(*pb, 12 + 4 * k, 100));
  }
  CHECK(a.f.c.roles == b.f.c.roles);
}

TEST_CASE(
    "planner online: paused agents about to return move a replica before their prefills come") {
  // One "bash" call has ended (5 s, 640 tokens returned), so with min_samples 1 a bash call
  // paused for 1 s returns within h = 10 s with probability 1 (the only longer wait, 5 s, ended
  // by 11 s). 100 such sessions, 640-token contexts whose KV is gone: 1280 uncached tokens each,
  // 128000 in all, nothing routed yet. Prompts of 1280: s = 0.2 s, x = 0.3 s, rho = 0.6 / 0.8 =
  // 0.75 < 0.8: 4800 tokens/s a replica, need 128000 / 10 / 4800 = 2.67 against 2. V(2) = 10 x
  // 0.67 x 2.67 / 2 = 8.89, V(3) = 0. Decode: no output known (0), KV 80000 + 128000 = 2.08
  // replicas of 3. Gain 8.89 > 3.125: decode replica 3 moves. The ablation sees no demand.
  OnlineFleet a, b;
  auto fc = make_planner(
      "online", {{"horizon_s", "10"}, {"smoothing", "1"}, {"patience", "1"}, {"min_samples", "1"}});
  auto now = make_planner("online", {{"horizon_s", "10"},
                                     {"smoothing", "1"},
                                     {"patience", "1"},
                                     {"min_samples", "1"},
                                     {"forecast", "false"}});
  for (OnlineFleet* o : {&a, &b}) {
    o->f.s.intercepts_ended = {{"bash", 5.0, 640}};
    o->f.s.paused.assign(100, cluster::PausedSession{"bash", 1.0, 640, 0, 2});
  }
  CHECK(a.decide(*fc, 0, 0) == Changes{{3, P}});
  CHECK(b.decide(*now, 0, 0).empty());
}
