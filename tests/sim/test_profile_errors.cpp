// Profiles: every error a user can hit names the file, the line and the key.
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

TEST_CASE("file and YAML-level errors") {
  const std::string missing = isim::test::data_dir() + "/no-such-profile.yaml";
  CHECK_THROWS_WITH_AS((void)load_profile(missing),
                       (missing + ": cannot open: No such file or directory").c_str(), InputError);

  const std::string t = tables_text();
  const std::string bad = edit(t, "  memory_gib: 1\n", "  memory_gib: [1\n");
  expect_error(bad, "t.yaml:");
  CHECK(error_of(bad).find("invalid YAML: ") != std::string::npos);
  const std::string bad2 = edit(t, "  memory_gib: 1\n", "  memory_gib: 1: 2\n");
  expect_error(bad2, at(bad2, "memory_gib: 1: 2") + "invalid YAML: ");

  expect_error(t + "---\nschema: isim-profile/1\n", "t.yaml: expected one YAML document, found 2");
  expect_error("", "t.yaml: expected one YAML document, found 0");
  expect_error(
      "- 1\n- 2\n",
      "t.yaml:1: (document): expected a map with keys schema, provenance, device, model, "
      "kv, saturation_tokens, forward, swap, step_overhead, memory, validation, got a list");
  const std::string key_list = t + "[a, b]: 1\n";
  expect_error(key_list, at(key_list, "[a, b]") + "(document): keys must be strings, got a list");
}

TEST_CASE("schema errors") {
  const std::string t = tables_text();
  expect_error(edit(t, "schema: isim-profile/1\n", ""),
               "t.yaml: schema: missing (expected isim-profile/1)");
  const std::string v2 = edit(t, "schema: isim-profile/1", "schema: isim-profile/2");
  expect_error(v2, at(v2, "schema:") +
                       "schema: unsupported 'isim-profile/2' (expected "
                       "isim-profile/1)");
  const std::string listed = edit(t, "schema: isim-profile/1", "schema: [isim-profile/1]");
  expect_error(listed, at(listed, "schema:") + "schema: unsupported a list");
}

TEST_CASE("tables.prefill_interpolation: optional, per_pair round-trips, anything else fails") {
  const std::string t = tables_text();
  CHECK(parse_profile(t, "p").tables.prefill_interpolation == "time");
  const std::string pp = edit(t, "    overhead_us: 40\n",
                              "    overhead_us: 40\n    prefill_interpolation: per_pair\n");
  const Profile p = parse_profile(pp, "p");
  CHECK(p.tables.prefill_interpolation == "per_pair");
  CHECK(to_text(p).find("    prefill_interpolation: per_pair\n") != std::string::npos);
  CHECK(parse_profile(to_text(p), "w") == p);
  const std::string bad =
      edit(t, "    overhead_us: 40\n", "    overhead_us: 40\n    prefill_interpolation: cubic\n");
  expect_error(bad, at(bad, "prefill_interpolation") +
                        "forward.tables.prefill_interpolation: 'cubic': expected time or per_pair");
}

TEST_CASE("unknown and duplicate keys") {
  const std::string t = tables_text();
  const std::string top = t + "extra: 1\n";
  expect_error(top, at(top, "extra:") +
                        "extra: unknown key (valid keys: schema, provenance, device, model, kv, "
                        "saturation_tokens, forward, swap, step_overhead, memory, validation)");
  const std::string model = edit(t, "  layers: 2\n", "  layer: 2\n");
  expect_error(model, at(model, "layer: 2") +
                          "model.layer: unknown key (valid keys: name, layers, hidden, heads, "
                          "kv_heads, head_dim, ffn, vocab, dtype, params, tp, moe, mla, "
                          "active_params, weight_dtype, ep)");
  const std::string device = edit(t, "  memory_gib: 1\n", "  memory_gib: 1\n  pcie: 4\n");
  expect_error(device, at(device, "pcie") +
                           "device.pcie: unknown key (valid keys: name, "
                           "memory_gib)");
  const std::string kv = edit(t, "  block_tokens: 4\n", "  block_tokens: 4\n  blocks: 9\n");
  expect_error(kv, at(kv, "blocks: 9") + "kv.blocks: unknown key (valid keys: block_tokens)");
  const std::string tables = edit(t, "    overhead_us: 40\n", "    overhead_us: 40\n    x: 1\n");
  expect_error(tables, at(tables, "    x: 1") +
                           "forward.tables.x: unknown key (valid keys: dense_us, "
                           "decode_attention_us, prefill_attention_us, lm_head_us, overhead_us, "
                           "prefill_interpolation, mixed_attention_us, allreduce_us, moe_us, "
                           "moe_roofline, decode_skew)");
  const std::string table =
      edit(t, "      us: [10, 16, 64]\n", "      us: [10, 16, 64]\n      unit: us\n");
  expect_error(table, at(table, "unit:") +
                          "forward.tables.dense_us.unit: unknown key (valid keys: tokens, us)");
  const std::string grid =
      edit(t, "      sequences: [1, 2]\n", "      sequences: [1, 2]\n      batch: [1]\n");
  expect_error(grid, at(grid, "batch:") +
                         "forward.tables.decode_attention_us.batch: unknown key "
                         "(valid keys: sequences, kv_tokens, us)");
  const std::string swap = edit(t, "  duplex_factor: 0.5\n", "  duplex_factor: 0.5\n  pcie: 4\n");
  expect_error(swap, at(swap, "pcie") +
                         "swap.pcie: unknown key (valid keys: h2d, d2h, "
                         "duplex_factor, per_copy_overhead_us, compute_slowdown)");
  const std::string fwd = edit(t, "forward:\n", "forward:\n  roofline: {}\n");
  expect_error(fwd, at(fwd, "roofline") +
                        "forward.roofline: unknown key (valid keys: linear, "
                        "tables)");
  const std::string l = linear_text();
  const std::string lin = edit(l, "    base_ms: 2\n", "    base_ms: 2\n    base_us: 2\n");
  expect_error(lin, at(lin, "base_us") +
                        "forward.linear.base_us: unknown key (valid keys: "
                        "base_ms, slope_ms_per_token)");
  const std::string dup = edit(t, "  layers: 2\n", "  layers: 2\n  layers: 3\n");
  expect_error(dup, at(dup, "layers: 3") + "model.layers: duplicate key");
}

TEST_CASE("provenance is free-form but needs a known source") {
  const std::string t = tables_text();
  const Profile p = parse_profile(
      edit(t, "  date: 2024-01-01\n", "  date: 2024-01-01\n  anything_goes: yes\n"), "t.yaml");
  CHECK(p.provenance_value("anything_goes") == "yes");
  expect_error(edit(t, "  source: analytic\n", ""),
               "t.yaml: provenance.source: missing (expected one of measured, imported, "
               "analytic, published)");
  const std::string guessed = edit(t, "source: analytic", "source: guessed");
  expect_error(guessed, at(guessed, "source:") +
                            "provenance.source: unknown source 'guessed' "
                            "(valid: measured, imported, analytic, "
                            "published)");
  const std::string listed = edit(t, "date: 2024-01-01", "date: [2024]");
  expect_error(listed, at(listed, "date:") + "provenance.date: expected a string, got a list");
  const std::string empty = edit(t, "date: 2024-01-01", "date:");
  expect_error(empty, "t.yaml:7: provenance.date: expected a string, got nothing (null)");
  const std::string l = linear_text();
  const std::string scalar =
      edit(l, "provenance:\n  source: analytic\n  description: hand-made linear test profile\n",
           "provenance: published\n");
  expect_error(scalar, at(scalar, "provenance:") +
                           "provenance: expected a map of strings with at least source, got "
                           "'published'");
  expect_error(edit(l,
                    "provenance:\n  source: analytic\n  description: hand-made linear test "
                    "profile\n",
                    ""),
               "t.yaml: provenance: missing (expected a map of strings with at least source)");
}

TEST_CASE("missing required keys") {
  const std::string t = tables_text();
  expect_error(edit(t, "kv:\n  block_tokens: 4\n", ""),
               "t.yaml: kv: missing (expected a map with keys block_tokens)");
  expect_error(edit(t, "kv:\n  block_tokens: 4\n", "kv: {}\n"),
               "t.yaml: kv.block_tokens: missing (expected a positive integer)");
  const std::string null_kv = edit(t, "kv:\n  block_tokens: 4\n", "kv:\n");
  expect_error(null_kv, at(null_kv, "kv:") +
                            "kv: expected a map with keys block_tokens, got nothing (null)");
  expect_error(edit(t, "saturation_tokens: 8\n", ""),
               "t.yaml: saturation_tokens: missing (expected a positive integer)");
  expect_error(edit(t, "  memory_gib: 1\n", ""),
               "t.yaml: device.memory_gib: missing (expected a number)");
  expect_error(edit(t, "  name: test-gpu\n", ""),
               "t.yaml: device.name: missing (expected a non-empty string)");
  expect_error(edit(t, "  dtype: fp16\n", ""),
               "t.yaml: model.dtype: missing (expected one of fp16, bf16, fp32, fp8)");
  expect_error(edit(t, "  tp: 1\n", ""), "t.yaml: model.tp: missing (expected a positive integer)");
  expect_error(edit(t, "  params: 1e6\n", ""), "t.yaml: model.params: missing (expected a number)");
  expect_error(edit(t,
                    "    decode_attention_us:\n      sequences: [1, 2]\n      kv_tokens: [0, 100]\n"
                    "      us:\n        - [1, 3]\n        - [2, 6]\n",
                    ""),
               "t.yaml: forward.tables.decode_attention_us: missing (expected a table with "
               "sequences, kv_tokens, us)");
  expect_error(edit(t, "      us: [5, 12]\n", ""),
               "t.yaml: forward.tables.lm_head_us.us: missing (expected a list with one value per "
               "sequences value)");
  expect_error(edit(t, "      tokens: [1, 4, 16]\n", ""),
               "t.yaml: forward.tables.dense_us.tokens: missing (expected a strictly increasing "
               "list of numbers)");
  expect_error(edit(t, "      us:\n        - [1, 3]\n        - [2, 6]\n", ""),
               "t.yaml: forward.tables.decode_attention_us.us: missing (expected a list of rows, "
               "one per sequences value)");
  expect_error(edit(t, "    overhead_us: 40\n", ""),
               "t.yaml: forward.tables.overhead_us: missing (expected a number)");
  expect_error(edit(t, "  h2d:\n    bytes: [1000, 1001000]\n    gbps: [10, 20]\n", ""),
               "t.yaml: swap.h2d: missing (expected a table with bytes, gbps)");
  expect_error(edit(t, "  per_copy_overhead_us: 2\n", ""),
               "t.yaml: swap.per_copy_overhead_us: missing (expected a number)");
  const std::string l = linear_text();
  expect_error(edit(l, "    base_ms: 2\n", ""),
               "t.yaml: forward.linear.base_ms: missing (expected a number)");
  expect_error(edit(l, "forward:\n  linear:\n    base_ms: 2\n    slope_ms_per_token: 0.5\n", ""),
               "t.yaml: forward: missing (expected a map with keys linear, tables)");
}

TEST_CASE("wrong types") {
  const std::string t = tables_text();
  auto check = [&](std::string_view from, std::string_view to, std::string_view line,
                   const std::string& rest) {
    const std::string bad = edit(t, from, to);
    expect_error(bad, at(bad, line) + rest);
  };
  check("layers: 2", "layers: two", "layers:", "model.layers: expected an integer, got 'two'");
  check("layers: 2", "layers: 2.5", "layers:", "model.layers: expected an integer, got '2.5'");
  check("layers: 2", "layers: \"2\"",
        "layers:", "model.layers: expected an integer, got the quoted string \"2\"");
  check("saturation_tokens: 8", "saturation_tokens: 8e0",
        "saturation_tokens:", "saturation_tokens: expected an integer, got '8e0'");
  check("memory_gib: 1", "memory_gib: [1]",
        "memory_gib:", "device.memory_gib: expected a number, got a list");
  check("memory_gib: 1", "memory_gib: '1'",
        "memory_gib:", "device.memory_gib: expected a number, got the quoted string \"1\"");
  check("memory_gib: 1", "memory_gib: .inf",
        "memory_gib:", "device.memory_gib: expected a finite number, got '.inf'");
  check("memory_gib: 1", "memory_gib: 1e999",
        "memory_gib:", "device.memory_gib: expected a finite number, got '1e999'");
  check("memory_gib: 1", "memory_gib: 1GiB",
        "memory_gib:", "device.memory_gib: expected a number, got '1GiB'");
  check("  name: tiny", "  name: {a: 1}", "name: {a: 1}",
        "model.name: expected a string, got a map");
  check("  name: test-gpu", "  name: \"\"", "name: \"\"", "device.name: must not be empty");
  check("dtype: fp16", "dtype: [fp16]", "dtype:", "model.dtype: expected a string, got a list");
  check("device:\n  name: test-gpu\n  memory_gib: 1\n", "device: [test-gpu, 1]\n",
        "device:", "device: expected a map with keys name, memory_gib, got a list");
  check("tokens: [1, 4, 16]", "tokens: 5",
        " tokens:", "forward.tables.dense_us.tokens: expected a list of numbers, got '5'");
  check("tokens: [1, 4, 16]", "tokens: [1, x, 16]",
        " tokens:", "forward.tables.dense_us.tokens[1]: expected a number, got 'x'");
  check("us: [10, 16, 64]", "us: {a: 1}", "us: {a: 1}",
        "forward.tables.dense_us.us: expected a list of numbers, got a map");
  check("    lm_head_us:\n      sequences: [1, 8]\n      us: [5, 12]\n", "    lm_head_us: 5\n",
        "lm_head_us:", "forward.tables.lm_head_us: expected a table with sequences, us, got '5'");
  check("        - [1, 2]\n        - [16, 20]\n", "        - [1, 2]\n        - 16\n", "- 16",
        "forward.tables.prefill_attention_us.us[1]: expected a list of numbers, got '16'");
  check("        - [1, 2]\n        - [16, 20]\n", "        - [1, 2]\n        - [16, 2x]\n",
        "- [16, 2x]", "forward.tables.prefill_attention_us.us[1][1]: expected a number, got '2x'");
  check("  duplex_factor: 0.5", "  duplex_factor: half",
        "duplex_factor:", "swap.duplex_factor: expected a number, got 'half'");
  check("memory_gib: 1", "memory_gib: nan",
        "memory_gib:", "device.memory_gib: expected a finite number, got 'nan'");
}

TEST_CASE("non-positive sizes and out-of-range integers") {
  const std::string t = tables_text();
  auto check = [&](std::string_view from, std::string_view to, std::string_view line,
                   const std::string& rest) {
    const std::string bad = edit(t, from, to);
    expect_error(bad, at(bad, line) + rest);
  };
  check("layers: 2", "layers: 0", "layers:", "model.layers: must be > 0 (a size), got 0");
  check("hidden: 64", "hidden: -64", "hidden:", "model.hidden: must be > 0 (a size), got -64");
  check("  heads: 4", "  heads: 0", "  heads:", "model.heads: must be > 0 (a size), got 0");
  check("kv_heads: 2", "kv_heads: 0", "kv_heads:", "model.kv_heads: must be > 0 (a size), got 0");
  check("head_dim: 16", "head_dim: 0", "head_dim:", "model.head_dim: must be > 0 (a size), got 0");
  check("ffn: 256", "ffn: 0", "ffn:", "model.ffn: must be > 0 (a size), got 0");
  check("vocab: 1000", "vocab: 0", "vocab:", "model.vocab: must be > 0 (a size), got 0");
  check("tp: 1", "tp: 0", "tp:", "model.tp: must be > 0 (a size), got 0");
  check("layers: 2", "layers: 3000000000",
        "layers:", "model.layers: must be at most 2147483647, got 3000000000");
  check("params: 1e6", "params: 0",
        "params:", "model.params: must be > 0 (a parameter count), got 0");
  check("memory_gib: 1", "memory_gib: -1",
        "memory_gib:", "device.memory_gib: must be > 0 (a size in GiB), got -1");
  check("block_tokens: 4", "block_tokens: 0",
        "block_tokens:", "kv.block_tokens: must be > 0 (a size), got 0");
  check("saturation_tokens: 8", "saturation_tokens: -8",
        "saturation_tokens:", "saturation_tokens: must be > 0 (a size), got -8");
}

TEST_CASE("axes must be non-empty, in range and strictly increasing") {
  const std::string t = tables_text();
  auto check = [&](std::string_view from, std::string_view to, std::string_view line,
                   const std::string& rest) {
    const std::string bad = edit(t, from, to);
    expect_error(bad, at(bad, line) + rest);
  };
  check("tokens: [1, 4, 16]", "tokens: [1, 4, 4]", " tokens:",
        "forward.tables.dense_us.tokens[2]: axis must be strictly increasing, got 4 after 4");
  check("tokens: [1, 4, 16]", "tokens: []",
        " tokens:", "forward.tables.dense_us.tokens: must have at least one point");
  check("tokens: [1, 4, 16]", "tokens: [0, 4, 16]",
        " tokens:", "forward.tables.dense_us.tokens[0]: must be > 0 (an axis point), got 0");
  check("kv_tokens: [0, 100]", "kv_tokens: [100, 0]", "kv_tokens: [100",
        "forward.tables.decode_attention_us.kv_tokens[1]: axis must be strictly increasing, got "
        "0 after 100");
  check("kv_tokens: [0, 100]", "kv_tokens: [-1, 100]", "kv_tokens: [-1",
        "forward.tables.decode_attention_us.kv_tokens[0]: must be >= 0 (an axis point), got -1");
  check("sequences: [1, 2]", "sequences: [0, 2]", "sequences: [0",
        "forward.tables.decode_attention_us.sequences[0]: must be > 0 (an axis point), got 0");
  check("chunk: [1, 16]", "chunk: [16, 1]", "chunk:",
        "forward.tables.prefill_attention_us.chunk[1]: axis must be strictly increasing, got 1 "
        "after 16");
  check("kv_tokens: [0, 64]", "kv_tokens: [0, 0]", "kv_tokens: [0, 0]",
        "forward.tables.prefill_attention_us.kv_tokens[1]: axis must be strictly increasing, got "
        "0 after 0");
  check("sequences: [1, 8]", "sequences: [8, 1]", "sequences: [8",
        "forward.tables.lm_head_us.sequences[1]: axis must be strictly increasing, got 1 after 8");
  check("  h2d:\n    bytes: [1000, 1001000]", "  h2d:\n    bytes: [1000, 1000]", "[1000, 1000]",
        "swap.h2d.bytes[1]: axis must be strictly increasing, got 1000 after 1000");
  check("  d2h:\n    bytes: [1000, 1001000]", "  d2h:\n    bytes: [0, 1001000]", "[0, 1001000]",
        "swap.d2h.bytes[0]: must be > 0 (an axis point), got 0");
}

TEST_CASE("table shapes must match their axes") {
  const std::string t = tables_text();
  auto check = [&](std::string_view from, std::string_view to, std::string_view line,
                   const std::string& rest) {
    const std::string bad = edit(t, from, to);
    expect_error(bad, at(bad, line) + rest);
  };
  check("us: [10, 16, 64]", "us: [10, 16]", "us: [10, 16]",
        "forward.tables.dense_us.us: expected 3 values (one per tokens value), got 2");
  check("us: [5, 12]", "us: [5, 12, 13]", "us: [5, 12, 13]",
        "forward.tables.lm_head_us.us: expected 2 values (one per sequences value), got 3");
  check("        - [1, 3]\n        - [2, 6]\n", "        - [1, 3]\n", "us:\n        - [1, 3]",
        "forward.tables.decode_attention_us.us: expected 2 rows (one per sequences value), got 1");
  check("        - [2, 6]\n", "        - [2, 6, 7]\n", "- [2, 6, 7]",
        "forward.tables.decode_attention_us.us[1]: expected 2 values (one per kv_tokens value), "
        "got 3");
  check("      us:\n        - [1, 2]\n        - [16, 20]\n", "      us: 5\n", "us: 5",
        "forward.tables.prefill_attention_us.us: expected a list of rows, got '5'");
  check("    gbps: [8, 16]", "    gbps: [8]", "gbps: [8]",
        "swap.d2h.gbps: expected 2 values (one per bytes value), got 1");
}

TEST_CASE("times must be non-negative, bandwidths and the duplex factor positive") {
  const std::string t = tables_text();
  auto check = [&](const std::string& base, std::string_view from, std::string_view to,
                   std::string_view line, const std::string& rest) {
    const std::string bad = edit(base, from, to);
    expect_error(bad, at(bad, line) + rest);
  };
  check(t, "us: [10, 16, 64]", "us: [10, -16, 64]", "us: [10, -16",
        "forward.tables.dense_us.us[1]: must be >= 0 (a time), got -16");
  check(t, "- [1, 2]", "- [1, -2]", "- [1, -2]",
        "forward.tables.prefill_attention_us.us[0][1]: must be >= 0 (a time), got -2");
  check(t, "us: [5, 12]", "us: [-5, 12]", "us: [-5",
        "forward.tables.lm_head_us.us[0]: must be >= 0 (a time), got -5");
  check(t, "overhead_us: 40", "overhead_us: -1",
        " overhead_us:", "forward.tables.overhead_us: must be >= 0 (a time), got -1");
  check(t, "per_copy_overhead_us: 2", "per_copy_overhead_us: -0.5",
        "per_copy_overhead_us:", "swap.per_copy_overhead_us: must be >= 0 (a time), got -0.5");
  check(t, "gbps: [10, 20]", "gbps: [0, 20]", "gbps: [0",
        "swap.h2d.gbps[0]: must be > 0 (a bandwidth), got 0");
  check(t, "duplex_factor: 0.5", "duplex_factor: 0",
        "duplex_factor:", "swap.duplex_factor: must be > 0 (a bandwidth multiplier), got 0");
  check(t, "duplex_factor: 0.5", "duplex_factor: 1.5",
        "duplex_factor:", "swap.duplex_factor: must be at most 1");
  const std::string l = linear_text();
  check(l, "base_ms: 2", "base_ms: -2",
        "base_ms:", "forward.linear.base_ms: must be >= 0 (a time), got -2");
  check(l, "slope_ms_per_token: 0.5", "slope_ms_per_token: -0.5", "slope_ms_per_token:",
        "forward.linear.slope_ms_per_token: must be >= 0 (a time), got -0.5");
}

TEST_CASE("exactly one forward form, and a known dtype") {
  const std::string l = linear_text();
  const std::string both = edit(l, "swap:\n", "  tables: {}\nswap:\n");
  expect_error(both, at(both, "forward:") +
                         "forward: expected exactly one of linear, tables, "
                         "got both");
  const std::string neither = edit(
      l, "forward:\n  linear:\n    base_ms: 2\n    slope_ms_per_token: 0.5\n", "forward: {}\n");
  expect_error(neither, at(neither, "forward:") +
                            "forward: expected exactly one of linear, "
                            "tables, got neither");
  const std::string dtype = edit(l, "dtype: bf16", "dtype: fp64");
  expect_error(dtype, at(dtype, "dtype:") +
                          "model.dtype: unknown dtype 'fp64' (valid: fp16, "
                          "bf16, fp32, fp8)");
}

TEST_CASE("the optional validation list round-trips and is checked") {
  auto p = load_profile(isim::test::data_dir() + "/profile-linear-small.yaml");
  p.validation = {{"decode 8x512", 1.25, 1.5}, {"chunk 128@0", 2.0, 2.0}};
  std::ostringstream os;
  isim::sim::write_profile(os, p);
  auto q = parse_profile(os.str(), "v.yaml");
  CHECK(q == p);
  CHECK(q.validation[0].error() == doctest::Approx(-1.0 / 6));
  CHECK(q.validation_mean_abs_error() == doctest::Approx(1.0 / 12));
  CHECK(isim::sim::describe_profile(q).find("validation: 2 batches, mean |error| 8.3%") !=
        std::string::npos);
  std::string bad = os.str();
  bad.replace(bad.find("measured_ms: 1.5"), 16, "measured_ms: 0");
  CHECK_THROWS_WITH_AS(parse_profile(bad, "v.yaml"), doctest::Contains("validation[0].measured_ms"),
                       isim::InputError);
  std::string extra = os.str();
  extra.replace(extra.find("    predicted_ms: 1.25"), 22, "    predicted: 1.25");
  CHECK_THROWS_WITH_AS(parse_profile(extra, "v.yaml"), doctest::Contains("validation[0].predicted"),
                       isim::InputError);
}

// ---- optional forward tables: mixed attention and all-reduce ----
