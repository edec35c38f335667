// Sizing by simulation: the search over fleet sizes on synthetic verdicts, fleets of the
// hand-computable plans (the guess passes and one replica fewer fails; the guess fails and one
// more passes), and how the report shows routers and a fleet that meets the SLOs at no size.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "experiments/plan/plan.h"
#include "tests/experiments/plan_fixtures.h"

using namespace isim;

namespace {

exp::Verdict verdict(bool pass, const std::string& reason = "synthetic") {
  exp::Verdict v;
  v.pass = pass;
  if (!pass) v.reason = reason;
  return v;
}

// The fleet search with `passes(n)` as the verdict of n replicas; records the sizes asked.
exp::FleetSearch search(int64_t guess, bool (*passes)(int64_t), double factor = 2) {
  return exp::search_fleet(
      guess, [&](int64_t n) { return verdict(passes(n)); }, factor);
}

}  // namespace

TEST_CASE("the fleet search steps down from a passing guess and up from a failing one") {
  SUBCASE("the guess passes: down while sizes pass, stopping at the first failure") {
    auto f = search(5, [](int64_t n) { return n >= 4; });
    CHECK(f.simulated() == "5:pass 4:pass 3:fail");
    CHECK(f.sized == 4);
    CHECK(f.limited_by() == "3: synthetic");
  }
  SUBCASE("never below one replica") {
    auto f = search(2, [](int64_t) { return true; });
    CHECK(f.simulated() == "2:pass 1:pass");
    CHECK(f.sized == 1);
    CHECK(f.limited_by().empty());
  }
  SUBCASE("the guess fails: up until a size passes") {
    auto f = search(5, [](int64_t n) { return n >= 7; });
    CHECK(f.simulated() == "5:fail 6:fail 7:pass");
    CHECK(f.sized == 7);
    CHECK(f.limited_by() == "6: synthetic");  // the largest failing size below the fleet
  }
  SUBCASE("no size up to the bound passes: not met") {
    auto f = search(3, [](int64_t) { return false; });
    CHECK(f.bound == 7);  // max(2 x 3, 3 + 4)
    CHECK(f.simulated() == "3:fail 4:fail 5:fail 6:fail 7:fail");
    CHECK(f.sized == 0);
    CHECK(f.limited_by() == "7: synthetic");
  }
  CHECK(exp::fleet_bound(3, 2) == 7);    // 3 + 4
  CHECK(exp::fleet_bound(10, 2) == 20);  // 2 x 10
  CHECK(exp::fleet_bound(5, 1.5) == 9);  // max(ceil(7.5), 9)
  CHECK(exp::fleet_bound(9, 1.5) == 14);
}

TEST_CASE("the guessed fleet passes and one replica fewer fails") {
  // The hand plan: capacity 7.875 sessions/s per replica, so the guess for 50/s is 7. Its 400
  // sessions arrive 20 ms apart and each is one 125 ms prefill. Round-robin gives replica k of 7
  // the sessions k, k + 7, ...: 140 ms apart, so every TTFT is 125 ms. Of 6, they arrive 120 ms
  // apart and queue: 6 replicas serve 48 sessions/s, not 50 (test_plan.cpp has the p99).
  auto d = test::scratch("fleet-down");
  auto p = exp::load_plan(test::hand_plan(d), {});
  auto r = exp::run_plan(p, exp::PlanOptions{});
  REQUIRE(r.ranked.size() == 2);
  for (const auto& c : r.ranked) {
    CAPTURE(c.candidate->policy);
    CHECK(c.router->name == "round-robin");
    CHECK(c.guess == 7);
    CHECK(c.fleet.simulated() == "7:pass 6:fail");
    REQUIRE(c.fleet.checks.size() == 2);
    CHECK(c.fleet.checks[0].verdict.values[0] == doctest::Approx(0.125));
    CHECK(c.fleet.limited_by().rfind("6: seed 1: ttft_s.p99 ", 0) == 0);
    CHECK(c.fleet_runs == 3);  // 7 replicas with both seeds; 6 fail on the first
    CHECK(c.sizing.replicas == 7);
    CHECK(c.sizing.cost_per_hour == 14.0);
  }
}

TEST_CASE("a guessed fleet that fails grows until one passes") {
  // Sessions alternate 215 and 15 prompt tokens: 225 ms and 25 ms prefills, 125 ms on average,
  // with a 216-token batch limit (so never two in one batch that matters here). One replica:
  // at rate r <= 8 the long one runs alone (the next long one arrives 2/r >= 250 ms later) and
  // the short one waits for it, so the TTFTs are 225 ms and max(25, 250 - 1000/r) ms, within
  // 0.3 s; above 8 the backlog grows by 250 - 2000/r ms a pair and the p99 passes 0.3 s. The
  // search probes as in the uniform plan and finds 7.875, so the guess for 30/s is
  // ceil(30 / 7.875) = 4. Round-robin over 4 replicas sends every long session to replicas 0
  // and 2: 7.5 per second each, where they serve 1 / 0.225 = 4.44, so the fleet's queue grows
  // by 6.1 sessions/s > 5% of 30. Over 5 (odd) each replica alternates long and short, 167 ms
  // apart: TTFTs 225 and 83 ms.
  auto d = test::scratch("fleet-up");
  const std::string spec = test::hand_plan(d, "{ttft_s.p99: 0.3}");
  test::hand_trace(d, 400, {215, 15});
  auto p = exp::load_plan(spec, {"peak_rate=30", "engine.max_num_batched_tokens=216"});
  auto r = exp::run_plan(p, exp::PlanOptions{});
  REQUIRE(r.ranked.size() == 2);
  for (const auto& c : r.ranked) {
    CAPTURE(c.candidate->policy);
    for (const auto& s : c.seeds) CHECK(s.capacity == 7.875);
    CHECK(c.guess == 4);
    CHECK(c.fleet.simulated() == "4:fail 5:pass");
    CHECK(c.fleet.limited_by() == "4: seed 1: diverged (queue grows)");
    REQUIRE(c.fleet.checks.size() == 2);
    CHECK(c.fleet.checks[1].verdict.values[0] == doctest::Approx(0.225));
    CHECK(c.fleet_runs == 3);
    CHECK(c.sizing.replicas == 5);
    CHECK(c.sizing.gpus == 5);
    CHECK(c.sizing.cost_per_hour == 10.0);
  }
}

TEST_CASE("the report names the router and a fleet that meets the SLOs at no simulated size") {
  exp::PlanSpec spec;
  spec.name = "r";
  spec.peak_rate = 10;
  spec.seeds = {1};
  spec.slos = {{"ttft_s.p99", 4, "p99", 2.0}};
  spec.deployments = {{"d", "G", "/p/g.yaml", "measured", 1, 2.0, {}}};
  spec.candidates.resize(1);
  spec.candidates[0].policy = "preserve";
  spec.routers = {{"session-affinity", Params{}, "session-affinity"},
                  {"round-robin", Params{}, "round-robin"}};
  exp::PlanResult r;
  r.spec = &spec;
  r.output_tokens_per_session = 100;
  for (size_t k = 0; k < 2; ++k) {
    exp::CandidateResult c;
    c.candidate = &spec.candidates[0];
    c.router = &spec.routers[k];
    exp::SearchResult sr;
    sr.capacity = 4;
    c.seeds = {sr};
    c.capacity = c.capacity_mean = c.capacity_max = 4;
    c.slo_values = {1.0};
    c.guess = 3;  // ceil(10 / 4)
    if (k == 0) {
      c.fleet = exp::search_fleet(
          3, [](int64_t) { return verdict(false, "seed 1: ttft"); }, 2);
    } else {
      c.fleet = exp::search_fleet(
          3, [](int64_t n) { return verdict(n >= 4, "seed 1: ttft"); }, 2);
    }
    c.sizing = exp::fleet_cost(c.fleet.sized, 10, 1, 2.0, 100);
    r.ranked.push_back(c);
  }
  exp::rank_plan(r);
  REQUIRE(r.ranked[0].router->name == "round-robin");  // feasible first
  REQUIRE(r.savings.size() == 1);
  CHECK(r.savings[0] ==
        "d: preserve/round-robin needs 4 G GPUs where preserve/session-affinity cannot meet the "
        "SLOs");
  REQUIRE(r.warnings.size() == 1);
  CHECK(r.warnings[0] ==
        "d/preserve/session-affinity: infeasible: SLOs not met up to 7 replicas (guessed 3; 7: "
        "seed 1: ttft)");
  const std::string csv = r.csv();
  // 4 replicas x $2 = $8/h; 10 sessions/s x 3600 s x 100 tokens = 3.6 M tokens/h.
  CHECK(csv.find("\n1,d,G,g.yaml,measured,1,2,preserve,round-robin,4,4,4,4,10,3,4,3:fail 4:pass,"
                 "3: seed 1: ttft,4,8,100,2.2222,0,") != std::string::npos);
  CHECK(csv.find("\n2,d,G,g.yaml,measured,1,2,preserve,session-affinity,4,4,4,4,10,3,,3:fail "
                 "4:fail 5:fail 6:fail 7:fail,7: seed 1: ttft,,,100,,,") != std::string::npos);
  const std::string table = r.table();
  CHECK(table.find(" round-robin ") != std::string::npos);
  CHECK(table.find(" 3:fail 4:pass ") != std::string::npos);
}
