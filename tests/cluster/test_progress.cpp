// Cluster::set_progress: what a progress reporter is told, worked out by hand on the round
// profile (tests/sim_fixtures.h: T(x) = 10 ms + 1 ms per batched token), vllm-v0.
#include <doctest/doctest.h>

#include <stdexcept>
#include <vector>

#include "cluster/cluster.h"
#include "cluster/simulation.h"
#include "policies/builtin.h"
#include "tests/sim_fixtures.h"

using namespace isim;
using isim::test::seg;

namespace {

sim::EngineConfig config() {
  sim::EngineConfig c;
  c.gpu_blocks = 100;
  c.cpu_blocks = 0;
  c.check_invariants = true;
  return c;
}

// s0 arrives at 0 and prefills 8 tokens (-> 18 ms), then decodes its second token (-> 29 ms).
// s1 arrives at 100 ms and prefills 4 tokens, its only one (-> 114 ms).
std::vector<cluster::ReplicaSpec> one(sim::Executor& ex, sim::Policy& pol) {
  cluster::ReplicaSpec r;
  r.config = config();
  r.executor = &ex;
  r.policy = &pol;
  return {r};
}

const trace::Trace kTrace = {trace::Session{"s0", 0.0, {seg(8, 2)}},
                             trace::Session{"s1", 0.1, {seg(4, 1)}}};

std::vector<cluster::Progress> reports(int64_t every) {
  const sim::Profile p = test::round_profile();
  sim::SimExecutor ex(p);
  auto pol = policy::policy_registry().create("preserve", "test", policy::PolicyParams{});
  cluster::SingleReplica router;
  cluster::Cluster c(kTrace, one(ex, *pol), router, true);
  std::vector<cluster::Progress> seen;
  c.set_progress([&](const cluster::Progress& r) { seen.push_back(r); }, every);
  c.load();
  CHECK(c.run_until(sim::kForever));
  return seen;
}

}  // namespace

TEST_CASE("progress: every instant, then the last report when the queue drains") {
  const auto seen = reports(1);
  // The instants: 0 (s0 arrives), 18 ms (its prefill ends), 29 ms (it finishes), 100 ms (s1
  // arrives), 114 ms (it finishes).
  const std::vector<sim::Nanos> at = {0, 18'000'000, 29'000'000, 100'000'000, 114'000'000};
  const std::vector<int64_t> done = {0, 0, 1, 1, 2};
  REQUIRE(seen.size() == at.size() + 1);
  for (size_t i = 0; i < at.size(); ++i) {
    CAPTURE(i);
    CHECK(seen[i].now == at[i]);
    CHECK(seen[i].done == done[i]);
    CHECK(seen[i].total == 2);
    CHECK_FALSE(seen[i].last);
  }
  CHECK(seen.back().now == 114'000'000);
  CHECK(seen.back().done == 2);
  CHECK(seen.back().last);
}

TEST_CASE("progress: every third instant; the run is the same with or without a reporter") {
  const auto seen = reports(3);
  REQUIRE(seen.size() == 2);
  CHECK(seen[0].now == 29'000'000);  // the third instant
  CHECK(seen[0].done == 1);
  CHECK(seen[1].last);

  const sim::Profile p = test::round_profile();
  auto run = [&](bool with) {
    sim::SimExecutor ex(p);
    auto pol = policy::policy_registry().create("preserve", "test", policy::PolicyParams{});
    cluster::SingleReplica router;
    int calls = 0;
    cluster::ProgressFn f;
    if (with) f = [&](const cluster::Progress&) { ++calls; };
    auto r = cluster::simulate(kTrace, one(ex, *pol), router, cluster::DisaggConfig{},
                               nullptr, true, nullptr, f);
    CHECK(calls == (with ? 1 : 0));  // five instants: only the last report at every 4096
    return r;
  };
  const auto a = run(false), b = run(true);
  REQUIRE(a.sessions.size() == b.sessions.size());
  for (size_t i = 0; i < a.sessions.size(); ++i) {
    CHECK(a.sessions[i].finish_s == b.sessions[i].finish_s);
    CHECK(a.sessions[i].ttft_s == b.sessions[i].ttft_s);
  }
  CHECK(a.summary.counters.iterations == b.summary.counters.iterations);
}

TEST_CASE("progress: a reporter every 0 instants is a bug in the caller") {
  const sim::Profile p = test::round_profile();
  sim::SimExecutor ex(p);
  auto pol = policy::policy_registry().create("preserve", "test", policy::PolicyParams{});
  cluster::SingleReplica router;
  cluster::Cluster c(kTrace, one(ex, *pol), router, true);
  CHECK_THROWS_AS(c.set_progress([](const cluster::Progress&) {}, 0), std::logic_error);
}
