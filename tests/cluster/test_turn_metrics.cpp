// Per-turn metrics of a whole run (sim/turn_metrics.h): every turn's TTFT from its start, the
// longest inter-token gap of each turn, and per-request latency, on a single replica of the
// round profile (tests/sim_fixtures.h: T(x) = 10 ms + 1 ms per batched token), vllm-v0
// (a waiting prefill runs alone, before the decodes), preserve. Expected values by hand.
#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "cluster/simulation.h"
#include "policies/builtin.h"
#include "policies/kv_managers.h"
#include "policies/routers.h"
#include "tests/sim_fixtures.h"

using namespace isim;
using isim::test::rec;
using isim::test::seg;

namespace {

// a: arrives at 0, prompt 8, 3 outputs, a 0.5 s intercept, 4 returned tokens, 2 outputs.
// b: arrives at 20 ms, prompt 20, 3 outputs.
//   [0,18)    prefill a (8)            a token 1 at 18  (a turn 0 TTFT 18 ms)
//   [18,29)   decode a                 a token 2 at 29  (gap 11)
//   b arrives at 20, waits; at 29 its prefill runs alone:
//   [29,59)   prefill b (20)           b token 1 at 59  (b TTFT 59 - 20 = 39 ms)
//   [59,71)   decode a, b (2 tokens)   a token 3 at 71  (gap 71 - 29 = 42: a's longest)
//                                      b token 2 at 71  (gap 12); a pauses, intercept ends 571
//   [71,82)   decode b                 b token 3 at 82  (gap 11): b finishes
//   [571,586) prefill a (4 returned + its last output: 5; the rest of its KV kept)
//                                      a token 1 at 586 (turn TTFT 15 ms)
//   [586,597) decode a                 a token 2 at 597 (gap 11): a finishes
trace::Trace two_sessions() {
  return {trace::Session{"a", 0.0, {seg(8, 3, "qa", 0.5), seg(4, 2)}},
          trace::Session{"b", 0.020, {seg(20, 3)}}};
}

sim::EngineConfig roomy_engine() {
  sim::EngineConfig c;
  c.gpu_blocks = 20;
  c.cpu_blocks = 100;
  c.max_num_batched_tokens = 64;
  return c;
}

}  // namespace

TEST_CASE("each turn's input, finish, replica and every inter-token gap, by hand") {
  // The schedule above: gaps a0 {11, 42} ms, b0 {12, 11}, a1 {11}. Inputs: a0 8, b0 20; a1 is
  // computed over 8 + 3 outputs + 4 returned = 15 tokens. Finishes: 71, 82, 597 ms.
  const auto r = test::run(two_sessions(), "preserve", roomy_engine());
  REQUIRE(r.turns.size() == 3);
  const auto ms = [](int64_t x) { return x * 1'000'000; };
  const auto& a0 = r.turns[0];
  const auto& b0 = r.turns[1];
  const auto& a1 = r.turns[2];
  REQUIRE(r.gaps_kept);
  const auto gaps = [&](const sim::TurnRecord& t) { return r.gaps.runs(t.gaps_at, t.gaps_words); };
  CHECK(gaps(a0) == std::vector<sim::GapRun>{{ms(11), 1}, {ms(42), 1}});
  CHECK(gaps(b0) == std::vector<sim::GapRun>{{ms(12), 1}, {ms(11), 1}});
  CHECK(gaps(a1) == std::vector<sim::GapRun>{{ms(11), 1}});
  // First to last token: a0 18 -> 71, b0 59 -> 82, a1 586 -> 597 ms (the sums of their gaps).
  CHECK(a0.span_ns == ms(53));
  CHECK(b0.span_ns == ms(23));
  CHECK(a1.span_ns == ms(11));
  CHECK(a0.input_tokens == 8);
  CHECK(b0.input_tokens == 20);
  CHECK(a1.input_tokens == 15);
  CHECK(a0.finish_s == doctest::Approx(0.071).epsilon(1e-9));
  CHECK(b0.finish_s == doctest::Approx(0.082).epsilon(1e-9));
  CHECK(a1.finish_s == doctest::Approx(0.597).epsilon(1e-9));
  CHECK(a0.replica == 0);
  CHECK(a1.replica == 0);
}

TEST_CASE("equal consecutive inter-token gaps merge into one run") {
  // c alone: prefill 8 tokens [0, 18) ms, then three decodes of one token at 11 ms each:
  // tokens at 18, 29, 40, 51 -> gaps 11, 11, 11 = one run of 3.
  const auto r = test::run({trace::Session{"c", 0.0, {seg(8, 4)}}}, "preserve", roomy_engine());
  REQUIRE(r.turns.size() == 1);
  CHECK(r.gaps.runs(r.turns[0].gaps_at, r.turns[0].gaps_words) ==
        std::vector<sim::GapRun>{{11'000'000, 3}});
  CHECK(r.turns[0].finish_s == doctest::Approx(0.051).epsilon(1e-9));
}

TEST_CASE("per-turn TTFT, longest inter-token gap and per-request latency, by hand") {
  const auto r = test::run(two_sessions(), "preserve", roomy_engine());
  REQUIRE(r.turns.size() == 3);
  // Sorted by start: a's first turn (0), b's (20 ms), a's resumed turn (571 ms).
  const auto& a0 = r.turns[0];
  const auto& b0 = r.turns[1];
  const auto& a1 = r.turns[2];
  CHECK(a0.seg == 0);
  CHECK(a0.start_s == doctest::Approx(0.0));
  CHECK(a0.ttft_s == doctest::Approx(0.018).epsilon(1e-9));
  CHECK(a0.itl_max_s == doctest::Approx(0.042).epsilon(1e-9));
  CHECK(a0.output_tokens == 3);
  CHECK(b0.start_s == doctest::Approx(0.020).epsilon(1e-9));
  CHECK(b0.ttft_s == doctest::Approx(0.039).epsilon(1e-9));
  CHECK(b0.itl_max_s == doctest::Approx(0.012).epsilon(1e-9));
  CHECK(a1.seg == 1);
  CHECK(a1.start_s == doctest::Approx(0.571).epsilon(1e-9));
  CHECK(a1.ttft_s == doctest::Approx(0.015).epsilon(1e-9));
  CHECK(a1.itl_max_s == doctest::Approx(0.011).epsilon(1e-9));
  CHECK(a1.output_tokens == 2);

  const auto& s = r.summary;
  // request TTFT over {15, 18, 39} ms: mean 24; nearest rank p50 = 2nd = 18, p90 = 3rd = 39.
  CHECK(s.request_ttft.n == 3);
  CHECK(s.request_ttft.mean == doctest::Approx(0.024).epsilon(1e-9));
  CHECK(s.request_ttft.p50 == doctest::Approx(0.018).epsilon(1e-9));
  CHECK(s.request_ttft.p90 == doctest::Approx(0.039).epsilon(1e-9));
  CHECK(s.request_ttft.max == doctest::Approx(0.039).epsilon(1e-9));
  // The resumed turns only stay in turn_ttft: {15 ms}.
  CHECK(s.turn_ttft.n == 1);
  CHECK(s.turn_ttft.mean == doctest::Approx(0.015).epsilon(1e-9));
  // itl_max over {11, 12, 42} ms: p50 12, p99 42.
  CHECK(s.itl_max.n == 3);
  CHECK(s.itl_max.p50 == doctest::Approx(0.012).epsilon(1e-9));
  CHECK(s.itl_max.p99 == doctest::Approx(0.042).epsilon(1e-9));
  // Per-request latency: a (597 - 500) / 2 = 48.5 ms; b (82 - 20) / 1 = 62 ms; mean 55.25.
  CHECK(s.request_latency.n == 2);
  CHECK(s.request_latency.mean == doctest::Approx(0.05525).epsilon(1e-9));
  CHECK(s.request_latency.max == doctest::Approx(0.062).epsilon(1e-9));
}

TEST_CASE("a turn with one output token has no inter-token gap") {
  // One session, prompt 8, 1 output: [0,18) -> its only token. TTFT 18 ms, no itl_max.
  const auto r = test::run({trace::Session{"c", 0.0, {seg(8, 1)}}}, "preserve", roomy_engine());
  REQUIRE(r.turns.size() == 1);
  CHECK(r.turns[0].ttft_s == doctest::Approx(0.018).epsilon(1e-9));
  CHECK(r.turns[0].itl_max_s < 0);
  CHECK(r.summary.itl_max.n == 0);
  CHECK(r.summary.request_ttft.n == 1);
}

namespace {

// A fleet on the round profile (1000 KV bytes per token), preserve, vllm-v0, every invariant
// checked: with `roles`, disaggregated over 1 MB/s links with 2 ms latency (8000 B: 10 ms);
// with `manager`, KV tiers: a pool over a 4 MB/s, 20 ms "infiniband" link, no node CPU tier.
struct TurnFleet {
  TurnFleet(std::vector<cluster::Role> roles, const std::string& manager) {
    profile = test::round_profile();
    profile.model.layers = 2;  // two layers of 125-dim heads: still 1000 KV bytes per token
    profile.model.head_dim = 125;
    cfg.enabled = !roles.empty();
    cfg.roles = roles;
    cfg.links.intra_node = {"nvlink", 0.001, 2e-3};
    cfg.links.inter_node = {"infiniband", 0.0005, 2e-3};
    cfg.tiers.node_cpu.capacity_gib = 0;
    cfg.tiers.pool = {1.0, {"infiniband", 0.004, 0.020}};
    cfg.tiers.fetch_threshold_tokens = 1;
    const size_t n = roles.empty() ? 1 : roles.size();
    for (size_t i = 0; i < n; ++i) {
      executors.push_back(std::make_unique<sim::SimExecutor>(profile));
      policies.push_back(
          policy::policy_registry().create("preserve", "test", policy::PolicyParams{}));
      if (!manager.empty())
        managers.push_back(policy::kv_manager_registry().create(manager, "test", Params({}, "m")));
    }
  }
  cluster::RunResult run(const trace::Trace& t, int64_t gpu_blocks) {
    std::vector<cluster::ReplicaSpec> v;
    for (size_t i = 0; i < executors.size(); ++i) {
      sim::EngineConfig c;
      c.scheduler = "vllm-v0";
      c.gpu_blocks = gpu_blocks;
      v.push_back({c, executors[i].get(), policies[i].get(), "",
                   managers.empty() ? nullptr : managers[i].get()});
    }
    auto r = policy::router_registry().create("least-loaded", "test", Params({}, "router"));
    return cluster::simulate(t, std::move(v), *r, cfg, nullptr, /*checks=*/true);
  }
  sim::Profile profile;
  cluster::DisaggConfig cfg;
  std::vector<std::unique_ptr<sim::Executor>> executors;
  std::vector<std::unique_ptr<sim::Policy>> policies;
  std::vector<std::unique_ptr<sim::KvManager>> managers;
};

double link_bytes_of(const cluster::RunResult& r, const std::string& kind) {
  for (const auto& [k, v] : r.link_bytes)
    if (k == kind) return v;
  return 0;
}

}  // namespace

TEST_CASE("disaggregated: the KV transfer is inside the turn's longest token gap, and on nvlink") {
  // Prefill 8 on r0: token 1 at 18 ms. 8000 B over the 1 MB/s link: 2 + 8 ms, landing at 28.
  // Decodes on r1: 28 -> 39 (token 2: gap 39 - 18 = 21 ms), 39 -> 50 (token 3: gap 11).
  TurnFleet f({cluster::Role::kPrefill, cluster::Role::kDecode}, "");
  const trace::Trace t = {trace::Session{"a", 0.0, {seg(8, 3)}}};
  SUBCASE("whole KV after the prefill") {
    auto r = f.run(t, 400);
    REQUIRE(r.turns.size() == 1);
    CHECK(r.turns[0].ttft_s == doctest::Approx(0.018).epsilon(1e-9));
    CHECK(r.turns[0].itl_max_s == doctest::Approx(0.021).epsilon(1e-9));
    CHECK(r.summary.itl_max.p99 == doctest::Approx(0.021).epsilon(1e-9));
    CHECK(link_bytes_of(r, "nvlink") == doctest::Approx(8000));
    CHECK(link_bytes_of(r, "infiniband") == 0);
  }
  SUBCASE("layer by layer: the link still carries all 8000 B") {
    // The 18 ms prefill could stream 18000 B, so only the last layer (4000 B) moves after it:
    // 2 + 4 ms, landing at 24; decodes 24 -> 35 (gap 35 - 18 = 17 ms) -> 46 (gap 11).
    f.cfg.links.transfer = "layer";
    auto r = f.run(t, 400);
    REQUIRE(r.turns.size() == 1);
    CHECK(r.turns[0].itl_max_s == doctest::Approx(0.017).epsilon(1e-9));
    CHECK(link_bytes_of(r, "nvlink") == doctest::Approx(8000));
    CHECK(r.disagg.transfer_bytes == doctest::Approx(8000));
  }
}

TEST_CASE("KV tiers: the demotion to the pool and the fetch back count on its link's kind") {
  // tests/cluster/test_kv_tiers.cpp's long case: a (40 in, 2 out, a 1 s tool, 4 in, 2 out) is
  // evicted to the pool at 0.1 s by b (40 in at 0.1 s) and fetched back: 41 KV tokens each
  // way, 41,000 B + 41,000 B on the pool's infiniband link. a's resumed turn: TTFT 45.25 ms.
  TurnFleet f({}, "global-lru");
  auto r = f.run({trace::Session{"a", 0.0, {seg(40, 2, "tool", 1.0), seg(4, 2)}},
                  trace::Session{"b", 0.1, {seg(40, 2)}}},
                 14);
  CHECK(link_bytes_of(r, "infiniband") == doctest::Approx(82000));
  CHECK(rec(r, "a").resume_ttft_s == doctest::Approx(0.04525));
  CHECK(r.summary.turn_ttft.max == doctest::Approx(0.04525));
  CHECK(r.summary.request_ttft.n == 3);
}
