// Profiles: the optional forward tables (mixed attention, all-reduce).
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

#include "tests/sim/profile_text.h"

using namespace isim::test::profile_text;  // NOLINT(google-build-using-namespace)

namespace {

// chunk [4, 8] x kv_prefill [0] x decodes [1, 2] x kv_per_decode [10, 50]: 4 rows of 2.
const char* kMixed =
    "    mixed_attention_us:\n"
    "      chunk: [4, 8]\n"
    "      kv_prefill: [0]\n"
    "      decodes: [1, 2]\n"
    "      kv_per_decode: [10, 50]\n"
    "      us:\n"
    "        - [8, 12]\n"
    "        - [11, 15]\n"
    "        - [12, 16]\n"
    "        - [15, 19.5]\n";

std::string with_mixed(const std::string& t) {
  return edit(t, "    overhead_us: 40\n", std::string("    overhead_us: 40\n") + kMixed);
}

}  // namespace

TEST_CASE("tables.mixed_attention_us: optional 4-D grid, read in row order, round-trips") {
  const std::string t = tables_text();
  CHECK(parse_profile(t, "p").tables.mixed_attention_us.empty());
  const Profile p = parse_profile(with_mixed(t), "p");
  const auto& g = p.tables.mixed_attention_us;
  CHECK(g.axes[0] == std::vector<double>{4, 8});
  CHECK(g.axes[1] == std::vector<double>{0});
  CHECK(g.axes[2] == std::vector<double>{1, 2});
  CHECK(g.axes[3] == std::vector<double>{10, 50});
  CHECK(g.z == std::vector<double>{8, 12, 11, 15, 12, 16, 15, 19.5});
  // The writer emits the same block, and what it writes reads back equal.
  CHECK(to_text(p).find(kMixed) != std::string::npos);
  CHECK(parse_profile(to_text(p), "w") == p);
  CHECK(parse_profile(t, "p") != p);
  const std::string d = isim::sim::describe_profile(p);
  CAPTURE(d);
  CHECK(d.find("mixed attention (one chunk with decodes) 2x1x2x2: chunk 4..8, kv_prefill 0..0, "
               "decodes 1..2, kv per decode 10..50") != std::string::npos);
  CHECK(isim::sim::describe_profile(parse_profile(t, "p")).find("mixed") == std::string::npos);
}

TEST_CASE("tables.mixed_attention_us: bad shapes name the line and the key") {
  const std::string m = with_mixed(tables_text());
  auto check = [&](std::string_view from, std::string_view to, std::string_view line,
                   const std::string& rest) {
    const std::string bad = edit(m, from, to);
    expect_error(bad, at(bad, line) + rest);
  };
  check("        - [15, 19.5]\n", "", "      us:\n        - [8, 12]",
        "forward.tables.mixed_attention_us.us: expected 4 rows (one per chunk x kv_prefill x "
        "decodes = 2 x 1 x 2), got 3");
  check("        - [11, 15]\n", "        - [11, 15, 16]\n", "- [11, 15, 16]",
        "forward.tables.mixed_attention_us.us[1]: expected 2 values (one per kv_per_decode "
        "value), got 3");
  check("      decodes: [1, 2]\n", "      decodes: [2, 1]\n", "decodes: [2, 1]",
        "forward.tables.mixed_attention_us.decodes[1]: axis must be strictly increasing, got 1 "
        "after 2");
  check("      chunk: [4, 8]\n", "      chunk: [0, 8]\n", "chunk: [0, 8]",
        "forward.tables.mixed_attention_us.chunk[0]: must be > 0 (an axis point), got 0");
  check("        - [12, 16]\n", "        - [12, -1]\n", "- [12, -1]",
        "forward.tables.mixed_attention_us.us[2][1]: must be >= 0 (a time), got -1");
  expect_error(edit(m, "      kv_per_decode: [10, 50]\n", ""),
               "t.yaml: forward.tables.mixed_attention_us.kv_per_decode: missing");
  check("      chunk: [4, 8]\n", "      chunk: [4, 8]\n      tokens: [1]\n", "tokens: [1]",
        "forward.tables.mixed_attention_us.tokens: unknown key (valid keys: chunk, kv_prefill, "
        "decodes, kv_per_decode, us)");
  check(kMixed, "    mixed_attention_us: 3\n", "mixed_attention_us: 3",
        "forward.tables.mixed_attention_us: expected a table with chunk, kv_prefill, decodes, "
        "kv_per_decode, us, got '3'");
}

TEST_CASE("tables.allreduce_us: only with model.tp > 1, a curve by bytes, round-trips") {
  const std::string t = tables_text();
  const std::string curve = "    allreduce_us:\n      bytes: [256, 2560]\n      us: [3, 12]\n";
  const std::string one = edit(t, "    overhead_us: 40\n", "    overhead_us: 40\n" + curve);
  expect_error(one, at(one, "allreduce_us:") +
                        "forward.tables.allreduce_us: given for model.tp 1 (a single GPU runs no "
                        "all-reduce; remove it or set model.tp)");
  const std::string two = edit(one, "  tp: 1\n", "  tp: 2\n");
  const Profile p = parse_profile(two, "p");
  CHECK(p.tables.allreduce_us.x == std::vector<double>{256, 2560});
  CHECK(p.tables.allreduce_us.y == std::vector<double>{3, 12});
  CHECK(to_text(p).find(curve) != std::string::npos);
  CHECK(parse_profile(to_text(p), "w") == p);
  const std::string d = isim::sim::describe_profile(p);
  CAPTURE(d);
  // hidden 64 x fp16 = 128 B per token: 2 x 2 layers x 2.5 us at 1 token; at saturation, 8
  // tokens (1,024 B), allreduce = 3 + 9 x 768/2304 = 6 us -> 24 / 8 = 3 us per token.
  CHECK(d.find("all-reduce 2 points (256 B..2.5 KiB): 2 x 2 layers x allreduce(tokens x 128 B) "
               "= 10 us at 1 token, 3 us per token at 8 tokens") != std::string::npos);
  const std::string bad = edit(two, "      us: [3, 12]\n", "      us: [3]\n");
  expect_error(bad, at(bad, "us: [3]") +
                        "forward.tables.allreduce_us.us: expected 2 values (one per bytes "
                        "value), got 1");
}
