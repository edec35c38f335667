// dynamo-sla on a linear profile and online on a synthetic series where prefill demand doubles:
// targets, stepping, hysteresis and guards, all by hand.
#include <doctest/doctest.h>

#include <initializer_list>

#include "tests/planner_fixtures.h"
#include "tests/sim_fixtures.h"

using namespace isim;
using namespace isim::test::planner_names;  // P, D, M, Changes
using cluster::Role;
using cluster::RoleChange;
using test::make_planner;
using test::PlannerFleet;

TEST_CASE("planner dynamo-sla: replicas from rate x ISL and rate x OSL on a linear profile") {
  // T = 20 ms + 0.125 ms per batched token; max_num_batched_tokens 640, max_num_seqs 512.
  sim::Profile prof = test::round_profile();
  prof.linear = {20.0, 0.125};
  const sim::CostModel cm(prof);
  PlannerFleet f({P, P, D, D, D, D, D, D});
  const int64_t queued[] = {40, 30, 0, 10, 0, 20, 0, 0};
  const int32_t running[] = {0, 0, 5, 1, 7, 2, 9, 3};
  for (size_t r = 0; r < 8; ++r) {
    f.c.cost_models[r] = &cm;
    f.c.max_num_seqs[r] = 512;
    f.m[r].queued_prefill_tokens = queued[r];
    f.m[r].running_sessions = running[r];
    f.m[r].decoding_sessions = 96;
  }
  // Every pull: 10 prefills of 1600 uncached tokens routed; 10 turns finished, ISL 1600, OSL 600.
  f.s.prefill_requests = 10;
  f.s.prefill_tokens = 16000;
  f.s.turns_finished = 10;
  f.s.isl_mean = 1600;
  f.s.osl_mean = 600;

  SUBCASE("targets, then one step a decision") {
    auto p = make_planner("dynamo-sla", {{"adjustment_interval", "30"}});
    // Prefill: 640 tokens / (20 + 80 ms) = 6400 tokens/s; P* = ceil(10 x 1600 / 6400) = 3.
    // Decode at the 50 ms ITL: 20 + 0.125 b <= 50 up to b = 240, 240 / 0.05 s = 4800 tokens/s;
    // D* = ceil(10 x 600 / 4800) = 2. Fixed fleet of 8: floor(8 x 3 / 5) = 4 prefill.
    f.pull(*p, 30);
    CHECK(f.decide(*p) == Changes{{3, P}});  // the decode replica running fewest sessions
    f.pull(*p, 30);
    CHECK(f.decide(*p) == Changes{{5, P}});
    f.pull(*p, 30);
    CHECK(f.decide(*p).empty());
    CHECK(f.of(P) == std::vector<int32_t>{0, 1, 3, 5});

    // Measured TTFT 0.13 s against 0.26 s for one 1600-token prompt on an idle replica (chunks
    // 640, 640, 320: 100 + 100 + 60 ms): correction 0.5, P* = ceil(2.5 x 0.5) = 2. Measured ITL
    // 64 ms against forward(96 decodes) = 32 ms: correction 2, so the ITL target becomes 25 ms:
    // b = 40, 40 / 0.025 s = 1600 tokens/s, D* = ceil(6000 / 1600) = 4. floor(8 x 2 / 6) = 2.
    f.s.ttft_count = 10;
    f.s.ttft_mean_s = 0.13;
    f.s.itl_count = 1000;
    f.s.itl_mean_s = 0.064;
    f.pull(*p, 30);
    CHECK(f.decide(*p) == Changes{{3, D}});  // the prefill replica with least queued prefill
    f.pull(*p, 30);
    CHECK(f.decide(*p) == Changes{{5, D}});
    f.pull(*p, 30);
    CHECK(f.decide(*p).empty());
    CHECK(f.of(P) == std::vector<int32_t>{0, 1});
  }
  SUBCASE("step 2 reaches the target in one decision; correction off ignores TTFT and ITL") {
    auto p = make_planner("dynamo-sla",
                          {{"adjustment_interval", "30"}, {"step", "2"}, {"correction", "no"}});
    f.s.ttft_count = 10;
    f.s.ttft_mean_s = 0.13;
    f.s.itl_count = 1000;
    f.s.itl_mean_s = 0.064;
    f.pull(*p, 30);
    CHECK(f.decide(*p) == Changes{{3, P}, {5, P}});
  }
  SUBCASE("no decision without a prefill routed or before any turn finished") {
    auto p = make_planner("dynamo-sla", {{"adjustment_interval", "30"}});
    f.s.turns_finished = 0;
    f.pull(*p, 30);
    CHECK(f.decide(*p).empty());  // OSL unknown
    f.s.turns_finished = 10;
    f.s.prefill_requests = 0;
    f.s.prefill_tokens = 0;
    f.pull(*p, 30);
    CHECK(f.decide(*p).empty());  // no load measured
  }
}

namespace {

struct OnlineLoad {
  int64_t demand = 0;      // prefill tokens/s for the prefill pool, shared equally
  double capacity = 1000;  // prefill tokens per busy second of a prefill replica
  int64_t queued = -1;     // prefill tokens queued on each prefill replica (-1: leave as set)
  double decode_kv = 0;    // KV utilisation summed over the decode replicas, shared equally
};

// One pull: mixed replicas also prefill 300 tokens each locally, which the snapshot's
// prefill_tokens (what the split sent to prefill replicas) does not include.
void online_pull(PlannerFleet& f, const OnlineLoad& l, std::initializer_list<cluster::Planner*> ps,
                 int times = 1) {
  const auto pre = f.of(P), dec = f.of(D);
  f.s.prefill_tokens = l.demand;
  for (size_t r = 0; r < f.m.size(); ++r) {
    cluster::ReplicaMetrics& m = f.m[r];
    m.prefill_tokens_done = f.c.roles[r] == M ? 300 : 0;
    m.busy_fraction = 0;
  }
  for (const int32_t r : pre) {
    cluster::ReplicaMetrics& m = f.m[static_cast<size_t>(r)];
    m.prefill_tokens_done = l.demand / static_cast<int64_t>(pre.size());
    m.busy_fraction = static_cast<double>(m.prefill_tokens_done) / l.capacity;
    if (l.queued >= 0) m.queued_prefill_tokens = l.queued;
  }
  for (const int32_t r : dec)
    f.m[static_cast<size_t>(r)].kv_utilization = l.decode_kv / static_cast<double>(dec.size());
  for (int i = 0; i < times; ++i) {
    const cluster::FleetSnapshot s = f.snapshot();
    for (cluster::Planner* p : ps) p->observe(s);
  }
}

}  // namespace

TEST_CASE(
    "planner online: prefill demand doubles; hysteresis, backlog, the KV guard, immediate moves") {
  // Replica 0 is mixed (never moved, though it has the least work); 1-4 prefill, 5-8 decode.
  PlannerFleet f({M, P, P, P, P, D, D, D, D});
  const int32_t running[] = {0, 0, 0, 0, 0, 10, 12, 8, 10};
  for (size_t r = 0; r < 9; ++r) f.m[r].running_sessions = running[r];
  auto p = make_planner("online", {{"smoothing", "1"}});
  auto decide = [&](const OnlineLoad& l) {
    online_pull(f, l, {p.get()}, 5);
    return f.decide(*p);
  };
  // Balanced: prefill need 2000 / 1000 = 2 replicas' worth of busy time; decode need 2 replicas'
  // worth of KV (sum of utilisation; slots 40 / 100 = 0.4 less): round(8 x 2 / 4) = 4 = now.
  const OnlineLoad balanced{2000, 1000, 0, 2.0};
  CHECK(decide(balanced).empty());
  CHECK(decide(balanced).empty());

  // Demand doubles: need 4, target round(8 x 4 / 6) = 5, one away: wait for a second decision.
  const OnlineLoad doubled{4000, 1000, 0, 2.0};
  CHECK(decide(doubled).empty());
  f.c.switching[7] = 1;  // the least busy decode replica is switching: the next one moves
  CHECK(decide(doubled) == Changes{{5, P}});
  CHECK(decide(doubled).empty());  // 8 x 4 / 6 still rounds to 5
  f.c.switching[7] = 0;

  // A backlog of 5 x 4000 tokens, drained in 10 s at 1000 tokens/s, adds 2: round(8 x 6 / 8) = 6.
  const OnlineLoad backlog{4000, 1000, 4000, 2.0};
  CHECK(decide(backlog).empty());
  CHECK(decide(backlog) == Changes{{7, P}});

  // Need 4 + 6 x 8000 / 10000 = 8.8 against decode KV 2 x 0.95 = 1.9: round(6.58) = 7. The second
  // decision would act, but the decode replicas' mean KV utilisation 0.95 > 0.9 guards them.
  CHECK(decide({4000, 1000, 8000, 1.9}).empty());
  CHECK(decide({4000, 1000, 8000, 1.9}).empty());
  CHECK(decide({4000, 1000, 8000, 1.7}) == Changes{{8, P}});  // KV 0.85: round(6.70) = 7

  // Decode-heavy: need 1 + 3200 / 10000 = 1.32; decode replica 6 runs 12 and has 30 waiting:
  // KV 0.6 x 42 / 12 = 2.1. round(8 x 1.32 / 3.42) = 3, four away: at once, one step.
  const int64_t queued[] = {0, 500, 300, 300, 700, 100, 0, 900, 400};
  for (size_t r = 0; r < 9; ++r) f.m[r].queued_prefill_tokens = queued[r];
  f.m[6].waiting_sessions = 30;
  CHECK(decide({1000, 1000, -1, 0.6}) == Changes{{5, D}});
  CHECK(f.c.roles[0] == M);
}

TEST_CASE("planner online: smoothing, and no decision before the prefill capacity is measured") {
  PlannerFleet f({P, P, P, P, D, D, D, D});
  auto idle = make_planner("online");
  online_pull(f, {0, 2000, 0, 2.0}, {idle.get()}, 5);  // the prefill replicas never busy
  CHECK(idle->decide(f.c).empty());
  // Demand 2000 tokens/s for 4 pulls, then one of 6000; capacity 2000 tokens per busy second.
  // Smoothing 1: need 3, round(8 x 3 / 5) = 5. Smoothing 0.5: 0.5 x 6000 + 0.5 x 2000 = 4000,
  // need 2, round(8 x 2 / 4) = 4, as now.
  auto sharp = make_planner("online", {{"smoothing", "1"}, {"patience", "1"}});
  auto smooth = make_planner("online", {{"smoothing", "0.5"}, {"patience", "1"}});
  online_pull(f, {2000, 2000, 0, 2.0}, {sharp.get(), smooth.get()}, 4);
  online_pull(f, {6000, 2000, 0, 2.0}, {sharp.get(), smooth.get()});
  CHECK(smooth->decide(f.c).empty());
  CHECK(sharp->decide(f.c) == Changes{{4, P}});
}
