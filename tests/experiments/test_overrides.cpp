// -p and --add overrides (experiments/spec/experiment.h: apply_override): dotted keys that are
// keys, lists, new entries of maps of names, and the errors that name the -p argument.
#include <doctest/doctest.h>

#include <string>

#include <yaml-cpp/yaml.h>

#include "core/input_error.h"
#include "core/strict_yaml.h"
#include "experiments/plan/plan.h"
#include "experiments/spec/experiment.h"
#include "tests/input_error_text.h"
#include "tests/test_paths.h"

using namespace isim;
using test::error_of_call;

namespace {
const char* kPlanLike =
    "slo:\n  ttft_s.p99: 2.0\n  normalized_latency_s.p99: 0.1\n  tpot_s.mean: 0.05\n"
    "deployments:\n  h100-analytic: {gpu: H100, profile: h.yaml, price_per_gpu_hour: 2.99}\n"
    "policies: [discard, {name: min-waste, estimator: history}]\n"
    "seeds: [1, 2, 3]\n";

std::string dump(const YAML::Node& n) {
  return YAML::Dump(n);
}
}  // namespace

TEST_CASE("-p slo.ttft_s.p99 sets the key ttft_s.p99 and keeps the other SLOs") {
  YAML::Node y = YAML::Load(kPlanLike);
  exp::apply_override(y, "slo.ttft_s.p99=1");
  CHECK(y["slo"].size() == 3);
  CHECK(y["slo"]["ttft_s.p99"].as<double>() == 1.0);
  CHECK(y["slo"]["normalized_latency_s.p99"].as<double>() == 0.1);
  CHECK(y["slo"]["tpot_s.mean"].as<double>() == 0.05);
  CHECK(!y["slo"]["ttft_s"]);
  // A key not yet in slo: is created nested, which the plan reads as METRIC.STAT.
  exp::apply_override(y, "slo.tpot_s.p99=0.2");
  CHECK(y["slo"]["tpot_s"]["p99"].as<double>() == 0.2);
}

TEST_CASE("-p changes an existing deployment; a new one needs --add") {
  YAML::Node y = YAML::Load(kPlanLike);
  exp::apply_override(y, "deployments.h100-analytic.price_per_gpu_hour=2.5");
  CHECK(y["deployments"].size() == 1);
  CHECK(y["deployments"]["h100-analytic"]["price_per_gpu_hour"].as<double>() == 2.5);
  CHECK(y["deployments"]["h100-analytic"]["gpu"].as<std::string>() == "H100");

  const std::string before = dump(y);
  CHECK(error_of_call([&] { exp::apply_override(y, "deployments.h100.price_per_gpu_hour=2.5"); }) ==
        "-p deployments.h100.price_per_gpu_hour=2.5: deployments has no entry 'h100' (entries: "
        "h100-analytic); to add one, use --add deployments.h100.price_per_gpu_hour=...");
  CHECK(dump(y) == before);  // nothing was added on the way to the error

  exp::apply_override(y, "+deployments.h200={gpu: H200, profile: x.yaml}");
  CHECK(y["deployments"].size() == 2);
  CHECK(y["deployments"]["h200"]["gpu"].as<std::string>() == "H200");
  exp::apply_override(y, "deployments.h200.tp=2");  // now it exists: -p refines it
  CHECK(y["deployments"]["h200"]["tp"].as<int>() == 2);
}

TEST_CASE("a new sweep axis needs --add; an existing one and sweep.variants do not") {
  YAML::Node y = YAML::Load("sweep:\n  arrival.rate: [1, 2]\n");
  exp::apply_override(y, "sweep.arrival.rate=[4]");
  CHECK(dump(y["sweep"]) == "arrival.rate: [4]");
  CHECK(error_of_call([&] { exp::apply_override(y, "sweep.seed=[1,2]"); }) ==
        "-p sweep.seed=[1,2]: sweep has no entry 'seed' (entries: arrival.rate); to add one, "
        "use --add sweep.seed=...");
  exp::apply_override(y, "+sweep.seed=[1,2]");
  CHECK(y["sweep"]["seed"].size() == 2);
  exp::apply_override(y, "sweep.variants=[]");
  CHECK(y["sweep"]["variants"].IsSequence());
}

TEST_CASE("list elements by index; a scalar policy becomes {name: ...}") {
  YAML::Node y = YAML::Load(kPlanLike);
  exp::apply_override(y, "policies.1.estimator=oracle");
  CHECK(y["policies"][1]["estimator"].as<std::string>() == "oracle");
  CHECK(y["policies"][1]["name"].as<std::string>() == "min-waste");
  exp::apply_override(y, "policies.0.foo=1");
  CHECK(y["policies"][0]["name"].as<std::string>() == "discard");
  CHECK(y["policies"][0]["foo"].as<int>() == 1);
  exp::apply_override(y, "seeds.2=7");
  CHECK(dump(y["seeds"]) == "[1, 2, 7]");

  CHECK(error_of_call([&] { exp::apply_override(y, "seeds.3=4"); }) ==
        "-p seeds.3=4: 'seeds' is a list (indices 0..2); got '3'; to append an element use "
        "--add seeds.3=VALUE");
  CHECK(error_of_call([&] { exp::apply_override(y, "seeds.x=4"); }) ==
        "-p seeds.x=4: 'seeds' is a list (indices 0..2); got 'x'; to append an element use "
        "--add seeds.3=VALUE");
  exp::apply_override(y, "+seeds.3=4");
  CHECK(dump(y["seeds"]) == "[1, 2, 7, 4]");
  CHECK(error_of_call([&] { exp::apply_override(y, "+seeds.9=4"); }) ==
        "--add seeds.9=4: 'seeds' is a list (indices 0..3); got '9'");
  CHECK(error_of_call([&] { exp::apply_override(y, "seeds.0.x=4"); }) ==
        "-p seeds.0.x=4: 'seeds.0' is '1', not a map or a list");
}

TEST_CASE("malformed overrides name the argument as given") {
  YAML::Node y = YAML::Load(kPlanLike);
  CHECK(error_of_call([&] { exp::apply_override(y, "+novalue"); }) ==
        "--add novalue: expected key=value (e.g. arrival.rate=2)");
  CHECK(error_of_call([&] { exp::apply_override(y, "slo..x=1"); }) ==
        "-p slo..x=1: empty key component");
  CHECK(error_of_call([&] { exp::apply_override(y, "seeds.1.2=1"); }) ==
        "-p seeds.1.2=1: 'seeds.1' is '2', not a map or a list");
}

TEST_CASE("the plan-agents SLO what-if of docs/capacity-planning.md loads") {
  const std::string spec = test::source_dir() + "/experiments/specs/plan-agents.yaml";
  const exp::PlanSpec base = exp::load_plan(spec, {});
  const exp::PlanSpec p = exp::load_plan(spec, {"slo.ttft_s.p99=1"});
  REQUIRE(p.slos.size() == base.slos.size());
  REQUIRE(p.slos.size() == 3);
  CHECK(p.slos[0].key == "ttft_s.p99");
  CHECK(p.slos[0].limit == 1.0);
  CHECK(p.slos[1].limit == 0.1);
  CHECK(p.slos[2].limit == 0.05);
  const exp::PlanSpec q =
      exp::load_plan(spec, {"deployments.h100-analytic.price_per_gpu_hour=2.5"});
  CHECK(q.deployments.size() == base.deployments.size());
  CHECK(error_of_call([&] { exp::load_plan(spec, {"deployments.h100.price_per_gpu_hour=2.5"}); })
            .rfind("-p deployments.h100.price_per_gpu_hour=2.5: deployments has no entry 'h100' "
                   "(entries: a100-analytic, ",
                   0) == 0);
}
