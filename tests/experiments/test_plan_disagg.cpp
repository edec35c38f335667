// The disaggregation axes of `isim plan` (experiments/plan/plan.h): pd_splits and planners expand
// into fleet layouts (hand-checked lists), P:D ratios give each fleet size its roles, every
// malformed entry is an error naming its key and index, -p reaches the axes, and the report
// names each result's split, planner and roles. Nothing here runs a disaggregated fleet.
#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

#include "core/input_error.h"
#include "experiments/plan/plan.h"
#include "experiments/plan/plan_sim.h"
#include "experiments/spec/cluster_spec.h"
#include "tests/experiments/plan_fixtures.h"
#include "tests/test_paths.h"

using namespace isim;
using cluster::Role;

namespace {

std::string prof() {
  return test::source_dir() + "/calibrate/profiles/a100-80g-gptj-6b.infercept.yaml";
}

// A plan whose line 5 is `extra` (e.g. "pd_splits: [...]"), more lines after it allowed.
YAML::Node plan(const std::string& extra) {
  return YAML::Load(
      "peak_rate: 10\n"             // 1
      "slo: {ttft_s.p99: 2}\n"      // 2
      "trace: {from: generator}\n"  // 3
      "policies: [discard]\n" +     // 4
      extra +
      "\n" +  // 5
      "deployments: {a: {profile: " + prof() + ", price_per_gpu_hour: 1}}\n");
}

exp::PlanSpec parse(const std::string& extra) {
  return exp::parse_plan(plan(extra), "p.yaml", ".");
}

std::string error_of(const std::string& extra) {
  try {
    parse(extra);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

// The layouts as "split/planner" labels.
std::vector<std::string> layouts(const exp::PlanSpec& p) {
  std::vector<std::string> v;
  for (const auto& l : p.layouts)
    v.push_back(p.pd_splits[l.split].label + "/" + p.planners[l.planner].label);
  return v;
}

std::vector<Role> pd(int p, int d) {
  std::vector<Role> r(static_cast<size_t>(p), Role::kPrefill);
  r.insert(r.end(), static_cast<size_t>(d), Role::kDecode);
  return r;
}

}  // namespace

TEST_CASE("without the axes a plan has one layout: mixed with the static planner") {
  const auto p = parse("");
  CHECK(layouts(p) == std::vector<std::string>{"mixed/static"});
  CHECK(p.pd_splits.front().mixed());
  CHECK_FALSE(p.disagg.enabled);
  CHECK(p.disagg.links.intra_node == cluster::default_nvlink());
}

TEST_CASE("pd_splits x planners: every split with every planner, a mixed fleet static only") {
  const auto p = parse("pd_splits: [mixed, \"1:3\", 8:8]\nplanners: [static, dynamo-threshold]");
  CHECK(layouts(p) == std::vector<std::string>{"mixed/static", "1:3/static", "1:3/dynamo-threshold",
                                               "8:8/static", "8:8/dynamo-threshold"});
  CHECK(p.pd_splits[1].prefill == 1);
  CHECK(p.pd_splits[1].decode == 3);
  // Planners alone, with one split and a parameterless planner: the labels carry no params.
  const auto q = parse("pd_splits: [\"4:12\"]\nplanners: [online, static]");
  CHECK(layouts(q) == std::vector<std::string>{"4:12/online", "4:12/static"});
  // The capacity search is still one per deployment and policy.
  CHECK(p.candidates.size() == 1);
  // The plan's cluster: settings go to every P:D fleet.
  const auto c = parse(
      "pd_splits: [\"1:1\"]\ncluster: {links: {transfer: layer}, split: {threshold_tokens: 64}, "
      "switching: {cost_s: 2}}");
  CHECK(c.disagg.links.transfer == "layer");
  CHECK(c.disagg.split.mode == "threshold");
  CHECK(c.disagg.split.threshold_tokens == 64);
  CHECK(c.disagg.switching.cost_s == 2);
}

TEST_CASE("a P:D split is a ratio: round(n P / (P + D)) prefill replicas, 1 to n - 1") {
  CHECK(exp::pd_ratio_roles(1, 3, 16) == pd(4, 12));
  CHECK(exp::pd_ratio_roles(4, 12, 16) == pd(4, 12));
  CHECK(exp::pd_ratio_roles(4, 12, 12) == pd(3, 9));
  CHECK(exp::pd_ratio_roles(1, 3, 2) == pd(1, 1));   // round(0.5) = 1
  CHECK(exp::pd_ratio_roles(1, 3, 3) == pd(1, 2));   // round(0.75) = 1
  CHECK(exp::pd_ratio_roles(1, 1, 5) == pd(3, 2));   // round(2.5) = 3, half away from zero
  CHECK(exp::pd_ratio_roles(3, 1, 2) == pd(1, 1));   // round(1.5) = 2, but one decode stays
  CHECK(exp::pd_ratio_roles(1, 15, 4) == pd(1, 3));  // round(0.25) = 0, but one prefill stays
  CHECK(exp::parse_pd_split("4:12") == std::make_pair(4, 12));
  CHECK_FALSE(exp::parse_pd_split("4:"));
  CHECK_FALSE(exp::parse_pd_split("4:1:2"));
  CHECK_FALSE(exp::parse_pd_split("-1:2"));
  CHECK_FALSE(exp::parse_pd_split("1234567890:1"));
}

TEST_CASE("every malformed split or planner names its key and list index") {
  CHECK(error_of("pd_splits: [mixed, \"8:x\"]") ==
        "p.yaml:5: pd_splits[1]: expected mixed or P:D with whole numbers (e.g. 1:3), got '8:x'");
  CHECK(error_of("pd_splits: [\"0:16\"]") ==
        "p.yaml:5: pd_splits[0]: needs at least one prefill replica, got '0:16'");
  CHECK(error_of("pd_splits: [mixed, \"16:0\"]") ==
        "p.yaml:5: pd_splits[1]: needs at least one decode replica, got '16:0'");
  CHECK(error_of("pd_splits: [\"1:3\", \"2:6\"]") ==
        "p.yaml:5: pd_splits[1]: 2:6 (the ratio of 1:3) listed twice");
  CHECK(error_of("pd_splits: [mixed, mixed]") == "p.yaml:5: pd_splits[1]: mixed listed twice");
  CHECK(error_of("pd_splits: [[1, 3]]") ==
        "p.yaml:5: pd_splits[0]: expected mixed or P:D with whole numbers (e.g. 1:3), got a list");
  CHECK(error_of("pd_splits: \"1:3\"") ==
        "p.yaml:5: pd_splits: expected a non-empty list of P:D splits or mixed, e.g. [mixed, 1:3]");
  CHECK(error_of("pd_splits: []") ==
        "p.yaml:5: pd_splits: expected a non-empty list of P:D splits or mixed, e.g. [mixed, 1:3]");
  CHECK(error_of("planners: [dynamo-threshold]") ==
        "p.yaml:5: planners[0]: dynamo-threshold needs a P:D split (pd_splits has only mixed)");
  CHECK(error_of("pd_splits: [mixed]\nplanners: [static, online]") ==
        "p.yaml:6: planners[1]: online needs a P:D split (pd_splits has only mixed)");
  CHECK(error_of("pd_splits: [\"1:1\"]\nplanners: [static, static]") ==
        "p.yaml:6: planners[1]: static listed twice");
  CHECK(error_of("pd_splits: [\"1:1\"]\nplanners: [{interval_s: 3}]") ==
        "p.yaml:6: planners[0].name: missing planner name");
  CHECK(error_of("pd_splits: [\"1:1\"]\nplanners: [[static]]") ==
        "p.yaml:6: planners[0]: expected a planner name or {name: ..., params}");
  CHECK(error_of("planners: static")
            .rfind("p.yaml:5: planners: expected a non-empty list of planners, e.g. [static, "
                   "dynamo-threshold]; valid: ",
                   0) == 0);
  const std::string unknown = error_of("pd_splits: [\"1:1\"]\nplanners: [static, nonsense]");
  CHECK(unknown.rfind("p.yaml:6: planners[1]: unknown ", 0) == 0);
  CHECK(unknown.find("'nonsense'; valid: ") != std::string::npos);
  CHECK(error_of("pd_splits: [\"1:1\"]\nplanners: [{name: static, colour: red}]")
            .rfind("p.yaml:6: planners[0].colour: unknown parameter", 0) == 0);
}

TEST_CASE("a plan's cluster: holds only what the fleet search does not set") {
  CHECK(error_of("cluster: {replicas: 4}") ==
        "p.yaml:5: cluster.replicas: set by the plan (the plan sizes the fleet)");
  CHECK(error_of("cluster: {roles: \"1:3\"}") ==
        "p.yaml:5: cluster.roles: set by the plan (list P:D splits in pd_splits)");
  CHECK(error_of("cluster: {router: kv-aware}") ==
        "p.yaml:5: cluster.router: set by the plan (list routers in routers)");
  CHECK(error_of("cluster: {planner: online}") ==
        "p.yaml:5: cluster.planner: set by the plan (list planners in planners)");
  CHECK(error_of("cluster: {links: {transfer: x}}") ==
        "p.yaml:5: cluster.links.transfer: expected whole or layer, got 'x'");
  CHECK(error_of("cluster: {colour: red}") ==
        "p.yaml:5: cluster.colour: unknown key; valid keys: links, split, switching");
}

TEST_CASE("-p sets the axes; a fleet of one with a split fails without simulating") {
  auto d = test::scratch("plan-disagg");
  auto p = exp::load_plan(
      test::hand_plan(d),
      {"pd_splits=[mixed, 1:1]", "planners=[static, online]", "cluster.links.transfer=layer"});
  CHECK(layouts(p) == std::vector<std::string>{"mixed/static", "1:1/static", "1:1/online"});
  CHECK(p.disagg.links.transfer == "layer");
  const exp::FleetLayout f{&p.routers[0], &p.pd_splits[1], &p.planners[0]};
  const auto v = exp::run_judged(p, p.candidates[0], f, 1, 8, 1);
  CHECK_FALSE(v.pass);
  CHECK(v.reason == "a P:D split needs at least 2 replicas");
}

TEST_CASE("the report names each result's split, planner and the sized fleet's roles") {
  exp::PlanSpec spec;
  spec.name = "r";
  spec.peak_rate = 10;
  spec.seeds = {1};
  spec.slos = {{"ttft_s.p99", 4, "p99", 2.0}};
  spec.deployments = {{"d", "G", "/p/g.yaml", "measured", 1, 2.0, {}}};
  spec.candidates.resize(1);
  spec.candidates[0].policy = "preserve";
  spec.pd_splits = {exp::SplitChoice{}, exp::SplitChoice{"1:3", 1, 3}};
  spec.planners = {exp::PlannerChoice{},
                   exp::PlannerChoice{"dynamo-threshold", Params{}, "dynamo-threshold"}};
  spec.layouts = {{0, 0}, {1, 0}, {1, 1}};
  exp::PlanResult r;
  r.spec = &spec;
  r.output_tokens_per_session = 100;
  // Sized fleets: mixed 5, 1:3 static 4, 1:3 dynamo-threshold 3 replicas (cheapest first).
  const int64_t sized[] = {5, 4, 3};
  for (size_t k = 0; k < 3; ++k) {
    exp::CandidateResult c;
    c.candidate = &spec.candidates[0];
    c.router = &spec.routers[0];
    c.split = &spec.pd_splits[spec.layouts[k].split];
    c.planner = &spec.planners[spec.layouts[k].planner];
    c.capacity = c.capacity_mean = c.capacity_max = 4;
    c.seeds = {exp::SearchResult{}};
    c.slo_values = {1.0};
    c.guess = 3;
    c.fleet.sized = sized[k];
    c.sizing = exp::fleet_cost(sized[k], 10, 1, 2.0, 100);
    r.ranked.push_back(c);
  }
  exp::rank_plan(r);
  REQUIRE(r.ranked[0].planner->name == "dynamo-threshold");
  REQUIRE(r.savings.size() == 1);
  CHECK(r.savings[0] ==
        "d: preserve/1:3/dynamo-threshold needs 3 G GPUs where preserve/1:3/static needs 4, "
        "preserve/mixed/static needs 5 ($6.00/h instead of $10.00/h: 40% less)");
  const std::string csv = r.csv();
  CHECK(csv.substr(0, csv.find('\n')).find(",warnings,pd_split,planner,pd_roles") !=
        std::string::npos);
  // 3 replicas at 1:3: round(0.75) = 1 prefill, 2 decode; 4 at 1:3: 1 and 3.
  CHECK(csv.find(",1:3,dynamo-threshold,1:2\n") != std::string::npos);
  CHECK(csv.find(",1:3,static,1:3\n") != std::string::npos);
  CHECK(csv.find(",mixed,static,\n") != std::string::npos);
  const std::string table = r.table();
  CHECK(table.find(" split ") != std::string::npos);
  CHECK(table.find(" planner ") != std::string::npos);
  CHECK(table.find(" 1:3 (1:2)  dynamo-threshold ") != std::string::npos);
}
