// Plans of DP/EP groups: a deployment's dp, ep, ep_overlap and expert_skew (read and bounded as a
// cluster group's), the unit of one group of dp x tp GPUs in the capacity and fleet searches, and
// the report naming each layout. The MoE profile is tests/data/profile-tables-small.yaml made
// MoE by hand: 16 experts, 2 per token, expert ffn 16, a MoE roofline, and a 50 ms overhead per
// step, so that one core serves a 15-token prompt and its one output token in about 50 ms.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "core/input_error.h"
#include "experiments/plan/plan.h"
#include "experiments/plan/plan_sim.h"
#include "sim/profile.h"
#include "tests/experiments/plan_fixtures.h"
#include "tests/test_paths.h"

using namespace isim;
namespace fs = std::filesystem;

namespace {

std::string moe_profile(const fs::path& dir) {
  sim::Profile p = sim::load_profile(test::data_dir() + "/profile-tables-small.yaml");
  p.model.moe = {16, 2, 16, 0, 0};
  p.tables.moe_roofline = {100, 1000, 0.5, 0.5};
  p.tables.overhead_us = 50000;
  const std::string path = (dir / "moe.yaml").string();
  sim::write_profile_file(path, p);
  return path;
}

// A plan whose deployments (lines 12 on) are `deployments`; `pd_splits` on line 11 when given.
std::string groups_plan(const fs::path& dir, const std::string& deployments,
                        const std::string& pd_splits = "[mixed]") {
  std::string s = "name: groups\n";                                                // 1
  s += "seeds: [1]\n";                                                             // 2
  s += "trace: {from: jsonl, path: " + test::hand_trace(dir, 400, {15}) + "}\n";   // 3
  s += "arrival: {process: replay}\n";                                             // 4
  s += "peak_rate: 100\n";                                                         // 5
  s += "slo: {ttft_s.p99: 0.5}\n";                                                 // 6
  s += "search: {start_rate: 2, tolerance: 0.1, max_rate: 256}\n";                 // 7
  s += "engine: {max_num_batched_tokens: 16, gpu_blocks: 1000, cpu_blocks: 0}\n";  // 8
  s += "policies: [discard]\n";                                                    // 9
  s += "routers: [round-robin]\n";                                                 // 10
  s += "pd_splits: " + pd_splits + "\n";                                           // 11
  s += "deployments:\n";                                                           // 12
  s += deployments;                                                                // 13..
  return test::write_file(dir / "plan.yaml", s);
}

std::string error_of(const std::string& path) {
  try {
    exp::load_plan(path, {});
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a deployment's dp, ep, ep_overlap and expert_skew: defaults, values and layout names") {
  auto d = test::scratch("plan-groups-spec");
  const std::string moe = moe_profile(d);
  auto p = exp::load_plan(
      groups_plan(d, "  one: {profile: " + moe + ", price_per_gpu_hour: 6}\n" +
                         "  kimi: {gpu: GB300, profile: " + moe +
                         ", dp: 16, ep: true, ep_overlap: 0.5, expert_skew: 1.25, "
                         "price_per_gpu_hour: 6}\n" +
                         "  wide: {profile: " + moe + ", dp: 4, price_per_gpu_hour: 6}\n"),
      {});
  REQUIRE(p.deployments.size() == 3);
  const auto& one = p.deployments[0];
  CHECK(one.par.dp == 1);
  CHECK_FALSE(one.par.ep);
  CHECK(one.par.ep_overlap == 0);
  CHECK(one.par.expert_skew == 1);
  CHECK_FALSE(one.parallel());
  CHECK(one.gpus_per_group() == 1);
  CHECK(exp::group_layout(one) == "TP1");
  const auto& kimi = p.deployments[1];
  CHECK(kimi.gpu == "GB300");
  CHECK(kimi.par.dp == 16);
  CHECK(kimi.par.ep);
  CHECK(kimi.par.ep_overlap == 0.5);
  CHECK(kimi.par.expert_skew == 1.25);
  CHECK(kimi.gpus_per_group() == 16);
  CHECK(exp::group_layout(kimi) == "DP16/EP16");
  CHECK(exp::group_layout(p.deployments[2]) == "DP4");
  CHECK(exp::has_groups(p));
  // What the runs get: the cluster group's lockstep shape, over the plan's links (default 8
  // replicas per node).
  const auto dp = exp::dp_spec(exp::deployment_group(kimi), sim::load_profile(moe), p.disagg.links);
  CHECK(dp.group == 0);
  CHECK(dp.shape.cores == 16);
  CHECK(dp.shape.ep);
  CHECK(dp.shape.overlap == 0.5);
  CHECK(dp.shape.skew == 1.25);
  CHECK(dp.shape.gpus_per_domain == 8);
  exp::Deployment tp2 = kimi;
  tp2.tp = 2;
  tp2.par.dp = 8;
  CHECK(tp2.gpus_per_group() == 16);
  CHECK(exp::group_layout(tp2) == "DP8/TP2/EP16");
  tp2.par.dp = 1;
  tp2.par.ep = false;
  CHECK(exp::group_layout(tp2) == "TP2");
}

TEST_CASE("DP/EP deployment errors name the file, line and key") {
  auto d = test::scratch("plan-groups-errors");
  const std::string moe = moe_profile(d);
  const std::string dense = test::hand_profile(d);
  auto bad = [&](const std::string& keys, const std::string& profile = "") {
    return error_of(groups_plan(d, "  a: {profile: " + (profile.empty() ? moe : profile) +
                                       ", price_per_gpu_hour: 6, " + keys + "}\n"));
  };
  const std::string at = d.string() + "/plan.yaml:13: deployments.a.";
  CHECK(bad("dp: 0") == at + "dp: must be >= 1");
  CHECK(bad("dp: 1025") == at + "dp: must be <= 1024");
  CHECK(bad("dp: two") == at + "dp: expected an integer, got 'two'");
  CHECK(bad("ep: maybe") == at + "ep: expected true or false, got 'maybe'");
  CHECK(bad("ep_overlap: 1.5") == at + "ep_overlap: must be <= 1");
  CHECK(bad("ep_overlap: -0.1") == at + "ep_overlap: must be >= 0");
  CHECK(bad("expert_skew: 0.5") == at + "expert_skew: must be >= 1");
  CHECK(bad("expert_skew: 65") == at + "expert_skew: must be <= 64");
  // 16 experts over 3 ranks.
  CHECK(bad("dp: 3, ep: true") ==
        at + "dp: 16 experts do not divide over dp 3 x tp 1 = 3 EP ranks");
  CHECK(bad("dp: 2, ep: true", dense) ==
        at + "ep: the profile's model test is dense; expert parallelism needs a MoE model (a "
             "dense model's DP cores are independent replicas: drop ep)");
  CHECK(bad("cores: 2")
            .rfind(at + "cores: unknown key; valid keys: gpu, profile, tp, "
                        "price_per_gpu_hour, engine, policies, dp, ep, ep_overlap, "
                        "expert_skew",
                   0) == 0);
  CHECK(error_of(groups_plan(d, "  a: {profile: " + moe + ", price_per_gpu_hour: 6, dp: 2}\n",
                             "[mixed, \"1:1\"]")) ==
        at + "dp: DP/EP groups in a disaggregated fleet are not simulated; pd_splits lists 1:1 "
             "(plan this deployment with pd_splits: [mixed])");
  // The CLI: exit 2 with the same text.
  std::string err;
  const std::string path =
      groups_plan(d, "  a: {profile: " + moe + ", price_per_gpu_hour: 6, dp: 0}\n");
  CHECK(test::run_isim("plan " + path + " --out " + (d / "out").string(), nullptr, &err) == 2);
  CHECK(err.find("plan.yaml:13: deployments.a.dp: must be >= 1") != std::string::npos);
}

TEST_CASE("a plan of DP2 against DP4 groups: one group per capacity probe, GPUs = groups x dp") {
  auto d = test::scratch("plan-groups-run");
  const std::string moe = moe_profile(d);
  auto p = exp::load_plan(groups_plan(d, "  dp2: {gpu: GB300, profile: " + moe +
                                             ", dp: 2, ep: true, price_per_gpu_hour: 6}\n" +
                                             "  dp4: {gpu: GB300, profile: " + moe +
                                             ", dp: 4, ep: true, price_per_gpu_hour: 6}\n"),
                          {});
  auto r = exp::run_plan(p, exp::PlanOptions{});
  REQUIRE(r.ranked.size() == 2);
  for (const auto& c : r.ranked) {
    const auto& dep = p.deployments[c.candidate->deployment];
    CAPTURE(dep.name);
    REQUIRE(c.sizing.feasible);
    CHECK(c.sizing.gpus == c.sizing.replicas * dep.par.dp);
    // A core runs one 15-token prefill per step (two exceed the 16-token batch) and a step takes
    // at least the 50 ms overhead: at most 20 sessions/s per core, 20 x dp per group. At 100/s
    // (sessions 10 ms apart) 2 groups of DP2 (at most 80/s) and 1 of DP4 (80/s) fall behind.
    // Round-robin over 3 x 2 or 2 x 4 cores gives each core one session every 60 or 80 ms, more
    // than a step (50 ms and the tiny model's microseconds of MoE), so 3 and 2 groups keep up.
    CHECK(c.sizing.replicas == (dep.par.dp == 2 ? 3 : 2));
    CHECK(c.sizing.gpus == (dep.par.dp == 2 ? 6 : 8));
    CHECK(c.fleet.simulated() == (dep.par.dp == 2 ? "3:pass 2:fail" : "2:pass 1:fail"));
    CHECK(c.capacity > 0);
    CHECK(c.sizing.cost_per_hour == doctest::Approx(6.0 * static_cast<double>(c.sizing.gpus)));
    // One group at a capacity probe's rate: dp cores behind dp-lb, one lockstep group.
    cluster::RunResult one;
    exp::run_judged(p, *c.candidate, exp::FleetLayout{}, 1, 2, 1, &one);
    CHECK(one.lockstep.groups == 1);
    CHECK(one.replicas.size() == static_cast<size_t>(dep.par.dp));
    CHECK(one.lockstep.steps > 0);
    // The sized fleet: its groups, each dp cores in lockstep, behind the plan's router.
    cluster::RunResult fleet;
    const auto n = c.sizing.replicas;
    const auto v =
        exp::run_judged(p, *c.candidate, exp::FleetLayout{c.router}, n, p.peak_rate, 1, &fleet);
    CHECK(v.pass);
    CHECK(fleet.lockstep.groups == n);
    CHECK(fleet.lockstep.core_steps == fleet.lockstep.steps * dep.par.dp);
    CHECK(fleet.replicas.size() == static_cast<size_t>(n * dep.par.dp));
  }
  CHECK(r.csv().find(",dp,ep,ep_overlap,expert_skew,gpus_per_group,layout\n") != std::string::npos);
  CHECK(p.deployments[r.ranked[0].candidate->deployment].name == "dp2");  // $36/h against $48/h
  const std::string table = r.table();
  CHECK(table.find("dp2/discard: 6 GB300 GPUs as 3 groups of DP2/EP2 (2 GPUs each)\n") !=
        std::string::npos);
  CHECK(table.find("dp4/discard: 8 GB300 GPUs as 2 groups of DP4/EP4 (4 GPUs each)\n") !=
        std::string::npos);
  CHECK(table.find(" 3 x DP2/EP2 ") != std::string::npos);
  CHECK(table.find("capacity/unit") != std::string::npos);
  exp::PlanOptions two;
  two.jobs = 2;
  CHECK(exp::run_plan(p, two).csv() == r.csv());  // lockstep fleets on a thread pool alike
}

TEST_CASE("a plan without DP/EP deployments has no layout column, line or csv field") {
  auto d = test::scratch("plan-groups-none");
  auto p = exp::load_plan(test::hand_plan(d), {});
  CHECK_FALSE(exp::has_groups(p));
  auto r = exp::run_plan(p, exp::PlanOptions{});
  const std::string csv = r.csv();
  CHECK(csv.substr(0, csv.find('\n')).rfind(",warnings,pd_split,planner,pd_roles") ==
        csv.find('\n') - std::string(",warnings,pd_split,planner,pd_roles").size());
  const std::string table = r.table();
  CHECK(table.find("layout") == std::string::npos);
  CHECK(table.find("GPUs as") == std::string::npos);
  CHECK(table.find("capacity/replica") != std::string::npos);
  CHECK(table.find("per replica (lowest") != std::string::npos);
}
