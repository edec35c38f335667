// The lossless resume (cluster/disagg.h split.resume_kv): a resumed turn sent to a prefill
// replica fetches the KV its decode holder kept over the holder's link instead of recomputing
// it. Round profile (tests/sim_fixtures.h: T(x) = 10 ms + 1 ms per batched token, 1000 KV
// bytes per token, 4-token blocks), vllm-v0, every invariant and the global check after each
// instant. Links: NVLink 1 MB/s (0.001 GB/s), inter-node 0.5 MB/s, both 2 ms latency.
#include <doctest/doctest.h>

#include <memory>

#include "cluster/cluster.h"
#include "cluster/simulation.h"
#include "policies/builtin.h"
#include "policies/routers.h"
#include "tests/cluster/pd_fleet.h"
#include "tests/sim_fixtures.h"

using namespace isim;
using cluster::Role;
using isim::test::rec;
using isim::test::seg;

namespace {

// llm-d's split at 5 uncached tokens.
struct FetchFleet : test::PdFleet {
  explicit FetchFleet(std::vector<Role> roles) : PdFleet(std::move(roles)) {
    cfg.split = {"threshold", 5};
  }
};

// a: 8-token prompt, 2 outputs, a 1 s tool call returning 6 tokens, then 2 outputs.
// Turn 1: prefill on r0 0 -> 18 ms, its 8000 B land on r1 at 28 ms (2 + 8 ms), decode
// 28 -> 39 ms, pause at 39 ms on r1 holding K = 9 KV tokens of a 10-token context. The tool
// ends at 1.039 s; the resumed context is 16 tokens, 16 - 9 = 7 uncached > 5: it goes to r0.
const trace::Trace kResumed = {trace::Session{"a", 0.0, {seg(8, 2, "tool", 1.0), seg(6, 2)}}};
constexpr size_t kMigration = static_cast<size_t>(sim::LostCause::kMigration);

}  // namespace

TEST_CASE(
    "resume_kv fetch: the holder's KV crosses its link to the prefill replica; only the "
    "rest is prefilled") {
  FetchFleet f({Role::kPrefill, Role::kDecode});
  SUBCASE("same node: NVLink") {
    // K x 1000 B = 9000 B over r1's NVLink: 2 ms + 9000 / 1e6 s = 11 ms, landing at 1.050 s.
    // r0 prefills the 7 uncached tokens (the last output and the 6 returned): 10 + 7 = 17 ms,
    // first token at 1.067 s, so the turn's TTFT is 1.067 - 1.039 = 28 ms. Its 16 KV tokens
    // (16000 B) cross r0's NVLink in 2 + 16 = 18 ms, landing at 1.085 s; one decode (11 ms)
    // ends it at 1.096 s. Nothing is recomputed or lost.
    auto r = f.run(kResumed);
    const auto& a = rec(r, "a");
    CHECK(a.resume_ttft_s == doctest::Approx(0.028));
    CHECK(a.finish_s == doctest::Approx(1.096));
    CHECK(a.replica_last == 1);
    CHECK(r.disagg.resume_fetches == 1);
    CHECK(r.disagg.resume_fetched_tokens == 9);
    CHECK(r.disagg.resume_fetch_bytes == doctest::Approx(9000));
    CHECK(r.disagg.resume_fetch_s_mean == doctest::Approx(0.011));
    CHECK(r.disagg.resume_fetch_fallbacks == 0);
    CHECK(r.disagg.transfers == 2);  // the two prefills' transfers; the fetch is counted apart
    // Prefill tokens on r0: 8 (turn 1) + 7 (turn 2).
    CHECK(r.replicas[0].counters.prefill_tokens == 15);
    CHECK(r.summary.counters.recomputed_tokens == 0);
    CHECK(r.summary.counters.lost_reuse_total() == 0);
  }
  SUBCASE("across nodes: the inter-node link") {
    // One replica per node: turn 1's 8000 B take 2 + 16 = 18 ms, landing at 36 ms; a decodes
    // until 47 ms and its tool ends at 1.047 s. 9000 B at 0.5 MB/s: 2 + 18 = 20 ms, landing at
    // 1.067 s; prefill 17 ms: first token at 1.084 s (TTFT 37 ms). 16000 B: 2 + 32 = 34 ms,
    // landing at 1.118 s; one decode to 1.129 s.
    f.cfg.links.replicas_per_node = 1;
    auto r = f.run(kResumed);
    CHECK(rec(r, "a").resume_ttft_s == doctest::Approx(0.037));
    CHECK(rec(r, "a").finish_s == doctest::Approx(1.129));
    CHECK(r.disagg.resume_fetch_s_mean == doctest::Approx(0.020));
  }
  SUBCASE("recompute (the ablation): the holder's 9 tokens are dropped and prefilled again") {
    // r0 prefills 9 + 7 = 16 tokens (26 ms): first token at 1.065 s (TTFT 26 ms); 16000 B land
    // at 1.083 s; one decode to 1.094 s.
    f.cfg.split.resume_kv = "recompute";
    auto r = f.run(kResumed);
    CHECK(rec(r, "a").resume_ttft_s == doctest::Approx(0.026));
    CHECK(rec(r, "a").finish_s == doctest::Approx(1.094));
    CHECK(r.disagg.resume_fetches == 0);
    CHECK(r.summary.counters.lost_reuse[kMigration] == 9);
  }
}

TEST_CASE(
    "resume_kv fetch falls back to recompute, counted, when the KV is not on the "
    "holder's GPU") {
  // Under `swap` r1 sends a's paused KV to its CPU: it cannot move over the link, so the
  // resumed turn recomputes on r0 as with `recompute`, and the fallback is counted.
  FetchFleet f({Role::kPrefill, Role::kDecode});
  f.cpu_blocks = 100;
  f.policies[1] = policy::policy_registry().create("swap", "test", policy::PolicyParams{});
  auto r = f.run(kResumed);
  CHECK(r.disagg.resume_fetches == 0);
  CHECK(r.disagg.resume_fetch_fallbacks == 1);
  CHECK(rec(r, "a").replica_last == 1);
}

namespace {

// Replays one scripted role change at its first decision (every `every` seconds).
class OneSwitch final : public cluster::Planner {
 public:
  OneSwitch(double every, cluster::RoleChange c) : every_(every), change_(c) {}
  std::string name() const override { return "one-switch"; }
  double interval_s() const override { return every_; }
  double pull_interval_s() const override { return every_; }
  void observe(const cluster::FleetSnapshot& s) override { pulls.push_back(s); }
  std::vector<cluster::RoleChange> decide(const cluster::PlannerContext&) override {
    return decisions++ == 0 ? std::vector<cluster::RoleChange>{change_}
                            : std::vector<cluster::RoleChange>{};
  }
  int decisions = 0;
  std::vector<cluster::FleetSnapshot> pulls;

 private:
  double every_;
  cluster::RoleChange change_;
};

cluster::RunResult run_with(FetchFleet& f, const trace::Trace& t, cluster::Planner& p,
                            const std::string& scheduler) {
  std::vector<cluster::ReplicaSpec> v;
  for (size_t i = 0; i < f.executors.size(); ++i) {
    sim::EngineConfig c;
    c.scheduler = scheduler;
    c.gpu_blocks = 400;
    v.push_back({c, f.executors[i].get(), f.policies[i].get(), ""});
  }
  auto r = policy::router_registry().create("least-loaded", "test", Params({}, "router"));
  return cluster::simulate(t, v, *r, f.cfg, &p, /*check_invariants=*/true);
}

}  // namespace

TEST_CASE("switching.restart: the worker drains, is down for cost_s, and loses all its KV") {
  // Roles P, D, D; the first decision (30 ms) moves r1 to prefill with a restart costing 0.5 s.
  FetchFleet f({Role::kPrefill, Role::kDecode, Role::kDecode});
  f.cfg.switching.restart = true;
  f.cfg.switching.cost_s = 0.5;
  OneSwitch plan(0.03, {1, Role::kPrefill});
  SUBCASE("the down window starts when the drain ends") {
    // a prefills on r0 (0 -> 18 ms), lands on r1 at 28 ms and decodes until 39 ms: r1 drains
    // until a pauses at 39 ms, then restarts: a's 9 KV tokens are lost and r1 is down until
    // 0.539 s. L (1000 tokens) arrives at 0.1 s and keeps r0 busy until 1.110 s.
    // y (0.5 s) and z (0.535 s) find r1 down: they wait on r0 and prefill together after L
    // (16 tokens, 26 ms): first tokens at 1.136 s, TTFTs 0.636 and 0.601 s. (Had the down
    // time started at the decision, r1 would be up at 0.530 s and z would take it.)
    // w (0.545 s) finds r1 up and idle: 18 ms. At 1.039 s a resumes on its holder r1, now a
    // prefill replica: 14 tokens from nothing (24 ms).
    const trace::Trace t = {
        trace::Session{"a", 0.0, {seg(8, 2, "tool", 1.0), seg(4, 2)}},
        trace::Session{"L", 0.1, {seg(1000, 2)}}, trace::Session{"y", 0.5, {seg(8, 2)}},
        trace::Session{"z", 0.535, {seg(8, 2)}}, trace::Session{"w", 0.545, {seg(8, 2)}}};
    auto r = run_with(f, t, plan, "vllm-v0");
    CHECK(r.disagg.restarts == 1);
    CHECK(r.disagg.restart_paused_tokens == 9);
    CHECK(r.summary.counters.lost_reuse[static_cast<size_t>(sim::LostCause::kRoleSwitch)] == 9);
    CHECK(rec(r, "y").ttft_s == doctest::Approx(0.636));
    CHECK(rec(r, "z").ttft_s == doctest::Approx(0.601));
    CHECK(rec(r, "z").replica_first == 0);
    CHECK(rec(r, "w").ttft_s == doctest::Approx(0.018));
    CHECK(rec(r, "w").replica_first == 1);
    CHECK(rec(r, "a").resume_ttft_s == doctest::Approx(0.024));
  }
  SUBCASE("its prefix cache is emptied, counted") {
    // vllm-v1 names every full block: a's 8-token prompt lands on r1 as 2 published blocks
    // (4 tokens each); at the restart a's 3 blocks (9 tokens) are dropped, and the 2 published
    // ones, cached once released, are forgotten: 8 tokens.
    const trace::Trace t = {trace::Session{"a", 0.0, {seg(8, 2, "tool", 1.0), seg(4, 2)}}};
    auto r = run_with(f, t, plan, "vllm-v1");
    CHECK(r.disagg.restarts == 1);
    CHECK(r.disagg.restart_paused_tokens == 9);
    CHECK(r.disagg.restart_cached_tokens == 8);
  }
}

TEST_CASE(
    "the planner's KV signal: paused KV is free in kv_cache_usage, used in kv_utilization; "
    "per-replica first tokens and gaps") {
  // Roles P, D; pulls every 0.1 s (the planner's change is a no-op: r1 already decodes). By the
  // first pull a has prefilled on r0 (first token at 18 ms), decoded on r1 and paused there at
  // 39 ms holding 9 KV tokens: 3 of r1's 400 blocks, idle. One inter-token gap, on r1.
  FetchFleet f({Role::kPrefill, Role::kDecode});
  OneSwitch plan(0.1, {1, Role::kDecode});
  auto r = run_with(f, kResumed, plan, "vllm-v0");
  REQUIRE(!plan.pulls.empty());
  const auto& p0 = plan.pulls.front().replicas;
  CHECK(p0[1].kv_utilization == doctest::Approx(3.0 / 400));
  CHECK(p0[1].kv_cache_usage == 0);
  CHECK(p0[1].active_kv_blocks == 0);
  CHECK(p0[0].ttft_count == 1);
  CHECK(p0[0].ttft_mean_s == doctest::Approx(0.018));
  CHECK(p0[1].ttft_count == 0);
  CHECK(p0[1].itl_count == 1);
  CHECK(r.disagg.role_switches == 0);
}
