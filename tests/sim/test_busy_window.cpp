// The busy window (sim/metrics.h): the union of the intervals in which a replica runs
// iterations, and the throughput over it. Every expected value is worked out by hand.
#include <doctest/doctest.h>

#include "sim/metrics.h"
#include "tests/sim_fixtures.h"

using namespace isim;
using isim::test::rec;
using isim::test::seg;

namespace {
sim::Span ms(double a, double b) {
  return {sim::from_seconds(a / 1e3), sim::from_seconds(b / 1e3)};
}
}  // namespace

TEST_CASE("union_seconds counts overlaps once, in any order") {
  CHECK(sim::union_seconds({}) == 0);
  CHECK(sim::union_seconds({ms(0, 10)}) == doctest::Approx(0.010));
  // [0,10) + [5,20) overlap: [0,20) = 20 ms; [30,40) apart: + 10 ms; [32,35) inside it: + 0.
  CHECK(sim::union_seconds({ms(30, 40), ms(5, 20), ms(32, 35), ms(0, 10)}) ==
        doctest::Approx(0.030));
  // Touching spans join; an empty or reversed span adds nothing.
  CHECK(sim::union_seconds({ms(0, 10), ms(10, 15), ms(50, 50), ms(60, 55)}) ==
        doctest::Approx(0.015));
}

TEST_CASE("throughput is over the busy window: a long paused tail does not dilute it") {
  // Round profile (T = 10 ms + 1 ms per batched token), preserve, one replica.
  // a: arrives at 0, prefills 8 tokens (18 ms), decodes one more (11 ms), pauses at 29 ms for
  //    1 s holding its KV; resumes at 1.029 s and prefills 5 tokens (15 ms): finishes 1.044 s.
  // b: arrives at 0.5 s during a's pause: 18 + 11 ms, done at 0.529 s.
  // Busy: [0, 29 ms) + [500, 529 ms) + [1029, 1044 ms) = 73 ms; makespan 1.044 s.
  trace::Trace t = {trace::Session{"a", 0.0, {seg(8, 2, "tool", 1.0), seg(4, 1)}},
                    trace::Session{"b", 0.5, {seg(8, 2)}}};
  sim::EngineConfig cfg;
  cfg.gpu_blocks = 100;
  cfg.cpu_blocks = 0;
  const auto r = test::run(t, "preserve", cfg);
  REQUIRE(rec(r, "a").finish_s == doctest::Approx(1.044));
  REQUIRE(rec(r, "b").finish_s == doctest::Approx(0.529));
  CHECK(r.summary.makespan_s == doctest::Approx(1.044));
  CHECK(r.summary.busy_window_s == doctest::Approx(0.073));
  CHECK(r.summary.throughput_sessions_s == doctest::Approx(2 / 0.073));
  CHECK(r.summary.throughput_tokens_s == doctest::Approx(5 / 0.073));  // a: 2 + 1, b: 2
}

TEST_CASE("summarize: no busy window, no throughput") {
  sim::SessionRecord s;
  s.status = "finished";
  s.finish_s = 1;
  s.e2e_s = 1;
  s.output_tokens = 4;
  const auto sum = sim::summarize({s}, {}, {}, 0, 0, 0, 0.0);
  CHECK(sum.busy_window_s == 0);
  CHECK(sum.throughput_sessions_s == 0);
  const auto sum2 = sim::summarize({s}, {}, {}, 0, 0, 0, 0.5);
  CHECK(sum2.throughput_sessions_s == doctest::Approx(2.0));
  CHECK(sum2.throughput_tokens_s == doctest::Approx(8.0));
}
