// dynamo-load (Dynamo's regression load planner) and schedule (the per-phase oracle), on
// hand-set snapshots (tests/planner_fixtures.h): the regression, the all-engines rule, the
// consolidation check, and a schedule's moves.
#include <doctest/doctest.h>

#include "core/input_error.h"
#include "tests/planner_fixtures.h"

using namespace isim;
using namespace isim::test::planner_names;  // P, D, M, Changes
using cluster::Role;
using test::make_planner;
using test::PlannerFleet;

namespace {

// Prefill observations on r0 (one first token per pull, input 1000 tokens): queued prefill
// tokens q and TTFT y. x = q + 1000 = 1000 .. 5000, y = 0.2, 0.25, 0.45, 0.5, 0.6 s.
// Least squares: mean x 3000, mean y 0.4; deviations -2000 .. 2000 and -0.2, -0.15, 0.05,
// 0.1, 0.2; sxy = 400 + 150 + 0 + 100 + 400 = 1050, sxx = 1e7, so a = 1.05e-4 s per token,
// b = 0.4 - 0.315 = 0.085 s. At the 0.5 s SLA: x_sla = 0.415 / 1.05e-4 = 3952.38 tokens,
// less the mean input 1000: every prefill engine above 2952.38 queued tokens is over the SLA.
constexpr int64_t kQueued[] = {0, 1000, 2000, 3000, 4000};
constexpr double kTtft[] = {0.2, 0.25, 0.45, 0.5, 0.6};
// Decode observations on r2 (10 gaps per pull): active blocks B and ITL 0.01 + 1e-4 B, a line:
// at the 0.05 s SLA, x_sla = 0.04 / 1e-4 = 400 blocks. With two decode engines the
// consolidation boundary is 400 x 1/2 x 0.8 = 160 blocks.
constexpr int64_t kBlocks[] = {100, 200, 300, 400};

// Five pulls; the last one's loads are the ones decided on: r1's queue `q1`, r2's and r3's
// active blocks `b2` (r2's fifth observation) and `b3` (r3 reports no gaps).
void train(PlannerFleet& f, cluster::Planner& p, int64_t q1, int64_t b2, int64_t b3) {
  for (size_t k = 0; k < 5; ++k) {
    f.m[0].ttft_count = 1;
    f.m[0].ttft_isl_mean = 1000;
    f.m[0].queued_prefill_tokens = kQueued[k];
    f.m[0].ttft_mean_s = kTtft[k];
    f.m[1].queued_prefill_tokens = q1;
    const int64_t b = k < 4 ? kBlocks[k] : b2;
    f.m[2].itl_count = 10;
    f.m[2].active_kv_blocks = b;
    f.m[2].itl_mean_s = 0.01 + 1e-4 * static_cast<double>(b);
    f.m[3].active_kv_blocks = b3;
    f.pull(p);
  }
}

}  // namespace

TEST_CASE("planner dynamo-load: defaults (Dynamo's) and parameter checks") {
  auto p = make_planner("dynamo-load");
  CHECK(p->pull_interval_s() == 1.0);
  CHECK(p->interval_s() == 5.0);
  using Facts = std::vector<std::pair<std::string, std::string>>;
  CHECK(p->describe() == Facts{{"metric_pulling_interval", "1"},
                               {"load_adjustment_interval", "5"},
                               {"ttft_s", "0.5"},
                               {"itl_s", "0.05"},
                               {"max_num_fpm_samples", "64"},
                               {"load_min_observations", "5"},
                               {"load_scaling_down_sensitivity", "80"}});
  CHECK_THROWS_WITH_AS(make_planner("dynamo-load", {{"load_scaling_down_sensitivity", "120"}}),
                       "cluster.planner.load_scaling_down_sensitivity: must be <= 100", InputError);
  CHECK_THROWS_WITH_AS(make_planner("dynamo-load", {{"load_adjustment_interval", "0.5"}}),
                       "cluster.planner.load_adjustment_interval: must be at least "
                       "metric_pulling_interval (1)",
                       InputError);
}

TEST_CASE("planner dynamo-load: scales a pool up only when every engine is over the SLA") {
  PlannerFleet f({P, P, D, D});
  auto p = make_planner("dynamo-load");
  SUBCASE("both prefill engines above 2952.38 queued tokens: a decode engine moves to prefill") {
    // r0 4000 and r1 2960 > 2952.38; decode: r2 500 > 400 but r3 100 is not, and r2 is not
    // below 160: decode wants nothing. The decode replica with the fewest running sessions
    // (both 0: the lower index) goes.
    train(f, *p, 2960, 500, 100);
    CHECK(f.decide(*p) == Changes{{2, P}});
  }
  SUBCASE("one prefill engine within the SLA: nothing") {
    train(f, *p, 2950, 500, 100);  // 2950 < 2952.38
    CHECK(f.decide(*p).empty());
  }
  SUBCASE("fewer than load_min_observations observations: nothing") {
    // Five pulls, six needed.
    auto q = make_planner("dynamo-load", {{"load_min_observations", "6"}});
    train(f, *q, 2960, 500, 100);
    CHECK(f.decide(*q).empty());
  }
  SUBCASE("a switching replica blocks every change (Dynamo scales blocking)") {
    train(f, *p, 2960, 500, 100);
    f.c.switching[3] = 1;
    CHECK(f.decide(*p).empty());
  }
}

TEST_CASE("planner dynamo-load: scales down only after the consolidation check") {
  PlannerFleet f({P, P, D, D});
  f.m[2].running_sessions = 5;  // r3 (0 running) is the decode replica that moves
  auto p = make_planner("dynamo-load");
  SUBCASE("both decode engines below 160 blocks: one goes to prefill") {
    // Prefill: r0 4000 is above target, r1 2000 is not, and neither pool-wide rule holds.
    train(f, *p, 2000, 150, 100);
    CHECK(f.decide(*p) == Changes{{3, P}});
  }
  SUBCASE("170 blocks: the remaining engine might exceed the SLA, nothing moves") {
    train(f, *p, 2000, 170, 100);
    CHECK(f.decide(*p).empty());
  }
}

TEST_CASE("planner dynamo-load: a non-positive slope falls back to the smallest load under SLA") {
  // Decode: B 100..500 with ITL 0.06, 0.055, 0.04, 0.045, 0.03 s (mean 0.046; sxy = -7 x 1e-3 x 1e3
  // < 0). Under 0.05 s: B 300, 400, 500, so x_sla = 300. r2 500 and r3 350 both exceed it: decode
  // +1, from the prefill replica with the least queued prefill (r1: 0 against r0: 10).
  PlannerFleet f({P, P, D, D});
  auto p = make_planner("dynamo-load");
  const double itl[] = {0.06, 0.055, 0.04, 0.045, 0.03};
  for (size_t k = 0; k < 5; ++k) {
    f.m[0].queued_prefill_tokens = 10;
    f.m[2].itl_count = 4;
    f.m[2].active_kv_blocks = 100 * static_cast<int64_t>(k + 1);
    f.m[2].itl_mean_s = itl[k];
    f.m[3].active_kv_blocks = 350;
    f.pull(*p);
  }
  CHECK(f.decide(*p) == Changes{{1, D}});
}

TEST_CASE("planner schedule: moves the fleet to each prefill count from its time on") {
  PlannerFleet f({P, P, D, D, D, D});
  auto p = make_planner("schedule", {{"at_s", "[3, 10, 20]"}, {"prefill", "4, 1, 9"}});
  CHECK(p->interval_s() == 1.0);
  f.c.now = sim::from_seconds(2);
  CHECK(f.decide(*p).empty());  // before t0 the initial roles stay
  f.c.now = sim::from_seconds(5);
  CHECK(f.decide(*p) == Changes{{2, P}, {3, P}});  // 2 -> 4 in one decision
  CHECK(f.decide(*p).empty());                     // reached
  f.c.now = sim::from_seconds(15);
  CHECK(f.decide(*p) == Changes{{0, D}, {1, D}, {2, D}});  // 4 -> 1
  f.c.now = sim::from_seconds(25);
  // 9 is clamped to n - 1 = 5: decode 0, 1, 2, 4, 5 lose 4 (one always stays): 5 prefill.
  CHECK(f.decide(*p) == Changes{{0, P}, {1, P}, {2, P}, {4, P}});
  CHECK(f.of(D) == std::vector<int32_t>{5});
}

TEST_CASE("planner schedule: bad schedules name their key") {
  auto err = [](std::map<std::string, std::string> params) {
    try {
      make_planner("schedule", std::move(params));
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(err({{"prefill", "1"}}).find("cluster.planner.at_s: missing") == 0);
  CHECK(err({{"at_s", "0, 10"}, {"prefill", "2"}}) ==
        "cluster.planner.prefill: needs one count per time of at_s (2), got 1");
  const std::string at_s =
      "cluster.planner.at_s: times must be increasing, in [0, 10000000] s (10^7 s, 116 days: "
      "longer than any trace)";
  const std::string prefill =
      "cluster.planner.prefill: counts must be whole numbers in [1, 65536] (the fleet's replica "
      "cap)";
  CHECK(err({{"at_s", "10, 10"}, {"prefill", "2, 3"}}) == at_s);
  CHECK(err({{"at_s", "0"}, {"prefill", "1.5"}}) == prefill);
  // The upper ends: a time past 10^7 s, a count past 65536 (10^7 and 65536 themselves pass).
  CHECK(err({{"at_s", "0, 10000001"}, {"prefill", "1, 2"}}) == at_s);
  CHECK(err({{"at_s", "0"}, {"prefill", "65537"}}) == prefill);
  CHECK(err({{"at_s", "0, 10000000"}, {"prefill", "1, 65536"}}) == "no error");
  CHECK(err({{"at_s", "0, x"}, {"prefill", "1, 2"}}).find("cluster.planner.at_s: expected") == 0);
}
