// Profiles: loading, writing back, describing.
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
  // Rising, as a time table must (sim/profile_consistency.h), from the smallest denormal.
  p.tables.dense_us = Curve1D{{1, 1e300}, {5e-324, 123456789.123}};
  p.swap.duplex_factor = 1.0 / 3.0;
  const std::string text = to_text(p);
  const Profile back = parse_profile(text, "written");
  CHECK(back == p);
  REQUIRE(back.provenance.size() == p.provenance.size());
  for (std::size_t i = 0; i < p.provenance.size(); ++i) {
    CHECK(back.provenance[i] == p.provenance[i]);
  }
  CHECK(back.device.memory_gib == 0.1 + 0.2);
  CHECK(back.tables.dense_us.y[0] == 5e-324);
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
                       "/nonexistent-dir/x.yaml: cannot write: No such file or directory",
                       InputError);
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
  CHECK(d.find("swap (PCIe): h2d 25 GB/s at 1 MiB, 25 GB/s at 64 MiB\n"
               "      d2h 25 GB/s at 1 MiB, 25 GB/s at 64 MiB\n") != std::string::npos);
  CHECK(d.find("duplex factor 0.8, per-copy overhead 0 us") != std::string::npos);

  const std::string t = isim::sim::describe_profile(
      load_profile(isim::test::data_dir() + "/profile-tables-small.yaml"));
  CAPTURE(t);
  CHECK(t.find("forward: tables per layer, dense 3 points, decode attention 2x2, prefill "
               "attention 2x2, lm_head 2 points, overhead 40 us") != std::string::npos);
  CHECK(t.find("T(1) = 0.067 ms, T(8) = 0.125 ms (saturation), marginal a = 10000 ns/token") !=
        std::string::npos);
  CHECK(t.find("h2d 20.48 GB/s (extrapolated) at 1 MiB") != std::string::npos);
  // 32 tokens x 10 us + 2 layers x prefill_attention(32, 0), extrapolated along the chunk axis
  // (1 us at 1, 16 at 16: 32 us) = 384 us.
  CHECK(t.find("recompute of a 32-token chunk at position 0, 1K, 8K, 32K, 128K: 0.384, ") !=
        std::string::npos);
}

// ---- validation: every error path, message prefix checked ----
