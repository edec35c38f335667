#include <doctest/doctest.h>

#include "core/input_error.h"
#include "policies/builtin.h"
#include "sim/engine.h"
#include "sim/executor.h"

using namespace isim;

TEST_CASE("every policy, scheduler and executor is registered with a description") {
  // A component missing here was never linked in (Ramulator 2 issue #122).
  std::vector<std::string> policies;
  for (const auto* e : policy::policy_registry().entries()) {
    policies.push_back(e->name);
    CHECK(!e->description.empty());
    auto p = policy::policy_registry().create(e->name, "test", policy::PolicyParams{});
    CHECK(p->name() == e->name);
  }
  CHECK(policies ==
        std::vector<std::string>{"discard", "improved-discard", "lru", "min-waste", "pensieve",
                                 "preserve", "swap"});
  std::vector<std::string> schedulers;
  for (const auto* e : sim::scheduler_registry().entries()) schedulers.push_back(e->name);
  CHECK(schedulers == std::vector<std::string>{"chunked", "vllm-v0", "vllm-v1"});
  CHECK(sim::executor_registry().contains("sim"));
}

TEST_CASE("an unknown policy name lists the valid ones") {
  try {
    policy::policy_registry().create("presrve", "exp.yaml:3: policy", policy::PolicyParams{});
    FAIL("expected InputError");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()) ==
          "exp.yaml:3: policy: unknown policy 'presrve'; valid: discard, improved-discard, "
          "lru, min-waste, pensieve, "
          "preserve, swap");
  }
}

TEST_CASE("a baseline policy rejects parameters") {
  policy::PolicyParams p;
  p.values["estimator"] = "oracle";
  p.where = "policies[0]";
  CHECK_THROWS_WITH_AS(
      policy::policy_registry().create("swap", "x", p),
      "policies[0].estimator: unknown parameter; policy 'swap' takes no parameters", InputError);
}
