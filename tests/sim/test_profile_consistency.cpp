// Model and profile consistency (sim/profile_consistency.h) as load_profile applies it: heads,
// KV heads and tp that do not fit, and time tables that fall with tokens, each refused naming
// the file, the line and the key or row. The fixture is tests/data/profile-tables-small.yaml
// (heads 4, kv_heads 2, tp 1; dense_us [10, 16, 64] over tokens [1, 4, 16]).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "sim/engine.h"
#include "sim/profile_consistency.h"
#include "tests/input_error_text.h"
#include "tests/sim/profile_text.h"

using namespace isim::test::profile_text;  // NOLINT(google-build-using-namespace)

namespace {

// The exact message of loading `text`, which holds `needle` on the line the error names.
void expect_exact(const std::string& text, const std::string& needle, const std::string& rest) {
  CHECK(error_of(text) == at(text, needle) + rest);
}

}  // namespace

TEST_CASE("profile consistency: heads, kv_heads and tp that do not fit are refused") {
  const std::string t = tables_text();
  const std::string more = edit(t, "  kv_heads: 2\n", "  kv_heads: 8\n");
  expect_exact(more, "kv_heads: 8",
               "model.kv_heads: 8 is more than heads 4; expected at most 4 (a KV head serves one "
               "or more query heads)");
  const std::string odd = edit(t, "  kv_heads: 2\n", "  kv_heads: 3\n");
  expect_exact(odd, "kv_heads: 3",
               "model.kv_heads: 3 does not divide heads 4; expected a divisor of it (each KV head "
               "serves as many query heads)");
  const std::string tp3 = edit(t, "  tp: 1\n", "  tp: 3\n");
  expect_exact(tp3, "tp: 3",
               "model.tp: 3 does not divide heads 4; expected a divisor of it (the "
               "tensor-parallel ranks split the heads evenly)");
  // heads 12, kv_heads 4: tp 3 divides the heads but not the KV heads; tp 6 exceeds the KV
  // heads and is no multiple of them (6 % 4 = 2).
  const std::string h12 = edit(t, "  heads: 4\n  kv_heads: 2\n", "  heads: 12\n  kv_heads: 4\n");
  const std::string kv3 = edit(h12, "  tp: 1\n", "  tp: 3\n");
  expect_exact(kv3, "tp: 3",
               "model.tp: 3 does not divide kv_heads 4; expected a divisor of it (the ranks split "
               "the KV heads evenly)");
  const std::string kv6 = edit(h12, "  tp: 1\n", "  tp: 6\n");
  expect_exact(kv6, "tp: 6",
               "model.tp: 6 is not a multiple of kv_heads 4; expected one (a KV head is "
               "replicated over tp / kv_heads ranks)");
  // tp 4 over kv_heads 2 replicates each KV head on 2 ranks: accepted, as vLLM does.
  CHECK(error_of(edit(t, "  tp: 1\n", "  tp: 4\n")) == "(no error)");
  CHECK(error_of(edit(t, "  tp: 1\n", "  tp: 2\n")) == "(no error)");
}

TEST_CASE("profile consistency: a time table that falls with tokens is refused naming the row") {
  const std::string t = tables_text();
  const std::string tail = "(at most 50% less: noise and kernel switches)";
  // dense_us [10, 64, 16]: 16 is 75% below 64, and past tokens 16 the time would extrapolate
  // along the last two points to 16 - 48/12 x 16 = -48 at 32 tokens, clamped to 0.
  const std::string dense = edit(t, "      us: [10, 16, 64]\n", "      us: [10, 64, 16]\n");
  expect_exact(dense, "us: [10, 64, 16]",
               "forward.tables.dense_us.us: 16 us at tokens 16 is 75.0% below the 64 us at tokens "
               "4; expected more tokens never to cost less " +
                   tail);
  // [10, 4, 64]: 4 is 60% below 10.
  const std::string dip = edit(t, "      us: [10, 16, 64]\n", "      us: [10, 4, 64]\n");
  expect_exact(dip, "us: [10, 4, 64]",
               "forward.tables.dense_us.us: 4 us at tokens 4 is 60.0% below the 10 us at tokens 1; "
               "expected more tokens never to cost less " +
                   tail);
  // [10, 6, 64] and [10, 16, 9]: 40% and 43.75% below, within what is allowed.
  CHECK(error_of(edit(t, "      us: [10, 16, 64]\n", "      us: [10, 6, 64]\n")) == "(no error)");
  CHECK(error_of(edit(t, "      us: [10, 16, 64]\n", "      us: [10, 16, 9]\n")) == "(no error)");
  // prefill_attention_us row 1 (chunk 16) falls along kv_tokens: 16 at 0, 6 at 64 (62.5%).
  const std::string row = edit(t, "        - [16, 20]\n", "        - [16, 6]\n");
  expect_exact(row, "- [16, 6]",
               "forward.tables.prefill_attention_us.us[1]: at chunk 16: 6 us at kv_tokens 64 is "
               "62.5% below the 16 us at kv_tokens 0; expected more kv_tokens never to cost less " +
                   tail);
  // Its column kv_tokens 0 falls along chunk: 20 at chunk 1, 8 at chunk 16 (60%; rows rise).
  const std::string col =
      edit(t, "        - [1, 2]\n        - [16, 20]\n", "        - [20, 30]\n        - [8, 40]\n");
  CHECK(error_of(col).find(": forward.tables.prefill_attention_us.us: at kv_tokens 0: 8 us at "
                           "chunk 16 is 60.0% below the 20 us at chunk 1; expected more chunk "
                           "never to cost less " +
                           tail) != std::string::npos);
  // Decode attention is not checked: along sequences at a fixed total of KV tokens, nor along
  // kv_tokens (a measured decode gets faster past a split-KV switch): [4, 8] then [2, 6], and
  // [3, 1].
  CHECK(error_of(edit(t, "        - [1, 3]\n", "        - [4, 8]\n")) == "(no error)");
  CHECK(error_of(edit(t, "        - [1, 3]\n", "        - [3, 1]\n")) == "(no error)");
  // lm_head_us [12, 5]: 58.3% below.
  const std::string lm = edit(t, "      us: [5, 12]\n", "      us: [12, 5]\n");
  expect_exact(lm, "us: [12, 5]",
               "forward.tables.lm_head_us.us: 5 us at sequences 8 is 58.3% below the 12 us at "
               "sequences 1; expected more sequences never to cost less " +
                   tail);
}

TEST_CASE("profile consistency: rising_problem keeps the largest time so far") {
  using isim::sim::rising_problem;
  const std::vector<double> x = {1, 2, 3, 4};
  // 100, 80 (20% below), 51 (49% below 100), 110: within what is allowed throughout.
  CHECK(rising_problem(x, std::vector<double>{100, 80, 51, 110}, "tokens") == "");
  // 100, 120, 59, 130: 59 is 50.8% below 120 (the largest so far, not the previous point only:
  // 59 is 41% below 100).
  CHECK(rising_problem(x, std::vector<double>{100, 120, 59, 130}, "tokens") ==
        "59 us at tokens 3 is 50.8% below the 120 us at tokens 2; expected more tokens never to "
        "cost less (at most 50% less: noise and kernel switches)");
  CHECK(rising_problem(std::vector<double>{1}, std::vector<double>{5}, "tokens") == "");
}

TEST_CASE("profile consistency: an activation reserve that takes the GPU's room names its key") {
  Profile p = parse_profile(tables_text(), "t.yaml");
  p.path = "t.yaml";
  isim::sim::EngineConfig c;
  c.activation_reserve_gib = 1;
  c.activation_reserve_given = true;
  const auto err = [&] {
    return isim::test::error_of_call([&] { (void)isim::sim::derive_block_counts(p, c); });
  };
  // 1 GiB x 0.9 = 966,367,641.6 B less 1e6 params x 2 B = 964,367,641.6 B = 0.898 GiB of room,
  // which a 1 GiB reserve takes whole; a block is 2 x 2 layers x 2 kv_heads x 16 x 2 B x 4
  // tokens = 1024 B. Before, the message blamed the profile ("t.yaml: no KV block fits").
  CHECK(err() ==
        "engine.activation_reserve_gib: 1 GiB leaves no room for a KV block: the GPU has 1 GiB x "
        "0.9 - 0.002 GiB weights = 0.898 GiB (t.yaml); expected at most 0.898 GiB (that less one "
        "1024 B block)");
  c.activation_reserve_gib = 2;  // the default, not given
  c.activation_reserve_given = false;
  CHECK(err().rfind("engine.activation_reserve_gib: 2 GiB (the default) leaves no room", 0) == 0);
  // Weights past the GPU: the profile is at fault, as before.
  p.device.memory_gib = 0.001;  // 1,073,741.8 B x 0.9 < 2e6 B of weights
  CHECK(err().rfind("t.yaml: no KV block fits on the GPU", 0) == 0);
}
