// Per-turn metrics of a whole run (sim/turn_metrics.h): every turn's TTFT from its start, the
// longest inter-token gap of each turn, and per-request latency, on a single replica of the
// round profile (tests/sim_fixtures.h: T(x) = 10 ms + 1 ms per batched token), vllm-v0
// (a waiting prefill runs alone, before the decodes), preserve. Expected values by hand.
#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

#include "tests/sim_fixtures.h"

using namespace isim;
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
