// Issue 35's KV managers on one replica (tests/policies/kv_replica.h: the round profile,
// T(x) = 10 ms + 1 ms per batched token, 4-token blocks, vllm-v1, preserve, every invariant
// checked), prefix caching off so that an evicted block is gone: dynamo-agentic's order,
// oracle-belady's order through the oracle, and agent-aware's value order (reuse probability x
// reload cost per byte-second) against its issue-15 order. Each replica's node CPU tier is
// present (the default), but 8 tokens are below the fetch threshold (1024), so evicted KV is
// recomputed at the resume.
#include <doctest/doctest.h>

#include <memory>
#include <string>

#include "core/input_error.h"
#include "policies/estimator.h"
#include "policies/kv_managers.h"
#include "tests/policies/kv_replica.h"
#include "tests/sim_fixtures.h"

using namespace isim;
using isim::test::rec;
using isim::test::seg;

namespace i35_kv {

// Two sessions pause holding 8 KV tokens (2 blocks) each; C (1 s, 12 tokens, 3 blocks) finds 2
// of 6 blocks free, so one of them is evicted and recomputes its 8 tokens at its resume.
// A (0 s) pauses at 18 ms, B (0.05 s) at 68 ms.
trace::Trace two_paused(double a_s, double b_s, int32_t a_prio = 50, int32_t b_prio = 50) {
  auto paused = [](std::string id, double at, double dur, int32_t prio) {
    trace::Session s{std::move(id), at, {seg(8, 1, "tool", dur), seg(1, 1)}};
    s.segments[0].retention = {trace::Retention{0, 8, prio, 0}};
    return s;
  };
  return {paused("A", 0.0, a_s, a_prio), paused("B", 0.05, b_s, b_prio),
          trace::Session{"C", 1.0, {seg(12, 1)}}};
}

const char* evicted(const cluster::RunResult& r) {
  const bool a = rec(r, "A").recomputed_tokens == 8, b = rec(r, "B").recomputed_tokens == 8;
  return a && !b ? "A" : b && !a ? "B" : "?";
}

cluster::RunResult run_on(const std::string& manager, const trace::Trace& t, int64_t blocks,
                          std::map<std::string, std::string> params = {}) {
  isim::test::Replica r(manager, blocks, std::move(params));
  r.cfg.prefix_caching = false;
  return r.run(t);
}

}  // namespace i35_kv

TEST_CASE("issue 35's kv managers are registered; agent-aware's value is checked") {
  const auto& reg = policy::kv_manager_registry();
  CHECK(reg.contains("dynamo-agentic"));
  CHECK(reg.contains("oracle-belady"));
  CHECK_THROWS_AS(reg.create("agent-aware", "x", Params({{"value", "lfu"}}, "kv")), InputError);
  CHECK_THROWS_AS(reg.create("agent-aware", "x", Params({{"horizon_s", "0"}}, "kv")), InputError);
  CHECK_THROWS_AS(reg.create("oracle-belady", "x", Params({{"x", "1"}}, "kv")), InputError);
  CHECK(reg.create("dynamo-agentic", "x", Params({}, "kv"))->frees_worthless());
  CHECK_FALSE(reg.create("dynamo-agentic", "x", Params({}, "kv"))->frees_reset_tail());
  CHECK(reg.create("agent-aware", "x", Params({}, "kv"))->prefetch_interval_s() == 1.0);
  CHECK(reg.create("agent-aware", "x", Params({{"prefetch", "false"}}, "kv"))
            ->prefetch_interval_s() == 0.0);
}

TEST_CASE("dynamo-agentic evicts the lowest priority hint first, then the least recently used") {
  // Same priority: A paused first (18 ms against 68 ms), so A goes (LRU). A hint of 10 on one
  // of them sends that one first whatever its age.
  CHECK(std::string(i35_kv::evicted(
            i35_kv::run_on("dynamo-agentic", i35_kv::two_paused(10, 10), 6))) == "A");
  CHECK(std::string(i35_kv::evicted(
            i35_kv::run_on("dynamo-agentic", i35_kv::two_paused(10, 10, 90, 10), 6))) == "B");
  CHECK(std::string(i35_kv::evicted(
            i35_kv::run_on("dynamo-agentic", i35_kv::two_paused(10, 10, 10, 90), 6))) == "A");
}

TEST_CASE("oracle-belady evicts the KV whose next use is farthest ahead, through the oracle") {
  // At 1 s: with tools of 10 s (A) and 20 s (B), A is next used at 10.018 s (9.018 s ahead) and
  // B at 20.068 s (19.068 s ahead): B goes. Swapped (20 s and 10 s): A at 20.018 s, B at
  // 10.068 s: A goes. (agent-aware, which cannot see the future, evicts the same one in both:
  // tests/policies/test_kv_managers.cpp.)
  CHECK(std::string(i35_kv::evicted(
            i35_kv::run_on("oracle-belady", i35_kv::two_paused(10, 20), 6))) == "B");
  CHECK(std::string(i35_kv::evicted(
            i35_kv::run_on("oracle-belady", i35_kv::two_paused(20, 10), 6))) == "A");
}

TEST_CASE("history: P(an intercept ends within H | it has lasted e) over the ended ones") {
  auto h = policy::estimator_registry().create("history", "test", policy::EstimatorOptions{2});
  h->observe("t", 2.0);
  CHECK(h->p_within("t", 0.0, 10.0) < 0);  // one sample, two needed: no basis
  h->observe("t", 200.0);
  // {2, 200}: both last longer than 1 s; of them, 2 s ends by 61 s: 1/2.
  CHECK(h->p_within("t", 1.0, 60.0) == doctest::Approx(0.5));
  CHECK(h->p_within("t", 1.0, 300.0) == doctest::Approx(1.0));
  CHECK(h->p_within("t", 3.0, 60.0) == doctest::Approx(0.0));  // only 200 s is longer: not by 63
  CHECK(h->p_within("t", 250.0, 60.0) == 0.0);                 // none lasted that long
  CHECK(h->p_within("u", 1.0, 60.0) < 0);                      // an unknown kind
}

TEST_CASE(
    "agent-aware's value order: reuse probability x reload cost per byte-second, not the "
    "longest expected idle time") {
  // 8 blocks. History (one sample per stage is enough: history_min_samples 1), one session at a
  // time or paused side by side, 7 blocks at most: h1 (0 s) a 2 s tool of kind "a"; h2 (3 s)
  // and h3 (3.5 s) 90 s tools of kind "b"; h4 (4 s) a 200 s tool of kind "a". All ended by
  // 205 s: stage a = {2, 200}, stage b = {90, 90}.
  // A (300 s, kind a) pauses at 300.018 s, B (300.05 s, kind b) at 300.068 s, 2 blocks each.
  // C (301 s, 20 tokens) needs 5 blocks with 4 free: one of them goes. At 301 s A has waited
  // 0.982 s, B 0.932 s.
  // - Expected idle: A: mean(2, 200) - 0.982 = 100.018 s; B: 90 - 0.932 = 89.068 s. The
  //   issue-15 order (value: retention) evicts the longer: A.
  // - Value, H = 60 s: P_A = P(D <= 60.982 | D > 0.982) over {2, 200} = 1/2; P_B over {90, 90}
  //   = 0. Same size (8 tokens, one reload price per byte): value_A = 0.5 x c / 100.018 > 0 =
  //   value_B. The reuse-cost order evicts B.
  auto kinded = [](std::string id, double at, const char* kind, double dur) {
    return trace::Session{std::move(id), at, {seg(8, 1, kind, dur), seg(1, 1)}};
  };
  const trace::Trace t = {kinded("h1", 0.0, "a", 2.0),
                          kinded("h2", 3.0, "b", 90.0),
                          kinded("h3", 3.5, "b", 90.0),
                          kinded("h4", 4.0, "a", 200.0),
                          kinded("A", 300.0, "a", 10.0),
                          kinded("B", 300.05, "b", 10.0),
                          trace::Session{"C", 301.0, {seg(20, 1)}}};
  const std::map<std::string, std::string> base = {{"history_min_samples", "1"},
                                                   {"prefetch", "false"}};
  auto with = [&](const char* value) {
    auto p = base;
    p["value"] = value;
    return p;
  };
  const auto old_order = i35_kv::run_on("agent-aware", t, 8, with("retention"));
  const auto new_order = i35_kv::run_on("agent-aware", t, 8, with("reuse-cost"));
  CHECK(std::string(i35_kv::evicted(old_order)) == "A");
  CHECK(std::string(i35_kv::evicted(new_order)) == "B");
  CHECK(new_order.summary.counters.idle_evictions == 1);
  CHECK(rec(new_order, "h1").recomputed_tokens == 0);  // history ran without evictions
  CHECK(rec(new_order, "h4").recomputed_tokens == 0);
}
