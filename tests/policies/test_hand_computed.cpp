// Whole runs small enough to compute by hand, one per policy, with exact expected times.
// Profile (tests/sim_fixtures.h): T(x) = 10 ms + 1 ms per batched token; 4-token blocks;
// swapping one block takes 4 ms each way. Scheduler vllm-v0 unless stated.
#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

#include "tests/sim_fixtures.h"

using namespace isim;
using isim::test::rec;
using isim::test::seg;

namespace {

// One session: prompt 8, 3 outputs, a long (0.5 s) intercept, 4 returned tokens, 2 outputs.
// Common prefix for every policy:
//   [0,18)  prefill 8            -> token 1 (context 9, kv 8)
//   [18,29) decode               -> token 2
//   [29,40) decode               -> token 3, last of segment 0: pause at 40 ms (kv 10, context 11)
//   intercept ends at 540 ms; context becomes 15.
trace::Trace one_session() {
  return {trace::Session{"a", 0.0, {seg(8, 3, "qa", 0.5), seg(4, 2)}}};
}

sim::EngineConfig small_engine(int64_t gpu_blocks = 10, int64_t cpu_blocks = 100) {
  sim::EngineConfig c;
  c.gpu_blocks = gpu_blocks;
  c.cpu_blocks = cpu_blocks;
  c.max_num_batched_tokens = 64;
  return c;
}

}  // namespace

TEST_CASE("discard: the whole context is recomputed after a long intercept") {
  // Resume at 540: prefill all 15 tokens (10 recomputed + 1 last output + 4 returned):
  // [540,565) -> token 1; [565,576) -> token 2: finish at 576 ms.
  auto r = test::run(one_session(), "discard", small_engine());
  const auto& a = rec(r, "a");
  CHECK(a.status == "finished");
  CHECK(a.ttft_s == doctest::Approx(0.018).epsilon(1e-12));
  CHECK(a.finish_s == doctest::Approx(0.576).epsilon(1e-12));
  CHECK(a.resume_ttft_s == doctest::Approx(0.025).epsilon(1e-12));
  CHECK(a.recomputed_tokens == 10);
  CHECK(a.intercept_s == doctest::Approx(0.5));
  // (576 - 500) ms / (5 decoded + 4 returned)
  CHECK(a.normalized_latency_s == doctest::Approx(0.076 / 9).epsilon(1e-12));
  // Decode gaps: 11, 11 in segment 0 and 11 in segment 1.
  CHECK(a.tpot_s == doctest::Approx(0.011).epsilon(1e-12));
  CHECK(r.summary.counters.iterations == 5);
  CHECK(r.summary.counters.discards == 1);
}

TEST_CASE("preserve: only the returned tokens (and the last output) are prefilled") {
  // Resume at 540: kv 10 kept; prefill 5 -> [540,555) token 1; [555,566) token 2.
  auto r = test::run(one_session(), "preserve", small_engine());
  const auto& a = rec(r, "a");
  CHECK(a.finish_s == doctest::Approx(0.566).epsilon(1e-12));
  CHECK(a.resume_ttft_s == doctest::Approx(0.015).epsilon(1e-12));
  CHECK(a.recomputed_tokens == 0);
  CHECK(a.normalized_latency_s == doctest::Approx(0.066 / 9).epsilon(1e-12));

  // GPU block-seconds on 10 blocks over [0, 566 ms):
  //   active: 2 blocks x 18 ms + 3 x 22 ms + 4 x 26 ms = 0.206
  //   preserved: 3 blocks x 500 ms = 1.5; free: the rest of 10 x 0.566.
  const auto& w = r.summary.waste;
  CHECK(w.active == doctest::Approx(0.206).epsilon(1e-9));
  CHECK(w.preserved == doctest::Approx(1.5).epsilon(1e-9));
  CHECK(w.recompute == doctest::Approx(0.0));
  CHECK(w.swap_stall == doctest::Approx(0.0));
  CHECK(w.free == doctest::Approx(3.954).epsilon(1e-9));
  CHECK(w.total() == doctest::Approx(5.66).epsilon(1e-9));
}

TEST_CASE("swap: synchronous copies stall the engine for the PCIe time") {
  // Pause at 40 ms with 10 KV tokens = 3 blocks = 12 KB: swap-out stalls [40,52).
  // Resume at 540: swap-in stalls [540,552); then prefill 5 [552,567), decode [567,578).
  auto r = test::run(one_session(), "swap", small_engine());
  const auto& a = rec(r, "a");
  CHECK(a.finish_s == doctest::Approx(0.578).epsilon(1e-12));
  CHECK(a.resume_ttft_s == doctest::Approx(0.027).epsilon(1e-12));
  CHECK(a.swapped_out_bytes == 12000);
  CHECK(a.swapped_in_bytes == 12000);
  CHECK(a.recomputed_tokens == 0);
  CHECK(r.summary.counters.stall_time == 24'000'000);
  // The stall holds 3 blocks idle for 12 ms on the way in (the way out frees them first).
  CHECK(r.summary.waste.swap_stall == doctest::Approx(3 * 0.012).epsilon(1e-9));

  SUBCASE("chunked scheduler swaps in and prefills in the same iteration") {
    auto c = small_engine();
    c.scheduler = "chunked";
    c.check_invariants = true;
    sim::SimExecutor ex(test::round_profile());
    auto pol = policy::policy_registry().create("swap", "test", policy::PolicyParams{});
    std::vector<sim::IterationRecord> its;
    auto rc = cluster::simulate(one_session(), c, ex, *pol,
                                [&](const sim::IterationRecord& i) { its.push_back(i); });
    // The finish time alone cannot tell one iteration from two: a swap-in-only iteration
    // [540,552) then the prefill [552,567) ends at 578 ms too. The records can: one iteration
    // at 540 ms stalls 12 ms for the 3-block swap-in and prefills the 5 tokens (15 ms) in its
    // forward: 27 ms. Then the decode [567,578).
    CHECK(rec(rc, "a").finish_s == doctest::Approx(0.578).epsilon(1e-12));
    const auto at = std::find_if(its.begin(), its.end(),
                                 [](const sim::IterationRecord& i) { return i.start == 540'000'000; });
    REQUIRE(at != its.end());
    CHECK(at->stall == 12'000'000);
    CHECK(at->forward == 15'000'000);
    CHECK(at->duration == 27'000'000);
    CHECK(at->batch_tokens == 5);
    CHECK(at->prefills == 1);
    REQUIRE(at + 1 != its.end());
    CHECK((at + 1)->start == 567'000'000);
    CHECK((at + 1)->decodes == 1);
  }
  SUBCASE("a full CPU pool falls back to discard and counts it") {
    auto rf = test::run(one_session(), "swap", small_engine(10, 2));
    CHECK(rf.summary.counters.swap_fallback_discards == 1);
    CHECK(rec(rf, "a").finish_s == doctest::Approx(0.576).epsilon(1e-12));
    CHECK(rec(rf, "a").recomputed_tokens == 10);
  }
}

namespace {
// Three sessions under a 16-token budget, so two prefills never share an iteration:
//   a: arrives 0, prompt 8, 2 outputs, a short 20 ms intercept, 4 returned, 1 output.
//   b: arrives 35 ms, prompt 12, 1 output.   c: arrives 40 ms, prompt 12, 1 output.
//   [0,18) a prefill; [18,29) a decode -> pause at 29, resume at 49 (context 14, all discarded)
//   [35,57) b prefill -> b done at 57. At 57 both a (14 tokens) and c (12) wait.
trace::Trace three_sessions() {
  return {trace::Session{"a", 0.0, {seg(8, 2, "math", 0.020), seg(4, 1)}},
          trace::Session{"b", 0.035, {seg(12, 1)}}, trace::Session{"c", 0.040, {seg(12, 1)}}};
}
}  // namespace

TEST_CASE("discard vs improved-discard: where the resumed session queues") {
  auto cfg = small_engine();
  cfg.max_num_batched_tokens = 16;
  SUBCASE("discard sends a to the back: c [57,79), then a [79,103)") {
    auto r = test::run(three_sessions(), "discard", cfg);
    CHECK(rec(r, "b").finish_s == doctest::Approx(0.057).epsilon(1e-12));
    CHECK(rec(r, "c").finish_s == doctest::Approx(0.079).epsilon(1e-12));
    CHECK(rec(r, "a").finish_s == doctest::Approx(0.103).epsilon(1e-12));
    CHECK(rec(r, "a").recomputed_tokens == 9);
  }
  SUBCASE("improved-discard keeps a's arrival order: a [57,81), then c [81,103)") {
    auto r = test::run(three_sessions(), "improved-discard", cfg);
    CHECK(rec(r, "a").finish_s == doctest::Approx(0.081).epsilon(1e-12));
    CHECK(rec(r, "c").finish_s == doctest::Approx(0.103).epsilon(1e-12));
    CHECK(rec(r, "c").ttft_s == doctest::Approx(0.063).epsilon(1e-12));
  }
}

TEST_CASE("preemption by recompute when GPU blocks run out while decoding") {
  // 4 blocks of 4 tokens. a and b arrive at 0, prompts 7, 6 outputs each.
  //   [0,24)  both prefill (2 blocks each)            -> token 1, kv 7
  //   [24,36) both decode (kv 8 fits in 2 blocks)     -> token 2
  //   at 36 a needs a third block: b (latest arrival) is preempted, its 8 KV tokens dropped
  //   [36,47) [47,58) [58,69) [69,80) a decodes alone -> a done at 80
  //   [80,99) b prefills 9 tokens (8 recomputed + its last output) -> token 3
  //   [99,110) [110,121) [121,132) b decodes         -> b done at 132
  trace::Trace t = {trace::Session{"a", 0.0, {seg(7, 6)}}, trace::Session{"b", 0.0, {seg(7, 6)}}};
  auto r = test::run(t, "preserve", small_engine(4));
  CHECK(r.summary.counters.preemptions == 1);
  CHECK(rec(r, "b").preemptions == 1);
  CHECK(rec(r, "a").finish_s == doctest::Approx(0.080).epsilon(1e-12));
  CHECK(rec(r, "b").finish_s == doctest::Approx(0.132).epsilon(1e-12));
  CHECK(rec(r, "b").recomputed_tokens == 8);
  CHECK(rec(r, "b").tpot_s == doctest::Approx(0.108 / 5).epsilon(1e-12));
  CHECK(r.summary.counters.recomputed_tokens == 8);
  // The recompute iteration holds b's 3 blocks as recompute and a's none (a finished at 80).
  CHECK(r.summary.waste.recompute == doctest::Approx(3 * 0.019).epsilon(1e-9));
}

TEST_CASE("a session preempted mid-segment rebuilds its context before it decodes again") {
  // Chunked scheduler, 3 blocks of 4 tokens, at most 4 batched tokens. a: prompt 4, 4 outputs;
  // b: prompt 4, 2 outputs; both arrive at 0.
  //   [0,14)  a prefills 4                                   -> a token 1
  //   [14,28) a decodes (2nd block); b prefills 3 (3rd block) -> a token 2
  //   [28,40) a decodes; b prefills its last prompt token    -> a token 3, b token 1 (ctx 5)
  //   at 40 b needs a 2nd block for its decode: none free, b preempts itself (kv 4 dropped);
  //   [40,54) a decodes; b rebuilds 3 of its 5 tokens          -> a token 4: a done at 54
  //   [54,66) b rebuilds its last 2 tokens (no decode step before that) -> b token 2, done
  // (Before the fix, b was given a decode step at 54 with 3 of its 5 tokens in KV.)
  trace::Trace t = {trace::Session{"a", 0.0, {seg(4, 4)}}, trace::Session{"b", 0.0, {seg(4, 2)}}};
  sim::EngineConfig c = small_engine(3);
  c.scheduler = "chunked";
  c.max_num_batched_tokens = 4;
  c.check_invariants = true;
  std::vector<int64_t> tokens;
  std::vector<int32_t> decodes;
  sim::SimExecutor ex(test::round_profile());
  auto pol = policy::policy_registry().create("preserve", "test", policy::PolicyParams{});
  auto r = cluster::simulate(t, c, ex, *pol, [&](const sim::IterationRecord& it) {
    tokens.push_back(it.batch_tokens);
    decodes.push_back(it.decodes);
  });
  CHECK(tokens == std::vector<int64_t>{4, 4, 2, 4, 2});
  CHECK(decodes == std::vector<int32_t>{0, 1, 1, 1, 0});
  CHECK(rec(r, "b").preemptions == 1);
  CHECK(rec(r, "a").finish_s == doctest::Approx(0.054).epsilon(1e-12));
  CHECK(rec(r, "b").finish_s == doctest::Approx(0.066).epsilon(1e-12));
  CHECK(rec(r, "b").recomputed_tokens == 4);
}

TEST_CASE("a session that can never fit is skipped and reported, not looped on") {
  trace::Trace t = {trace::Session{"big", 0.0, {seg(30, 2)}},
                    trace::Session{"ok", 0.0, {seg(4, 1)}}};
  auto r = test::run(t, "preserve", small_engine(4));  // 16 tokens of GPU KV
  REQUIRE(r.skipped.size() == 1);
  CHECK(r.skipped[0].find("session big skipped") != std::string::npos);
  CHECK(rec(r, "big").status == "skipped");
  CHECK(rec(r, "ok").status == "finished");
  CHECK(rec(r, "ok").finish_s == doctest::Approx(0.014).epsilon(1e-12));
  CHECK(r.summary.skipped == 1);
}

TEST_CASE("idle KV held by preserved sessions is evicted rather than deadlocking") {
  // 4 blocks. a pauses holding 3 blocks (kv 10) for 1 s; b arrives needing 3 blocks for its
  // 9-token prompt. Nothing runs, so a's KV is dropped (an idle eviction) and b proceeds.
  trace::Trace t = {trace::Session{"a", 0.0, {seg(8, 3, "chat", 1.0), seg(1, 1)}},
                    trace::Session{"b", 0.1, {seg(9, 1)}}};
  auto r = test::run(t, "preserve", small_engine(4));
  CHECK(r.summary.counters.idle_evictions == 1);
  CHECK(rec(r, "b").finish_s == doctest::Approx(0.119).epsilon(1e-12));
  CHECK(rec(r, "a").status == "finished");
  CHECK(rec(r, "a").recomputed_tokens == 10);
}
