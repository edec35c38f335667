// Profiles and simulated time against hostile numbers (issue 17): a one-byte profile that hung
// yaml-cpp, sizes whose products overflow int64, times that wrap int64 nanoseconds.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <stdexcept>

#include "core/strict_yaml.h"
#include "sim/engine_config.h"
#include "sim/time.h"
#include "tests/input_error_text.h"
#include "tests/sim/profile_text.h"
#include "tests/sim_fixtures.h"

using namespace isim::test::profile_text;  // NOLINT(google-build-using-namespace)

TEST_CASE("profile: text yaml-cpp's LoadAll never returned on is an error, not a hang") {
  // Each of these made YAML::LoadAll spin, allocating without bound; now they are read as one
  // null document, which is not the map a profile is.
  const std::string not_map =
      "(document): expected a map with keys schema, provenance, device, model, kv, "
      "saturation_tokens, forward, swap, step_overhead, memory, validation, got nothing (null)";
  CHECK(error_of(",") == "t.yaml:1: " + not_map);
  CHECK(error_of(",,\n") == "t.yaml:1: " + not_map);
  // Still one document or an error: two documents, none.
  const std::string t = linear_text();
  CHECK(error_of(t + "---\nschema: isim-profile/1\n") ==
        "t.yaml: expected one YAML document, found 2");
  CHECK(error_of(t + "--- ,\n").starts_with("t.yaml: expected one YAML document, found "));
  CHECK(error_of("") == "t.yaml: expected one YAML document, found 0");
  CHECK(isim::count_yaml_documents("a: 1\n---\n---\nb: 1\n") == 3);
}

TEST_CASE("profile: sizes whose products overflow are rejected where they are read") {
  const std::string t = linear_text();
  // 2 x 10^6 x 10^6 x 10^6 x 2 bytes overflowed int64 kv_bytes_per_token (profile show printed
  // a wrapped size). heads 10^6 too, so that the KV heads do not outnumber them.
  const std::string huge = edit(edit(edit(edit(t, "  layers: 2\n", "  layers: 1000000\n"),
                                          "  kv_heads: 2\n", "  kv_heads: 1000000\n"),
                                     "  head_dim: 16\n", "  head_dim: 1000000\n"),
                                "  heads: 4\n", "  heads: 1000000\n");
  CHECK(error_of(huge) ==
        at(huge, "model:") +
            "model: KV bytes per token 2 x layers 1000000 x kv_heads 1000000 x head_dim 1000000 x "
            "2 bytes / tp 1 = 4e+18, times kv.block_tokens 4 = 1.6e+19 bytes a block; expected "
            "at most 2147483648 (2 GiB)");
  // 2 x 2 x 2 x 16 x 2 = 256 bytes a token; 2^23 tokens a block is 2^31 bytes: the limit.
  CHECK(error_of(edit(t, "  block_tokens: 4\n", "  block_tokens: 8388608\n")) == "(no error)");
  CHECK(error_of(edit(t, "  block_tokens: 4\n", "  block_tokens: 8388609\n"))
            .find("= 2.14748e+09 bytes a block; expected at most 2147483648") != std::string::npos);
  // memory_gib 1e300 overflowed the float-to-int cast of the GPU block count.
  const std::string big_memory = edit(t, "  memory_gib: 2\n", "  memory_gib: 1e300\n");
  CHECK(error_of(big_memory) == at(big_memory, "memory_gib") +
                                    "device.memory_gib: must be at most 1048576 GiB (a PiB), got "
                                    "1e+300");
}

TEST_CASE("profile: forward times past an hour are rejected (T(1) went negative)") {
  const std::string t = linear_text();
  const std::string slope = edit(t, "slope_ms_per_token: 0.5", "slope_ms_per_token: 1e300");
  CHECK(error_of(slope) == at(slope, "slope_ms_per_token") +
                               "forward.linear.slope_ms_per_token: must be at most 3600000 ms (an "
                               "hour), got 1e+300");
  CHECK(error_of(edit(t, "slope_ms_per_token: 0.5", "slope_ms_per_token: 3600000")) ==
        "(no error)");
}

TEST_CASE("profile: saturation_tokens the cost model cannot price in an hour is rejected") {
  // saturation_tokens 2^63 - 1 loaded, and `isim profile show` (T(saturation)) and the engine
  // then threw std::range_error from sim time (found by tests/fuzz).
  const std::string t = linear_text();
  const std::string big = edit(t, "saturation_tokens: 8", "saturation_tokens: 9223372036854775807");
  CHECK(error_of(big) == at(big, "saturation_tokens") +
                             "saturation_tokens: must be at most 1000000000 (the limit on a token "
                             "count), got 9223372036854775807");
  // The slope at its limit, an hour a token: 2 x 10^6 tokens take 7.2e9 s, past the 4e9 s limit
  // on a time (traces/limits.h); 2 x 5e5 tokens take 3.6e9 s.
  const std::string hour = edit(t, "slope_ms_per_token: 0.5", "slope_ms_per_token: 3600000");
  const std::string slow = edit(hour, "saturation_tokens: 8", "saturation_tokens: 1000000");
  CHECK(error_of(slow) == at(slow, "saturation_tokens") +
                              "saturation_tokens: the forward pass of 2 x saturation_tokens = "
                              "2000000 tokens takes 7.2e+09 s, more than 4000000000 s (about 126 "
                              "years, the limit on a time); expected a saturation point the "
                              "forward model prices within it");
  CHECK(error_of(edit(hour, "saturation_tokens: 8", "saturation_tokens: 500000")) == "(no error)");
  // Past int64 nanoseconds altogether (T threw std::range_error): 2 x 10^9 tokens.
  const std::string wrap = edit(hour, "saturation_tokens: 8", "saturation_tokens: 1000000000");
  CHECK(error_of(wrap).find("takes more than int64 nanoseconds hold, more than 4000000000 s") !=
        std::string::npos);
}

TEST_CASE("profile: text that is not UTF-8 is refused, as by every YAML reader") {
  const std::string bad = edit(linear_text(), "hand-made linear", "hand\xffmade linear");
  CHECK(error_of(bad) == at(bad, "description") +
                             "<yaml>: invalid UTF-8 at column 20 (byte 0xFF); expected UTF-8 text");
}

TEST_CASE("time: conversions to int64 nanoseconds are checked") {
  using namespace isim::sim;  // NOLINT(google-build-using-namespace)
  CHECK(from_seconds(1.5) == 1'500'000'000);
  CHECK(from_ms(-2.25) == -2'250'000);
  CHECK(from_us(0.4) == 400);
  CHECK(from_seconds(9.1e9) == 9'100'000'000'000'000'000);
  // 1e300 s rounded to int64 used to wrap, and the event was "scheduled in the past".
  CHECK_THROWS_AS((void)from_seconds(1e300), std::range_error);
  CHECK_THROWS_AS((void)from_seconds(-9.3e9), std::range_error);
  CHECK_THROWS_AS((void)from_ms(std::nan("")), std::range_error);
  CHECK_THROWS_AS((void)from_us(std::numeric_limits<double>::infinity()), std::range_error);
}

TEST_CASE("KV capacity: block counts a pool cannot hold are input errors, not a wrapped cast") {
  isim::sim::Profile p = isim::test::round_profile();  // 1000 B a token, 4-token blocks
  isim::sim::EngineConfig c;
  c.gpu_memory_utilization = 1;
  c.activation_reserve_gib = 0;
  p.device.memory_gib = 16384;  // 2^44 B / 4000 B = 4.4e9 blocks > 2^28 (sim/pool_limits.h)
  CHECK(isim::test::error_of_call([&] { (void)isim::sim::derive_block_counts(p, c); })
            .find("blocks of 4000 B, more than a pool holds (at most 268435456)") !=
        std::string::npos);
  p.device.memory_gib = 1;
  c.swap_space_gib = std::numeric_limits<double>::infinity();
  CHECK(isim::test::error_of_call([&] { (void)isim::sim::derive_block_counts(p, c); }) ==
        "engine.swap_space_gib: inf GiB is inf blocks of 4000 B, more than a pool holds (at "
        "most 268435456); lower it, or give engine.cpu_blocks");
}
