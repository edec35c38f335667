// traces/generators/peer-512-128.yaml: the peers' shared workload of scripts/bench --peer
// (experiments/specs/bench-peer.yaml) must be exactly 512 prompt and 128 output tokens a request,
// single-turn, whatever the seed.
#include <doctest/doctest.h>

#include <cstdint>

#include "tests/test_paths.h"
#include "traces/generator.h"

using namespace isim::trace;

TEST_CASE("generator: peer-512-128.yaml gives single-turn 512 in / 128 out requests") {
  const GeneratorConfig c =
      load_generator_config(isim::test::source_dir() + "/traces/generators/peer-512-128.yaml");
  REQUIRE(c.mix.size() == 1);
  // 1,000 requests under two seeds: every sd is 0, so every draw is its mean (calls 0: the
  // session stops after segment 0; prompt 512; output 128), and 512 + 128 = 640 tokens stay
  // under max_context 2048, so nothing is cut.
  for (const uint64_t seed : {7u, 8u}) {
    const Trace t = generate(c, 1000, seed);
    REQUIRE(t.size() == 1000);
    for (const Session& s : t) {
      REQUIRE(s.segments.size() == 1);
      CHECK(s.segments[0].input == 512);
      CHECK(s.segments[0].output == 128);
      CHECK_FALSE(s.segments[0].intercept.has_value());
      CHECK(s.arrival_s == 0.0);  // the experiment's Poisson process sets the arrivals
    }
  }
}
