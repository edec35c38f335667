// DP groups in lockstep (cluster/lockstep.h) on tests/data/profile-tables-small-moe.yaml:
// 2 layers, both MoE, 8 experts of which 2 per token, moe_us 100 us per layer whatever the load;
// dense tokens [1, 4, 16] -> [10, 16, 64] us; prefill attention(c, 0) = c us for c in [1, 16];
// lm_head(1) 5 us; overhead 40 us; hidden 64 in fp16 (128 B per token). The group's link: 1 GB/s
// and 10 us. Every expected value is worked out by hand; every invariant is checked after each
// event.
#include <doctest/doctest.h>

#include "cluster/simulation.h"
#include "policies/builtin.h"
#include "policies/routers.h"
#include "tests/sim_fixtures.h"
#include "tests/test_paths.h"

using namespace isim;
using isim::test::rec;
using isim::test::seg;

namespace {

sim::Profile moe_profile() {
  return sim::load_profile(test::data_dir() + "/profile-tables-small-moe.yaml");
}

struct Group {
  explicit Group(int cores) : profile(moe_profile()) {
    for (int i = 0; i < cores; ++i) {
      executors.push_back(std::make_unique<sim::SimExecutor>(profile));
      policies.push_back(policy::policy_registry().create("discard", "test", {}));
    }
    dp.group = 0;
    dp.shape.cores = cores;
    dp.shape.ep = true;
    dp.shape.intra = {1, 10};
    dp.shape.inter = {1, 10};
  }
  cluster::RunResult run(const trace::Trace& t) {
    auto router = policy::router_registry().create("round-robin", "test", Params({}, "router"));
    std::vector<cluster::ReplicaSpec> specs;
    for (size_t i = 0; i < executors.size(); ++i) {
      sim::EngineConfig c;
      c.gpu_blocks = 100;
      c.cpu_blocks = 0;
      specs.push_back({c, executors[i].get(), policies[i].get(), "", nullptr, nullptr, dp});
    }
    return cluster::simulate(t, std::move(specs), *router, /*check_invariants=*/true);
  }
  sim::Profile profile;
  cluster::DpSpec dp;
  std::vector<std::unique_ptr<sim::Executor>> executors;
  std::vector<std::unique_ptr<sim::Policy>> policies;
};

}  // namespace

TEST_CASE(
    "a 2-core DP group with one core idle: the idle core runs a dummy step, the busy one "
    "sets the time") {
  // Alone, a's 3-token prefill costs 2 x (dense 14 + attention 3) + 2 MoE layers x 100 +
  // lm_head 5 + overhead 40 = 279 us. In the group its own part is 279 - 200 = 79 us; core 1's
  // dummy batch (1 token, no logits) 2 x 10 + 40 = 60 us. Each MoE layer: the rank's experts
  // 100 us plus dispatch and combine of the busiest core's 3 tokens, 3 x 128 B x 1/2 = 192 B at
  // 1 GB/s + 10 us = 10.192 us each way: 120.384 us; two layers 240.768 us. Step: 79 + 240.768.
  Group g(2);
  const auto r = g.run({trace::Session{"a", 0.0, {seg(3, 1)}}});
  CHECK(rec(r, "a").ttft_s == doctest::Approx(319.768e-6));
  CHECK(r.lockstep.groups == 1);
  CHECK(r.lockstep.steps == 1);
  CHECK(r.lockstep.core_steps == 2);
  CHECK(r.lockstep.dummy_core_steps == 1);
  CHECK(r.lockstep.wait_s == doctest::Approx(19e-6));  // the dummy core: 79 - 60
  CHECK(r.lockstep.moe_s == doctest::Approx(240.768e-6));
  CHECK(r.lockstep.exposed_comm_s == doctest::Approx(40.768e-6));
}

TEST_CASE("both cores busy: the slower core's own part sets the step, then the MoE layers") {
  // b's 8-token prefill on core 1: 2 x (dense 32 + attention 8) + 5 + 40 = 125 us of its own.
  // The busiest core sends 8 tokens: 512 B, 10.512 us each way; per layer 121.024 us; two
  // 242.048 us. Step: 125 + 242.048 = 367.048 us for both; a waited 125 - 79 = 46 us.
  Group g(2);
  const auto r =
      g.run({trace::Session{"a", 0.0, {seg(3, 1)}}, trace::Session{"b", 0.0, {seg(8, 1)}}});
  CHECK(rec(r, "a").ttft_s == doctest::Approx(367.048e-6));
  CHECK(rec(r, "b").ttft_s == doctest::Approx(367.048e-6));
  CHECK(r.lockstep.steps == 1);
  CHECK(r.lockstep.dummy_core_steps == 0);
  CHECK(r.lockstep.wait_s == doctest::Approx(46e-6));
}

TEST_CASE("a session arriving while the group's step runs waits for the step's end") {
  // b reaches idle core 1 at 100 us, inside a's step (0 to 319.768 us): it starts with the next
  // step at 319.768 us, alone with core 0 now dummy: own 125 us vs dummy 60 us; b sends 8
  // tokens: 242.048 us of MoE. b's first token at 319.768 + 367.048 = 686.816 us, 586.816 us
  // after its arrival.
  Group g(2);
  const auto r =
      g.run({trace::Session{"a", 0.0, {seg(3, 1)}}, trace::Session{"b", 100e-6, {seg(8, 1)}}});
  CHECK(rec(r, "a").ttft_s == doctest::Approx(319.768e-6));
  CHECK(rec(r, "b").ttft_s == doctest::Approx(586.816e-6));
  CHECK(r.lockstep.steps == 2);
  CHECK(r.lockstep.dummy_core_steps == 2);
}

TEST_CASE("a fleet of cores without a group steps alone, as before") {
  Group g(2);
  g.dp = cluster::DpSpec{};
  const auto r = g.run({trace::Session{"a", 0.0, {seg(3, 1)}}});
  CHECK(rec(r, "a").ttft_s == doctest::Approx(279e-6));
  CHECK(r.lockstep.groups == 0);
}

TEST_CASE("the group's invariant catches a core that steps on its own") {
  // b reaches core 1 at 100 us while a's group step runs; starting core 1 by hand breaks the
  // lockstep, and the global check names the group and the core.
  Group g(2);
  const trace::Trace t{trace::Session{"a", 0.0, {seg(3, 1)}},
                       trace::Session{"b", 100e-6, {seg(8, 1)}}};
  auto router = policy::router_registry().create("round-robin", "test", Params({}, "router"));
  std::vector<cluster::ReplicaSpec> specs;
  for (size_t i = 0; i < 2; ++i) {
    sim::EngineConfig c;
    c.gpu_blocks = 100;
    c.cpu_blocks = 0;
    specs.push_back({c, g.executors[i].get(), g.policies[i].get(), "", nullptr, nullptr, g.dp});
  }
  cluster::Cluster c(t, std::move(specs), *router);
  c.load();
  CHECK_FALSE(c.run_until(100'000));
  CHECK_NOTHROW(c.check_now());
  CHECK_FALSE(c.engine(1).busy());
  c.replica(1).maybe_start();
  CHECK_THROWS_WITH_AS(c.check_global(),
                       doctest::Contains("group 0: core replica 1 runs a batch outside the group's "
                                         "step"),
                       std::logic_error);
}
