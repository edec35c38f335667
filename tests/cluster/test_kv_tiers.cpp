// KV tiers across the fleet (cluster/kv_tiers.h) on the round profile (tests/sim_fixtures.h:
// T(x) = 10 ms + 1 ms per batched token, 1000 KV bytes per token, 4-token blocks), vllm-v0,
// preserve, every invariant checked after each iteration and instant. The pool's link runs at
// 4 MB/s (0.004 GB/s: 4 tokens of KV per ms) with 20 ms latency; the node CPU tier is absent,
// so global-lru sends what the GPU evicts to the pool.
#include <doctest/doctest.h>

#include <memory>

#include "cluster/kv_tiers.h"
#include "cluster/simulation.h"
#include "policies/builtin.h"
#include "policies/kv_managers.h"
#include "policies/routers.h"
#include "tests/sim_fixtures.h"

using namespace isim;
using isim::test::rec;
using isim::test::seg;

namespace {

struct TierFleet {
  explicit TierFleet(const std::string& manager, int replicas = 1) {
    profile = test::round_profile();
    cfg.tiers.node_cpu.capacity_gib = 0;
    cfg.tiers.pool = {1.0, {"infiniband", 0.004, 0.020}};
    cfg.tiers.fetch_threshold_tokens = 1;
    for (int i = 0; i < replicas; ++i) {
      executors.push_back(std::make_unique<sim::SimExecutor>(profile));
      policies.push_back(policy::policy_registry().create("preserve", "test", policy::PolicyParams{}));
      managers.push_back(policy::kv_manager_registry().create(manager, "test", Params({}, "m")));
    }
  }
  cluster::RunResult run(const trace::Trace& t, int64_t gpu_blocks,
                         const std::string& router = "least-loaded") {
    std::vector<cluster::ReplicaSpec> v;
    for (size_t i = 0; i < executors.size(); ++i) {
      sim::EngineConfig c;
      c.scheduler = "vllm-v0";
      c.gpu_blocks = gpu_blocks;
      v.push_back({c, executors[i].get(), policies[i].get(), "", managers[i].get()});
    }
    auto r = policy::router_registry().create(router, "test", Params({}, "router"));
    return cluster::simulate(t, std::move(v), *r, cfg, nullptr, /*checks=*/true);
  }
  sim::Profile profile;
  cluster::DisaggConfig cfg;
  std::vector<std::unique_ptr<sim::Executor>> executors;
  std::vector<std::unique_ptr<sim::Policy>> policies;
  std::vector<std::unique_ptr<sim::KvManager>> managers;
};

// a: `prompt` tokens, 2 out, a 1 s tool, then 4 in and 2 out. b arrives at 0.1 s with 40
// tokens; on 14 blocks it needs 11, so the GPU evicts a's paused KV.
trace::Trace evicting_trace(int64_t prompt) {
  return {trace::Session{"a", 0.0, {seg(prompt, 2, "tool", 1.0), seg(4, 2)}},
          trace::Session{"b", 0.1, {seg(40, 2)}}};
}

}  // namespace

TEST_CASE("a remote-pool fetch beats a recompute when the prefix is long and loses when short") {
  const auto pool = static_cast<size_t>(cluster::kHitPool);
  const auto idle = static_cast<size_t>(sim::LostCause::kIdleEviction);
  SUBCASE("long: 41 tokens come back from the pool") {
    // a prefills 40 (50 ms), decodes to 61 ms and pauses holding 41 KV tokens (11 blocks).
    // At 0.1 s b's arrival evicts them to the pool: 41,000 B, 20 + 10.25 ms, ready at
    // 0.13025 s. The tool returns at 1.061 s: recomputing 46 tokens costs 10 + 46 = 56 ms;
    // fetching costs 20 + 10.25 = 30.25 ms plus a 5-token prefill (15 ms) = 45.25 ms, so it
    // fetches. The KV lands at 1.09125 s, the prefill ends at 1.10625 s: TTFT 45.25 ms; one
    // decode to 1.11725 s.
    TierFleet f("global-lru");
    auto r = f.run(evicting_trace(40), 14);
    CHECK(r.tiers.enabled);
    CHECK(r.tiers.demotions[1] == 1);
    CHECK(r.tiers.demoted_tokens[1] == 41);
    CHECK(r.tiers.fetches[2] == 1);
    CHECK(r.tiers.fetched_tokens[2] == 41);
    CHECK(r.tiers.recompute_saved() == 41);
    CHECK(r.tiers.hits[pool] == 1);
    CHECK(r.tiers.link_bytes[cluster::kLinkNetwork] == doctest::Approx(82000));
    CHECK(r.tiers.fetch_s_mean == doctest::Approx(0.03025));
    CHECK(rec(r, "a").resume_ttft_s == doctest::Approx(0.04525));
    CHECK(rec(r, "a").finish_s == doctest::Approx(1.11725));
    CHECK(r.summary.counters.lost_reuse[idle] == 0);
    CHECK(r.summary.counters.recomputed_tokens == 0);
  }
  SUBCASE("short: 17 tokens are cheaper to recompute") {
    // a prefills 16 (26 ms), decodes to 37 ms, pauses holding 17 tokens (5 blocks), evicted to
    // the pool at 0.1 s (ready at 0.12425 s). At 1.037 s: recompute 22 tokens = 32 ms against
    // 20 + 4.25 + 15 = 39.25 ms to fetch. It recomputes: TTFT 32 ms, finish 1.080 s, and the
    // pool's copy is given up (declined).
    TierFleet f("global-lru");
    auto r = f.run(evicting_trace(16), 14);
    CHECK(r.tiers.demoted_tokens[1] == 17);
    CHECK(r.tiers.fetches[2] == 0);
    CHECK(r.tiers.lost_tokens[cluster::kLostDeclined] == 17);
    CHECK(r.tiers.hits[static_cast<size_t>(cluster::kHitMiss)] == 1);
    CHECK(rec(r, "a").resume_ttft_s == doctest::Approx(0.032));
    CHECK(rec(r, "a").finish_s == doctest::Approx(1.080));
    CHECK(r.summary.counters.lost_reuse[idle] == 17);
  }
  SUBCASE("local uses no tiers: the evicted KV is recomputed") {
    // 46 tokens in one prefill: 56 ms.
    TierFleet f("local");
    auto r = f.run(evicting_trace(40), 14);
    CHECK_FALSE(r.tiers.enabled);
    CHECK(rec(r, "a").resume_ttft_s == doctest::Approx(0.056));
    CHECK(r.summary.counters.lost_reuse[idle] == 41);
  }
}

TEST_CASE("a session resumed on another replica fetches its KV from the holder's GPU") {
  // Two replicas on one node, NVLink at 4 MB/s with 20 ms latency; round-robin puts a on r0 and
  // its resume on r1. a pauses at 61 ms on r0 holding 41 tokens. At 1.061 s a peer fetch
  // (20 + 10.25 ms, then 5 tokens prefilled in 15 ms: 45.25 ms) beats recomputing 46 tokens on
  // r1 (56 ms): the KV lands on r1 at 1.09125 s, the first token at 1.10625 s, the finish at
  // 1.11725 s. Without tiers (local) the migration drops the 41 tokens and r1 recomputes them.
  const trace::Trace t = {trace::Session{"a", 0.0, {seg(40, 2, "tool", 1.0), seg(4, 2)}}};
  const auto migration = static_cast<size_t>(sim::LostCause::kMigration);
  SUBCASE("global-lru: the KV moves over NVLink") {
    TierFleet f("global-lru", 2);
    f.cfg.links.intra_node = {"nvlink", 0.004, 0.020};
    auto r = f.run(t, 64, "round-robin");
    CHECK(r.tiers.fetches[0] == 1);
    CHECK(r.tiers.fetched_tokens[0] == 41);
    CHECK(r.tiers.hits[static_cast<size_t>(cluster::kHitPeerGpu)] == 1);
    CHECK(r.tiers.link_bytes[cluster::kLinkNvlink] == doctest::Approx(41000));
    CHECK(rec(r, "a").replica_last == 1);
    CHECK(rec(r, "a").migrations == 1);
    CHECK(rec(r, "a").resume_ttft_s == doctest::Approx(0.04525));
    CHECK(rec(r, "a").finish_s == doctest::Approx(1.11725));
    CHECK(r.summary.counters.lost_reuse_total() == 0);
  }
  SUBCASE("local: the migration drops it") {
    TierFleet f("local", 2);
    auto r = f.run(t, 64, "round-robin");
    CHECK(rec(r, "a").replica_last == 1);
    CHECK(rec(r, "a").resume_ttft_s == doctest::Approx(0.056));
    CHECK(r.summary.counters.lost_reuse[migration] == 41);
  }
}

TEST_CASE("the fetch rule is Mooncake's: enough more tokens, and transfer + rest beats local") {
  cluster::FetchCase c{10, 90, 30, 100, 50};
  CHECK(cluster::fetch_pays(c, 80));         // 80 more tokens, 30 + 50 < 100
  CHECK_FALSE(cluster::fetch_pays(c, 81));   // below the threshold
  c.transfer = 50;
  CHECK_FALSE(cluster::fetch_pays(c, 1));    // 50 + 50 is not < 100
  CHECK(cluster::transfer_estimate({"pcie", 2.0, 1e-6}, 4000) == 1000 + 2000);
}

TEST_CASE("a full tier gives up entries in the order it is told, and never more than needed") {
  cluster::TierStore st(cluster::TierKind::kPool, 100);
  st.put({1, 10, 40, 0, 0, 0});
  st.put({2, 10, 30, 0, 0, 0});
  st.put({3, 10, 20, 0, 0, 0});
  bool fits = false;
  // Lowest session index first: 1 (40 B) leaves, and 90 - 40 + 45 = 95 fits.
  auto gone = st.make_room(45, fits, [](const auto& a, const auto& b) { return a.session < b.session; });
  CHECK(fits);
  REQUIRE(gone.size() == 1);
  CHECK(gone[0].session == 1);
  CHECK(st.used() == doctest::Approx(50));
  gone = st.make_room(101, fits, [](const auto&, const auto&) { return false; });
  CHECK_FALSE(fits);
  CHECK(gone.empty());
  CHECK_THROWS_AS(st.take(7), std::logic_error);
  CHECK(st.peak() == doctest::Approx(90));
}

TEST_CASE("no oracle: agent-aware's eviction and tier choice are the same whatever the paused "
          "intercepts' true durations") {
  // A and B pause on one replica (same kind, same priority) holding 2 blocks each; C needs one
  // of them out at 1 s. Their true durations (10 s and 20 s, or swapped) lie in the future at
  // that instant, so the session evicted and the tier its KV goes to must not depend on them.
  auto trace_with = [](double a_s, double b_s) {
    return trace::Trace{trace::Session{"A", 0.0, {seg(8, 1, "tool", a_s), seg(1, 1)}},
                        trace::Session{"B", 0.05, {seg(8, 1, "tool", b_s), seg(1, 1)}},
                        trace::Session{"C", 1.0, {seg(12, 1)}}};
  };
  for (double cpu_gib : {0.0, 1.0}) {
    CAPTURE(cpu_gib);
    TierFleet f1("agent-aware"), f2("agent-aware");
    f1.cfg.tiers.node_cpu.capacity_gib = f2.cfg.tiers.node_cpu.capacity_gib = cpu_gib;
    const auto x = f1.run(trace_with(10.0, 20.0), 6);
    const auto y = f2.run(trace_with(20.0, 10.0), 6);
    CHECK(x.tiers.demotions == y.tiers.demotions);
    CHECK(x.tiers.demotions[0] + x.tiers.demotions[1] == 1);
    CHECK(x.tiers.demotions[0] == (cpu_gib > 0 ? 1 : 0));  // expected idle 1 s < pool_after_s
    CHECK(x.tiers.fetches == y.tiers.fetches);
    CHECK(rec(x, "A").recomputed_tokens == rec(y, "A").recomputed_tokens);
    CHECK(rec(x, "B").recomputed_tokens == rec(y, "B").recomputed_tokens);
  }
}

TEST_CASE("with roles, a resumed session's KV still comes back from a tier, and leaves it") {
  // The soak's global-invariant failures (roles with a tier-using manager, every policy):
  // resumes in a fleet with roles took the disaggregated path, which never looked at the tiers,
  // so a's pool entry outlived its resume ("has KV in pool and also holds ... tokens").
  const auto idle = static_cast<size_t>(sim::LostCause::kIdleEviction);
  SUBCASE("one mixed replica: exactly the plain fleet's fetch") {
    // As in the first case above: the 41 tokens come back from the pool at 1.09125 s.
    TierFleet f("global-lru");
    f.cfg.enabled = true;
    f.cfg.roles = {cluster::Role::kMixed};
    auto r = f.run(evicting_trace(40), 14);
    CHECK(r.tiers.fetches[2] == 1);
    CHECK(r.tiers.fetched_tokens[2] == 41);
    CHECK(rec(r, "a").resume_ttft_s == doctest::Approx(0.04525));
    CHECK(rec(r, "a").finish_s == doctest::Approx(1.11725));
    CHECK(r.summary.counters.lost_reuse[idle] == 0);
  }
  SUBCASE("prefill and decode: the fetch lands on the prefill replica, which exports the turn") {
    // Every turn prefills on r0 and decodes on r1, where a pauses and b's arrival evicts a's
    // KV to the pool. a's resume goes to r0 (split: always); the fetch lands there and the
    // turn's KV leaves for r1 after its prefill, as any turn's does: nothing recomputed.
    TierFleet f("global-lru", 2);
    f.cfg.enabled = true;
    f.cfg.roles = {cluster::Role::kPrefill, cluster::Role::kDecode};
    auto r = f.run(evicting_trace(40), 14);
    CHECK(r.tiers.fetches[2] == 1);
    CHECK(rec(r, "a").status == "finished");
    CHECK(rec(r, "a").replica_last == 1);
    CHECK(r.summary.counters.lost_reuse[idle] == 0);
    CHECK(r.summary.counters.recomputed_tokens == 0);
  }
}
