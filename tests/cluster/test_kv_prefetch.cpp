// agent-aware's prefetch through the fleet's tiers (cluster/tiers.h, tier_prefetch.cpp) on the
// round profile (tests/sim_fixtures.h: T(x) = 10 ms + 1 ms per batched token, 1000 KV bytes per
// token, 4-token blocks), vllm-v0, preserve, 14 GPU blocks, every check on (engines, the global
// invariant after each event). The node CPU tier's PCIe link runs at 4 MB/s (4 tokens of KV per
// ms) with 20 ms latency; no pool; the fetch threshold is 1 token; history_min_samples 1.
#include <doctest/doctest.h>

#include <memory>

#include "cluster/simulation.h"
#include "policies/builtin.h"
#include "policies/kv_managers.h"
#include "policies/routers.h"
#include "tests/sim_fixtures.h"

using namespace isim;
using isim::test::rec;
using isim::test::seg;

namespace prefetch_test {

cluster::RunResult run(const trace::Trace& t, bool prefetch) {
  const sim::Profile profile = test::round_profile();
  sim::SimExecutor ex(profile);
  auto policy = policy::policy_registry().create("preserve", "test", policy::PolicyParams{});
  auto kv = policy::kv_manager_registry().create(
      "agent-aware", "test",
      Params({{"history_min_samples", "1"}, {"prefetch", prefetch ? "true" : "false"}}, "m"));
  cluster::DisaggConfig cfg;
  cfg.tiers.node_cpu = {1.0, {"pcie", 0.004, 0.020}};
  cfg.tiers.pool.capacity_gib = 0;
  cfg.tiers.fetch_threshold_tokens = 1;
  sim::EngineConfig c;
  c.scheduler = "vllm-v0";
  c.gpu_blocks = 14;
  std::vector<cluster::ReplicaSpec> v{{c, &ex, policy.get(), "", kv.get()}};
  auto router = policy::router_registry().create("least-loaded", "test", Params({}, "router"));
  return cluster::simulate(t, std::move(v), *router, cfg, nullptr, /*checks=*/true);
}

// h (0 s): an 8-token prompt, pauses at 18 ms for a 5 s tool: the stage's history is {5 s}.
// a (6 s): 40 tokens, prefill to 6.050 s, one decode to 6.061 s, pauses for `a_tool` s
// holding 41 tokens (11 blocks). b (6.1 s, 40 tokens, 11 blocks) evicts a's KV to the CPU tier:
// 41,000 B, 20 + 10.25 ms, landed at 6.13025 s; b ends at 6.161 s. `c_at` > 0: c (40 tokens)
// arrives then and evicts a's KV again if it is back on the GPU.
trace::Trace scene(double a_tool, double c_at) {
  trace::Trace t = {trace::Session{"h", 0.0, {seg(8, 1, "tool", 5.0), seg(1, 1)}},
                    trace::Session{"a", 6.0, {seg(40, 2, "tool", a_tool), seg(4, 2)}},
                    trace::Session{"b", 6.1, {seg(40, 2)}}};
  if (c_at > 0) t.push_back(trace::Session{"c", c_at, {seg(40, 2)}});
  return t;
}

}  // namespace prefetch_test

TEST_CASE("a prefetch brings tier KV back before the tool returns, from history only") {
  // The check runs every second (1 s, 2 s, ...). a's fetch would take 30.25 ms; with the margin
  // (1 s) the rule asks P(D <= e + 1.03025 | D > e) >= 0.5 over {5}: e >= 3.96975 s, i.e. at
  // t >= 6.061 + 3.96975 = 10.03075 s, so the check at 11 s prefetches (at 10 s, e = 3.939 s:
  // 4.969 < 5). The copy lands at 11.03025 s.
  SUBCASE("a 5 s tool: a hit; the turn starts with its KV on the GPU") {
    // The tool returns at 11.061 s: 5 tokens to prefill, 15 ms: TTFT 15 ms. Without prefetch
    // the fetch starts then: 30.25 + 15 = 45.25 ms.
    const auto r = prefetch_test::run(prefetch_test::scene(5.0, 0), true);
    CHECK(r.tiers.prefetches == 1);
    CHECK(r.tiers.prefetch_hits == 1);
    CHECK(r.tiers.prefetch_wasted_bytes == 0);
    CHECK(r.tiers.fetches[1] == 1);  // the prefetch is the CPU tier's one fetch
    CHECK(r.tiers.fetched_tokens[1] == 41);
    CHECK(rec(r, "a").resume_ttft_s == doctest::Approx(0.015));
    CHECK(r.summary.counters.recomputed_tokens == 0);
    const auto off = prefetch_test::run(prefetch_test::scene(5.0, 0), false);
    CHECK(off.tiers.prefetches == 0);
    CHECK(off.tiers.fetches[1] == 1);
    CHECK(rec(off, "a").resume_ttft_s == doctest::Approx(0.04525));
  }
  SUBCASE("a 20 s tool and c at 12 s: the prefetched KV is evicted again, its bytes wasted") {
    // Prefetched at 11 s as above (history cannot tell this tool from the 5 s one); c (12 s)
    // needs 11 blocks with 3 free and evicts a's KV to the CPU tier again (PCIe bytes: 3 x
    // 41,000). Later checks see P = 0 (no ended tool lasted past 5 s): no second prefetch. The
    // tool returns at 26.061 s and the KV is fetched then: TTFT 45.25 ms.
    const auto r = prefetch_test::run(prefetch_test::scene(20.0, 12.0), true);
    CHECK(r.tiers.prefetches == 1);
    CHECK(r.tiers.prefetch_hits == 0);
    CHECK(r.tiers.prefetch_wasted_bytes == doctest::Approx(41000));
    CHECK(r.tiers.demotions[0] == 2);
    CHECK(r.tiers.fetches[1] == 2);
    CHECK(r.tiers.link_bytes[cluster::kLinkPcie] == doctest::Approx(4 * 41000));
    CHECK(rec(r, "a").resume_ttft_s == doctest::Approx(0.04525));
  }
}
