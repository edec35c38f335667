// The vllm-v1 scheduler on runs small enough to compute by hand, and the engine's step
// overhead. Profile (tests/sim_fixtures.h): T(x) = 10 ms + 1 ms per batched token; 4-token
// blocks. Policy discard (no intercepts here, so it only serves).
#include <doctest/doctest.h>

#include "tests/sim_fixtures.h"

using namespace isim;
using isim::test::rec;
using isim::test::seg;

namespace {

sim::EngineConfig v1_engine(int64_t gpu_blocks, int64_t budget) {
  sim::EngineConfig c;
  c.scheduler = "vllm-v1";
  c.gpu_blocks = gpu_blocks;
  c.cpu_blocks = 0;
  c.max_num_batched_tokens = budget;
  return c;
}

std::vector<sim::IterationRecord> iterations(const trace::Trace& t, sim::EngineConfig cfg,
                                             cluster::RunResult* out,
                                             const sim::Profile& p = test::round_profile()) {
  cfg.check_invariants = true;
  sim::SimExecutor ex(p);
  auto pol = policy::policy_registry().create("discard", "test", policy::PolicyParams{});
  std::vector<sim::IterationRecord> its;
  *out =
      cluster::simulate(t, cfg, ex, *pol, [&](const sim::IterationRecord& r) { its.push_back(r); });
  return its;
}

}  // namespace

TEST_CASE("vllm-v1: the token budget goes to running requests in admission order") {
  // Budget 5, long_prefill_token_threshold 3, one partial prefill at a time. b (prompt 12,
  // 2 outputs) is admitted before a (prompt 3, 4 outputs); both arrive at 0.
  //   [0,13)  b 3 (partial); a would only get 2 of 3: a second partial prefill, refused
  //   [13,26) b 3; a refused again      [26,39) b 3; a refused again
  //   [39,54) b 3 (its last) + a 2 (partial)           -> b token 1
  //   [54,66) b decode + a 1 (its last)                -> b token 2 (done), a token 1
  //   [66,77) [77,88) [88,99) a decodes                -> a done at 99
  trace::Trace t = {trace::Session{"b", 0.0, {seg(12, 2)}}, trace::Session{"a", 0.0, {seg(3, 4)}}};
  sim::EngineConfig c = v1_engine(100, 5);
  c.long_prefill_token_threshold = 3;
  c.max_num_partial_prefills = 1;
  cluster::RunResult r;
  const auto its = iterations(t, c, &r);
  REQUIRE(its.size() == 8);
  const int64_t tokens[] = {3, 3, 3, 5, 2, 1, 1, 1};
  for (size_t i = 0; i < its.size(); ++i) CHECK(its[i].batch_tokens == tokens[i]);
  CHECK(rec(r, "b").finish_s == doctest::Approx(0.066).epsilon(1e-12));
  CHECK(rec(r, "a").ttft_s == doctest::Approx(0.066).epsilon(1e-12));
  CHECK(rec(r, "a").finish_s == doctest::Approx(0.099).epsilon(1e-12));

  SUBCASE("two partial prefills allowed: a starts at once") {
    // [0,15) b 3 + a 2   [15,29) b 3 + a 1 -> a token 1   [29,43) b 3 + a decode -> a token 2
    c.max_num_partial_prefills = 2;
    c.max_long_partial_prefills = 1;
    const auto its2 = iterations(t, c, &r);
    REQUIRE(its2.size() >= 3);
    CHECK(its2[0].batch_tokens == 5);
    CHECK(its2[1].batch_tokens == 4);
    CHECK(rec(r, "a").ttft_s == doctest::Approx(0.029).epsilon(1e-12));
  }
}

namespace {

// 4 GPU blocks of 4 tokens. a and b (prompt 4, 6 outputs) arrive at 0; c (prompt 8, 1 output)
// at 31 ms.
//   [0,18)  a, b prefill 4 each (1 block each)              -> token 1 (context 5, kv 4)
//   [18,30) a, b decode, a second block each (none left)     -> token 2
//   [30,42) [42,54) [54,66) decodes; c waits (needs 2 blocks) -> token 5 (kv 8: 2 full blocks)
//   at 66 a needs a third block: b, the last admitted, is preempted (its 2 hashed blocks go
//   to the free queue, tail first) and a takes b's tail block. Nothing is admitted in this
//   step, though c could now fit 1 of its 2 blocks.
//   [66,77) a decodes                                        -> a token 6, done; frees 3
//   [77,92) b is readmitted first: a prefix hit on its own head block (4 tokens), recomputes
//           4 and prefills its last output (chunk 5)         -> b token 6, done
//           c needs 2 blocks, 1 is left: it waits
//   [92,110) c prefills 8                                    -> c done
trace::Trace preemption_trace() {
  return {trace::Session{"a", 0.0, {seg(4, 6)}}, trace::Session{"b", 0.0, {seg(4, 6)}},
          trace::Session{"c", 0.031, {seg(8, 1)}}};
}

}  // namespace

TEST_CASE("vllm-v1: a step that preempts admits nothing") {
  // 4 blocks, budget 5, no prefix caching, no full-prompt reservation; a and b: prompt 4,
  // 6 outputs, at 0.
  //   [0,15)  a 4 + b 1   [15,29) a decode + b 3 -> b token 1   then both decode:
  //   [29,41) [41,53) [53,65)                    -> a token 5 (kv 8), b token 4 (kv 7)
  //   at 65 a needs a third block: b is preempted (2 blocks freed), a takes one. b, now at the
  //   front of waiting, could start a 4-token chunk in the free block, but the step preempted.
  //   [65,76) a decodes alone -> done    [76,91) b 5    [91,104) b 3 -> token 5
  //   [104,115) b decodes -> done
  trace::Trace t = {trace::Session{"a", 0.0, {seg(4, 6)}}, trace::Session{"b", 0.0, {seg(4, 6)}}};
  sim::EngineConfig c = v1_engine(4, 5);
  c.prefix_caching = false;
  c.reserve_full_isl = false;
  cluster::RunResult r;
  const auto its = iterations(t, c, &r);
  REQUIRE(its.size() == 9);
  CHECK(its[5].start == sim::from_ms(65));
  CHECK(its[5].batch_tokens == 1);  // a's decode only: b was not readmitted in that step
  CHECK(its[6].batch_tokens == 5);
  CHECK(r.summary.counters.preemptions == 1);
  CHECK(rec(r, "a").finish_s == doctest::Approx(0.076).epsilon(1e-12));
  CHECK(rec(r, "b").finish_s == doctest::Approx(0.115).epsilon(1e-12));
  CHECK(rec(r, "b").recomputed_tokens == 7);
}

TEST_CASE("vllm-v1: a preempted request is readmitted first, with hits on its own blocks") {
  cluster::RunResult r;
  const auto its = iterations(preemption_trace(), v1_engine(4, 16), &r);
  REQUIRE(its.size() == 8);
  CHECK(its[6].batch_tokens == 5);  // b alone: 4 recomputed + its last output
  CHECK(rec(r, "b").finish_s == doctest::Approx(0.092).epsilon(1e-12));
  CHECK(rec(r, "b").recomputed_tokens == 4);  // 8 dropped, 4 found cached
  CHECK(rec(r, "c").finish_s == doctest::Approx(0.110).epsilon(1e-12));
  CHECK(rec(r, "c").ttft_s == doctest::Approx(0.079).epsilon(1e-12));
}

TEST_CASE("vllm-v1: the watermark keeps blocks free from new admissions") {
  // 10 blocks; a (prompt 4, 2 outputs) and b (prompt 29: 8 blocks, 1 output) arrive at 0.
  trace::Trace t = {trace::Session{"a", 0.0, {seg(4, 2)}}, trace::Session{"b", 0.0, {seg(29, 1)}}};
  sim::EngineConfig c = v1_engine(10, 64);
  cluster::RunResult r;
  SUBCASE("no watermark: both start at once") {
    // [0,43) a 4 + b 29 -> b done, a token 1   [43,54) a decodes -> done
    iterations(t, c, &r);
    CHECK(rec(r, "b").finish_s == doctest::Approx(0.043).epsilon(1e-12));
    CHECK(rec(r, "a").finish_s == doctest::Approx(0.054).epsilon(1e-12));
  }
  SUBCASE("watermark 0.2 (2 blocks): b waits until the engine is empty") {
    // [0,14) a 4 (the first admission into an empty engine is spared the watermark); b needs
    // 8 + 2 > 9 free   [14,25) a decodes (2nd block), done; b needs 8 + 2 > 8
    // [25,64) b 29 alone (running empty: no watermark) -> done
    c.watermark = 0.2;
    iterations(t, c, &r);
    CHECK(rec(r, "a").finish_s == doctest::Approx(0.025).epsilon(1e-12));
    CHECK(rec(r, "b").finish_s == doctest::Approx(0.064).epsilon(1e-12));
  }
}

TEST_CASE("step overhead is added to the forward pass, or hidden by async scheduling") {
  // Overhead 2 ms + 1 ms per sequence. One session, prompt 4, 2 outputs:
  // sync:  [0,17) prefill 14 + 3   [17,31) decode 11 + 3
  // async: [0,14) max(14, 3)        [14,25) max(11, 3)
  sim::Profile p = test::round_profile();
  p.step_overhead = {2000, 1000, 0};
  trace::Trace t = {trace::Session{"a", 0.0, {seg(4, 2)}}};
  sim::EngineConfig c = v1_engine(10, 64);
  cluster::RunResult r;
  iterations(t, c, &r, p);
  CHECK(rec(r, "a").finish_s == doctest::Approx(0.031).epsilon(1e-12));
  c.async_scheduling = true;
  iterations(t, c, &r, p);
  CHECK(rec(r, "a").finish_s == doctest::Approx(0.025).epsilon(1e-12));
  p.step_overhead = {20000, 0, 0};  // 20 ms: longer than any forward here
  iterations(t, c, &r, p);
  CHECK(rec(r, "a").finish_s == doctest::Approx(0.040).epsilon(1e-12));
}
