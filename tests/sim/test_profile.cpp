#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

#include "sim/profile.h"
#include "tests/test_paths.h"
#include "traces/input_error.h"

using isim::InputError;
using isim::sim::Curve1D;
using isim::sim::ForwardForm;
using isim::sim::Grid2D;
using isim::sim::load_profile;
using isim::sim::parse_profile;
using isim::sim::Profile;
using isim::sim::write_profile;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string tables_text() {
  return slurp(isim::test::data_dir() + "/profile-tables-small.yaml");
}
std::string linear_text() {
  return slurp(isim::test::data_dir() + "/profile-linear-small.yaml");
}
std::string shipped_path() {
  return isim::test::source_dir() + "/calibrate/profiles/a100-80g-gptj-6b.infercept.yaml";
}

// Replaces the one occurrence of `from` in `text`.
std::string edit(std::string text, std::string_view from, std::string_view to) {
  const auto pos = text.find(from);
  REQUIRE_MESSAGE(pos != std::string::npos, "not found: ", from);
  REQUIRE_MESSAGE(text.find(from, pos + 1) == std::string::npos, "not unique: ", from);
  text.replace(pos, from.size(), to);
  return text;
}

// "t.yaml:N: " for the 1-based line holding the one occurrence of `needle`.
std::string at(const std::string& text, std::string_view needle) {
  const auto pos = text.find(needle);
  REQUIRE_MESSAGE(pos != std::string::npos, "not found: ", needle);
  REQUIRE_MESSAGE(text.find(needle, pos + 1) == std::string::npos, "not unique: ", needle);
  int line = 1;
  for (std::size_t i = 0; i < pos; ++i) line += text[i] == '\n' ? 1 : 0;
  return fmt::format("t.yaml:{}: ", line);
}

std::string error_of(const std::string& text) {
  try {
    (void)parse_profile(text, "t.yaml");
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

void expect_error(const std::string& text, const std::string& prefix) {
  const std::string msg = error_of(text);
  CHECK(msg.substr(0, prefix.size()) == prefix);
}

std::string to_text(const Profile& p) {
  std::ostringstream os;
  write_profile(os, p);
  return os.str();
}

}  // namespace

TEST_CASE("the small tables profile loads with every field") {
  const Profile p = load_profile(isim::test::data_dir() + "/profile-tables-small.yaml");
  CHECK(p.path == isim::test::data_dir() + "/profile-tables-small.yaml");
  REQUIRE(p.provenance.size() == 3);
  CHECK(p.provenance[0] == std::pair<std::string, std::string>{"source", "analytic"});
  CHECK(p.provenance[2] == std::pair<std::string, std::string>{"date", "2024-01-01"});
  CHECK(p.provenance_value("description") == "hand-made test profile with round numbers");
  CHECK(p.provenance_value("nope").empty());
  CHECK(p.device.name == "test-gpu");
  CHECK(p.device.memory_gib == 1.0);
  CHECK(p.model.name == "tiny");
  CHECK(p.model.layers == 2);
  CHECK(p.model.hidden == 64);
  CHECK(p.model.heads == 4);
  CHECK(p.model.kv_heads == 2);
  CHECK(p.model.head_dim == 16);
  CHECK(p.model.ffn == 256);
  CHECK(p.model.vocab == 1000);
  CHECK(p.model.dtype == "fp16");
  CHECK(p.model.params == 1e6);
  CHECK(p.model.tp == 1);
  CHECK(p.block_tokens == 4);
  CHECK(p.saturation_tokens == 8);
  REQUIRE(p.form == ForwardForm::kTables);
  CHECK(p.tables.dense_us == Curve1D{{1, 4, 16}, {10, 16, 64}});
  CHECK(p.tables.decode_attention_us == Grid2D{{1, 2}, {0, 100}, {1, 3, 2, 6}});
  CHECK(p.tables.prefill_attention_us == Grid2D{{1, 16}, {0, 64}, {1, 2, 16, 20}});
  CHECK(p.tables.lm_head_us == Curve1D{{1, 8}, {5, 12}});
  CHECK(p.tables.overhead_us == 40.0);
  CHECK(p.swap.h2d_gbps == Curve1D{{1000, 1001000}, {10, 20}});
  CHECK(p.swap.d2h_gbps == Curve1D{{1000, 1001000}, {8, 16}});
  CHECK(p.swap.duplex_factor == 0.5);
  CHECK(p.swap.per_copy_overhead_us == 2.0);
}

TEST_CASE("the small linear profile and the shipped InferCept profile load") {
  const Profile lin = load_profile(isim::test::data_dir() + "/profile-linear-small.yaml");
  REQUIRE(lin.form == ForwardForm::kLinear);
  CHECK(lin.linear.base_ms == 2.0);
  CHECK(lin.linear.slope_ms_per_token == 0.5);
  CHECK(lin.model.dtype == "bf16");

  const Profile p = load_profile(shipped_path());
  CHECK(p.provenance_value("source") == "published");
  CHECK(p.provenance_value("description").find("InferCept") != std::string::npos);
  CHECK(p.device.name == "A100-SXM4-80GB");
  CHECK(p.device.memory_gib == 80.0);
  CHECK(p.model.name == "gpt-j-6b");
  CHECK(p.model.layers == 28);
  CHECK(p.model.hidden == 4096);
  CHECK(p.model.heads == 16);
  CHECK(p.model.kv_heads == 16);
  CHECK(p.model.head_dim == 256);
  CHECK(p.model.ffn == 16384);
  CHECK(p.model.vocab == 50400);
  CHECK(p.model.params == 6053381344.0);
  CHECK(p.block_tokens == 16);
  CHECK(p.saturation_tokens == 384);
  REQUIRE(p.form == ForwardForm::kLinear);
  CHECK(p.linear.base_ms == 10.0);
  CHECK(p.linear.slope_ms_per_token == 0.0463);
  CHECK(p.swap.h2d_gbps == Curve1D{{4096, 1073741824}, {25, 25}});
  CHECK(p.swap.d2h_gbps == Curve1D{{4096, 1073741824}, {25, 25}});
  CHECK(p.swap.duplex_factor == 0.8);
  CHECK(p.swap.per_copy_overhead_us == 0.0);
  CHECK(p.swap.compute_slowdown == 0.025);
}

TEST_CASE("swap.compute_slowdown: optional (0), written only when set, checked") {
  const std::string t = tables_text();
  const Profile plain = parse_profile(t, "p");
  CHECK(plain.swap.compute_slowdown == 0.0);
  CHECK(to_text(plain).find("compute_slowdown") == std::string::npos);
  const std::string with =
      edit(t, "  duplex_factor: 0.5\n", "  duplex_factor: 0.5\n  compute_slowdown: 0.125\n");
  const Profile p = parse_profile(with, "p");
  CHECK(p.swap.compute_slowdown == 0.125);
  CHECK(to_text(p).find("  compute_slowdown: 0.125\n") != std::string::npos);
  CHECK(parse_profile(to_text(p), "w") == p);
  CHECK(describe_profile(p).find("compute slowdown 0.125") != std::string::npos);
  const std::string bad =
      edit(t, "  duplex_factor: 0.5\n", "  duplex_factor: 0.5\n  compute_slowdown: -0.1\n");
  expect_error(bad, at(bad, "compute_slowdown") +
                        "swap.compute_slowdown: must be >= 0 (a fraction of the forward time), "
                        "got -0.1");
}

TEST_CASE("ModelShape sizes") {
  const Profile p = load_profile(shipped_path());
  CHECK(p.model.dtype_bytes() == 2);
  // 2 (K, V) x 28 layers x 16 KV heads x 256 x 2 bytes.
  CHECK(p.model.kv_bytes_per_token() == 458752);
  CHECK(p.model.weight_bytes_per_gpu() == 12106762688.0);

  isim::sim::ModelShape m = p.model;
  m.dtype = "fp32";
  CHECK(m.dtype_bytes() == 4);
  m.dtype = "fp8";
  CHECK(m.dtype_bytes() == 1);
  m.dtype = "bf16";
  m.tp = 2;
  CHECK(m.kv_bytes_per_token() == 229376);
  CHECK(m.weight_bytes_per_gpu() == 6053381344.0);
  m.dtype = "int4";
  CHECK_THROWS_WITH_AS((void)m.dtype_bytes(),
                       "model.dtype: unknown dtype 'int4' (valid: fp16, bf16, fp32, fp8)",
                       InputError);
}

TEST_CASE("write then load gives an equal profile, and re-writing gives identical bytes") {
  for (const std::string& path :
       {isim::test::data_dir() + "/profile-tables-small.yaml",
        isim::test::data_dir() + "/profile-linear-small.yaml", shipped_path()}) {
    CAPTURE(path);
    const Profile p = load_profile(path);
    const std::string first = to_text(p);
    const Profile back = parse_profile(first, "written");
    CHECK(back == p);
    CHECK(back.path.empty());
    CHECK(to_text(back) == first);
  }
}

TEST_CASE("the writer's exact output for the small linear profile") {
  const Profile p = load_profile(isim::test::data_dir() + "/profile-linear-small.yaml");
  CHECK(to_text(p) ==
        "schema: isim-profile/1\n"
        "provenance:\n"
        "  source: analytic\n"
        "  description: hand-made linear test profile\n"
        "device:\n"
        "  name: test-gpu\n"
        "  memory_gib: 2\n"
        "model:\n"
        "  name: tiny\n"
        "  layers: 2\n"
        "  hidden: 64\n"
        "  heads: 4\n"
        "  kv_heads: 2\n"
        "  head_dim: 16\n"
        "  ffn: 256\n"
        "  vocab: 1000\n"
        "  dtype: bf16\n"
        "  params: 1000000\n"
        "  tp: 1\n"
        "kv:\n"
        "  block_tokens: 4\n"
        "saturation_tokens: 8\n"
        "forward:\n"
        "  linear:\n"
        "    base_ms: 2\n"
        "    slope_ms_per_token: 0.5\n"
        "swap:\n"
        "  h2d:\n"
        "    bytes: [4096]\n"
        "    gbps: [25]\n"
        "  d2h:\n"
        "    bytes: [4096]\n"
        "    gbps: [25]\n"
        "  duplex_factor: 0.8\n"
        "  per_copy_overhead_us: 0\n");
}

TEST_CASE("awkward strings and doubles round-trip exactly, provenance order kept") {
  Profile p = load_profile(isim::test::data_dir() + "/profile-tables-small.yaml");
  p.provenance = {{"source", "measured"},
                  {"zeta", "a: b # c"},
                  {"quote", "say \"hi\"\n\tback\\slash\r"},
                  {"empty", ""},
                  {"nully", "null"},
                  {"tilde", "~"},
                  {"lead", " space "},
                  {"utf8", "\xC2\xB5s \xE2\x86\x92 ok"},
                  {"dash", "-x"},
                  {"control", "a\x01z\x7F"},
                  {"key: with colon", "[not, a, list]"},
                  {"alpha", "{not: a map}"}};
  p.device.name = "GPU #1: 'quoted'";
  p.model.name = "&anchor";
  p.device.memory_gib = 0.1 + 0.2;
  p.model.params = 6.05e9;
  p.tables.overhead_us = 1e-7;
  p.tables.dense_us = Curve1D{{1, 1e300}, {123456789.123, 5e-324}};
  p.swap.duplex_factor = 1.0 / 3.0;
  const std::string text = to_text(p);
  const Profile back = parse_profile(text, "written");
  CHECK(back == p);
  REQUIRE(back.provenance.size() == p.provenance.size());
  for (std::size_t i = 0; i < p.provenance.size(); ++i) {
    CHECK(back.provenance[i] == p.provenance[i]);
  }
  CHECK(back.device.memory_gib == 0.1 + 0.2);
  CHECK(back.tables.dense_us.y[1] == 5e-324);
  CHECK(to_text(back) == text);
  CHECK(text.find("memory_gib: 0.30000000000000004\n") != std::string::npos);
  CHECK(text.find("  source: measured\n") != std::string::npos);
}

TEST_CASE("write_profile_file and load_profile round-trip through a file") {
  const Profile p = load_profile(isim::test::data_dir() + "/profile-tables-small.yaml");
  const std::string path =
      (std::filesystem::temp_directory_path() / "isim_test_profile_roundtrip.yaml").string();
  isim::sim::write_profile_file(path, p);
  const Profile back = load_profile(path);
  CHECK(back == p);
  CHECK(back.path == path);
  std::remove(path.c_str());
  CHECK_THROWS_WITH_AS(isim::sim::write_profile_file("/nonexistent-dir/x.yaml", p),
                       "/nonexistent-dir/x.yaml: cannot open for writing", InputError);
}

TEST_CASE("Profile equality ignores the path and the inactive forward form") {
  Profile a = load_profile(isim::test::data_dir() + "/profile-linear-small.yaml");
  Profile b = a;
  b.path = "elsewhere";
  b.tables.overhead_us = 99;
  CHECK(a == b);
  b.linear.base_ms = 3;
  CHECK_FALSE(a == b);
  b = a;
  b.provenance[1].second = "other";
  CHECK_FALSE(a == b);
  b = a;
  b.swap.duplex_factor = 0.9;
  CHECK_FALSE(a == b);
  b = a;
  b.form = ForwardForm::kTables;
  CHECK_FALSE(a == b);
}

TEST_CASE("describe_profile summarises the shipped profile") {
  const std::string d = isim::sim::describe_profile(load_profile(shipped_path()));
  CAPTURE(d);
  CHECK(d.find("provenance: source=published") != std::string::npos);
  CHECK(d.find("device: A100-SXM4-80GB, 80 GiB") != std::string::npos);
  CHECK(d.find("model: gpt-j-6b, 28 layers") != std::string::npos);
  CHECK(
      d.find("kv: 458752 bytes per token (448 KiB), 16 tokens per block = 7340032 bytes (7 MiB)") !=
      std::string::npos);
  CHECK(d.find("forward: linear, T(x) = 10 ms + 0.0463 ms/token * x") != std::string::npos);
  CHECK(
      d.find("T(1) = 10.0463 ms, T(384) = 27.7792 ms (saturation), marginal a = 46300 ns/token") !=
      std::string::npos);
  CHECK(d.find("swap: h2d 25 GB/s at 1 MiB, 25 GB/s at 64 MiB; d2h 25 GB/s at 1 MiB, 25 GB/s at "
               "64 MiB") != std::string::npos);
  CHECK(d.find("duplex factor 0.8, per-copy overhead 0 us") != std::string::npos);

  const std::string t = isim::sim::describe_profile(
      load_profile(isim::test::data_dir() + "/profile-tables-small.yaml"));
  CAPTURE(t);
  CHECK(t.find("forward: tables per layer, dense 3 points, decode attention 2x2, prefill "
               "attention 2x2, lm_head 2 points, overhead 40 us") != std::string::npos);
  CHECK(t.find("T(1) = 0.067 ms, T(8) = 0.125 ms (saturation), marginal a = 10000 ns/token") !=
        std::string::npos);
  CHECK(t.find("h2d 20.48 GB/s (extrapolated) at 1 MiB") != std::string::npos);
}

// ---- validation: every error path, message prefix checked ----

TEST_CASE("file and YAML-level errors") {
  const std::string missing = isim::test::data_dir() + "/no-such-profile.yaml";
  CHECK_THROWS_WITH_AS((void)load_profile(missing), (missing + ": cannot open").c_str(),
                       InputError);

  const std::string t = tables_text();
  const std::string bad = edit(t, "  memory_gib: 1\n", "  memory_gib: [1\n");
  expect_error(bad, "t.yaml:");
  CHECK(error_of(bad).find("invalid YAML: ") != std::string::npos);
  const std::string bad2 = edit(t, "  memory_gib: 1\n", "  memory_gib: 1: 2\n");
  expect_error(bad2, at(bad2, "memory_gib: 1: 2") + "invalid YAML: ");

  expect_error(t + "---\nschema: isim-profile/1\n", "t.yaml: expected one YAML document, found 2");
  expect_error("", "t.yaml: expected one YAML document, found 0");
  expect_error("- 1\n- 2\n",
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
                          "kv_heads, head_dim, ffn, vocab, dtype, params, tp)");
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
                           "prefill_interpolation, mixed_attention_us, allreduce_us)");
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
        "memory_gib:", "device.memory_gib: must be > 0 (a size), got -1");
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
