// dynamo-sla on a linear profile: targets, stepping and corrections, all by hand (online's own
// tests are in test_planner_online.cpp).
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
