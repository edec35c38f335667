// The llmservingsim importer on tests/data/llmservingsim-excerpt (rows cut unchanged from
// LLMServingSim's RTX4090-llama-3.1-8b perf dir), with every expected value worked out by hand.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "calibrate/import_llmservingsim.h"
#include "calibrate/model.h"
#include "core/input_error.h"
#include "sim/profile.h"
#include "tests/cli_helpers.h"

namespace fs = std::filesystem;
using isim::InputError;
using isim::calib::import_llmservingsim;
using isim::calib::LlmServingSimOptions;

namespace {

const std::string kExcerpt = std::string(ISIM_SOURCE_DIR) + "/tests/data/llmservingsim-excerpt";
const std::string kModel = std::string(ISIM_SOURCE_DIR) + "/calibrate/models/llama-3.1-8b.yaml";

isim::calib::ModelSpec llama() {
  return isim::calib::load_model(kModel);
}

// A writable copy of the excerpt, for the error cases.
fs::path copy_excerpt(const std::string& name) {
  const fs::path d = isim::test::scratch("import-lss-" + name);
  for (const auto& e : fs::directory_iterator(kExcerpt))
    fs::copy_file(e.path(), d / e.path().filename());
  return d;
}

void spit(const fs::path& p, const std::string& text) {
  fs::permissions(p, fs::perms::owner_write, fs::perm_options::add);
  std::ofstream(p) << text;
}

std::string replace(std::string s, const std::string& from, const std::string& to) {
  const auto at = s.find(from);
  REQUIRE(at != std::string::npos);
  return s.replace(at, from.size(), to);
}

std::string error_of(const std::string& dir, const isim::calib::ModelSpec& m,
                     const LlmServingSimOptions& o = {}) {
  try {
    import_llmservingsim(dir, m, o);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("llmservingsim import: tables from the excerpt, by hand") {
  const isim::sim::Profile p = import_llmservingsim(kExcerpt, llama());
  const auto& t = p.tables;
  CHECK(p.form == isim::sim::ForwardForm::kTables);

  // dense_us = qkv + 2 layernorm + rotary + o + gate_up + act + down + (embedding + final)/32:
  //  1: 54.898 + 3.70166 + 2.17567 + 38.1313 + 247.292 + 2.592 + 126.766 + 4.77867/32
  //     = 475.55663 + 0.14933 = 475.70596 -> 475.706
  //  2: 56.3203 + 4.03134 + 2.35733 + 40.8427 + 249.089 + 3.18967 + 128.897 + 5.696/32
  //     = 484.72734 + 0.178 = 484.90534 -> 484.905
  //  4: 56.3483 + 3.957 + 2.35733 + 40.9037 + 249.85 + 3.179 + 128.727 + 6.17566/32
  //     = 485.32233 + 0.19299 = 485.51532 -> 485.515
  CHECK(t.dense_us.x == std::vector<double>{1, 2, 4});
  CHECK(t.dense_us.y == std::vector<double>{475.706, 484.905, 485.515});

  // lm_head_us = lm_head + sampler: 1096.93 + 25.001, 1102.86 + 26.932, 1106.89 + 27.071.
  CHECK(t.lm_head_us.x == std::vector<double>{1, 2, 4});
  CHECK(t.lm_head_us.y == std::vector<double>{1121.931, 1129.792, 1133.961});

  // Decode: rows n=1 {16: 9.31067, 32: 9.34367}, n=2 {16: 13.589, 32: 13.7583}; totals
  // {16, 32, 64}.
  //  n=1: T=16 -> 9.311; T=32 -> 9.344; T=64 (kv 64) extrapolated: 9.34367 + 32 * 0.033/16
  //       = 9.40967 -> 9.41
  //  n=2: T=16 (kv 8) extrapolated: 13.589 - 8 * 0.1693/16 = 13.50435 -> 13.504;
  //       T=32 (kv 16) -> 13.589; T=64 (kv 32) -> 13.758
  CHECK(t.decode_attention_us.x == std::vector<double>{1, 2});
  CHECK(t.decode_attention_us.y == std::vector<double>{16, 32, 64});
  CHECK(t.decode_attention_us.z == std::vector<double>{9.311, 9.344, 9.41, 13.504, 13.589, 13.758});

  // Prefill: chunk 16 {0: 9.546, 16: 9.696, 32: 9.74933}, chunk 32 {0: 9.66367, 32: 9.791};
  // (32, 16) interpolated along kv: (9.66367 + 9.791) / 2 = 9.727335 -> 9.727.
  CHECK(t.prefill_attention_us.x == std::vector<double>{16, 32});
  CHECK(t.prefill_attention_us.y == std::vector<double>{0, 16, 32});
  CHECK(t.prefill_attention_us.z == std::vector<double>{9.546, 9.696, 9.749, 9.664, 9.727, 9.791});
  CHECK(t.overhead_us == 0);

  // Knee: reference m(2) = (485.515 - 484.905) / 2 = 0.305; m(1) = 484.905 - 475.706 = 9.199,
  // 30x the reference, so the knee is 2.
  CHECK(p.saturation_tokens == 2);
  CHECK(p.block_tokens == 16);
  CHECK(p.device.name == "NVIDIA GeForce RTX 4090");
  CHECK(p.device.memory_gib == 24);
  CHECK(p.swap.h2d_gbps.y == std::vector<double>{25, 25});
  CHECK(p.swap.d2h_gbps.y == std::vector<double>{25, 25});
  CHECK(p.model.layers == 32);
  CHECK(p.model.tp == 1);

  CHECK(p.provenance_value("source") == "imported");
  CHECK(p.provenance_value("repository") == "casys-kaist/LLMServingSim");
  CHECK(p.provenance_value("commit") == "5daddb21");
  CHECK(p.provenance_value("license") == "MIT");
  CHECK(p.provenance_value("decode_attention_rule")
            .find("4 measured, 0 interpolated, 2 extrapolated") != std::string::npos);
  CHECK(p.provenance_value("prefill_attention_rule")
            .find("5 measured, 1 interpolated, 0 extrapolated") != std::string::npos);

  // What is written reads back equal.
  std::ostringstream os;
  isim::sim::write_profile(os, p);
  CHECK(isim::sim::parse_profile(os.str(), "roundtrip") == p);
}

TEST_CASE("llmservingsim import: mixed prefill+decode rows become the mixed grid, by hand") {
  const auto& g = import_llmservingsim(kExcerpt, llama()).tables.mixed_attention_us;
  // Ten mixed rows (rounded to 1 ns): chunk 16 at n 1: (kv_prefill 0: kv_decode 16 9.696,
  // 32 9.664), (32: 9.802, 9.877); chunk 64 at n 1: (0: 10.176, 10.282), (32: 10.229, 10.315);
  // n 2: (16, 0, 2, 16) 9.685 and (32, 0, 2, 32) 9.802. Axes: the union of each column.
  CHECK(g.axes[0] == std::vector<double>{16, 32, 64});
  CHECK(g.axes[1] == std::vector<double>{0, 32});
  CHECK(g.axes[2] == std::vector<double>{1, 2});
  CHECK(g.axes[3] == std::vector<double>{16, 32});
  // Interpolation first: only chunk 32 at n 1 lies between known cells (along chunk, 1/3 of
  // the way from 16 to 64): 2/3 x 9.696 + 1/3 x 10.176 = 9.856; 2/3 x 9.664 + 1/3 x 10.282
  // = 9.87; 2/3 x 9.802 + 1/3 x 10.229 = 9.944333 -> 9.944; 2/3 x 9.877 + 1/3 x 10.315 = 10.023.
  // Then one extrapolation round: along kv_decode, the one known cell of (16, 0, 2) and of
  // (32, 0, 2) is copied; along kv_prefill the same to kv_prefill 32; along chunk, chunk 64 at
  // n 2 from 16 (9.685) and 32 (9.802): 9.685 + 3 x 0.117 = 10.036.
  const std::vector<double> want = {
      9.696,  9.664,  9.685,  9.685,  9.802,  9.877,  9.685,  9.685,   // chunk 16
      9.856,  9.87,   9.802,  9.802,  9.944,  10.023, 9.802,  9.802,   // chunk 32
      10.176, 10.282, 10.036, 10.036, 10.229, 10.315, 10.036, 10.036,  // chunk 64
  };
  CHECK(g.z == want);
  const isim::sim::Profile p = import_llmservingsim(kExcerpt, llama());
  CHECK(p.provenance_value("mixed_attention_rule")
            .find("(10 rows: one chunk and n decodes in one kernel)") != std::string::npos);
  CHECK(p.provenance_value("mixed_attention_rule")
            .find("cells: 10 measured, 4 interpolated, 10 extrapolated") != std::string::npos);
}

TEST_CASE("llmservingsim import: bad input names the file and the column") {
  const auto m = llama();
  SUBCASE("missing file") {
    const fs::path d = copy_excerpt("missing");
    fs::remove(d / "per_sequence.csv");
    CHECK(error_of(d.string(), m) ==
          (d / "per_sequence.csv").string() + ": cannot open: No such file or directory");
  }
  SUBCASE("missing column") {
    const fs::path d = copy_excerpt("column");
    spit(d / "dense.csv",
         replace(isim::test::slurp(d / "dense.csv"), "layer,tokens,time_us", "layer,tokens,t"));
    CHECK(error_of(d.string(), m) ==
          (d / "dense.csv").string() + ": time_us: missing (columns: layer, tokens, t)");
  }
  SUBCASE("not a number") {
    const fs::path d = copy_excerpt("number");
    spit(d / "attention.csv", replace(isim::test::slurp(d / "attention.csv"), "9.34367", "fast"));
    CHECK(error_of(d.string(), m) ==
          (d / "attention.csv").string() + ":3: time_us: expected a number, got 'fast'");
  }
  SUBCASE("unknown op") {
    const fs::path d = copy_excerpt("op");
    spit(d / "per_sequence.csv", isim::test::slurp(d / "per_sequence.csv") + "logits,1,3\n");
    CHECK(error_of(d.string(), m).find("per_sequence.csv:8: layer: unknown op 'logits'") !=
          std::string::npos);
  }
  SUBCASE("an op missing a token count") {
    const fs::path d = copy_excerpt("tokens");
    spit(d / "dense.csv", replace(isim::test::slurp(d / "dense.csv"), "o_proj,2,", "o_proj,3,"));
    CHECK(error_of(d.string(), m).find("op 'o_proj' does not list the same tokens") !=
          std::string::npos);
  }
  SUBCASE("unknown hardware needs memory and PCIe from the caller") {
    const fs::path d = copy_excerpt("hardware");
    spit(d / "meta.yaml",
         replace(isim::test::slurp(d / "meta.yaml"), "hardware: RTX4090", "hardware: X1"));
    CHECK(error_of(d.string(), m).find("hardware: unknown 'X1' (known: RTX4090, RTXPRO6000)") !=
          std::string::npos);
    LlmServingSimOptions o;
    o.memory_gib = 48;
    o.pcie_gbps = 12;
    const auto p = import_llmservingsim(d.string(), m, o);
    CHECK(p.device.memory_gib == 48);
    CHECK(p.swap.h2d_gbps.y.front() == 12);
  }
  SUBCASE("a model that does not match meta.yaml") {
    auto other = m;
    other.shape.kv_heads = 4;
    CHECK(error_of(kExcerpt, other)
              .find("meta.yaml:27: engine_effective.hf_overrides."
                    "num_key_value_heads: 8 does not match model") != std::string::npos);
  }
  SUBCASE("a duplicate mixed row") {
    const fs::path d = copy_excerpt("mixed-dup");
    spit(d / "attention.csv", isim::test::slurp(d / "attention.csv") + "64,32,1,32,10.4\n");
    CHECK(error_of(d.string(), m) == (d / "attention.csv").string() + ":21: duplicate measurement");
  }
  SUBCASE("tp other than 1") {
    LlmServingSimOptions o;
    o.tp = 2;
    CHECK(error_of(kExcerpt, m, o).find("tp 2: only tp 1") != std::string::npos);
  }
  // Found by tests/fuzz (corpus lss_*/regress-*): each threw YAML's own exception, cast a count
  // past int64 (undefined behaviour), or made a profile that load_profile refused.
  SUBCASE("a meta.yaml section that is not a map") {
    const fs::path d = copy_excerpt("meta-scalar");
    spit(d / "meta.yaml", replace(isim::test::slurp(d / "meta.yaml"), "engine_effective:\n",
                                  "engine_effective: o\nwas:\n"));
    CHECK(error_of(d.string(), m) ==
          (d / "meta.yaml").string() + ":12: engine_effective: expected a map, got 'o'");
  }
  SUBCASE("a count past int64, a fractional chunk") {
    const fs::path d = copy_excerpt("count");
    const std::string text = isim::test::slurp(d / "attention.csv");
    spit(d / "attention.csv", replace(text, "0,0,1,32,", "0,0,7.8e112,32,"));
    CHECK(error_of(d.string(), m) == (d / "attention.csv").string() +
                                         ":3: n_decode: expected an integer from 0 to 1000000000, "
                                         "got '7.8e112'");
    spit(d / "attention.csv", replace(text, "16,0,0,0,", "0.9,0,0,0,"));
    CHECK(error_of(d.string(), m) == (d / "attention.csv").string() +
                                         ":6: prefill_chunk: expected an integer from 0 to "
                                         "1000000000, got '0.9'");
    spit(d / "attention.csv", text);
    spit(d / "dense.csv", replace(isim::test::slurp(d / "dense.csv"), "act_fn,1,", "act_fn,1e300,"));
    CHECK(error_of(d.string(), m) == (d / "dense.csv").string() +
                                         ":2: tokens: expected an integer from 1 to 1000000000, "
                                         "got '1e300'");
  }
  SUBCASE("mixed rows spanning a grid past the cap") {
    // 40 rows (i, i, i, i) beside the excerpt's 10: axes of 41 chunks (1..40, 64), 41 cached KV
    // counts (0..40), 40 decode counts and 40 KV counts per decode.
    const fs::path d = copy_excerpt("grid");
    std::string rows;
    for (int i = 1; i <= 40; ++i) rows += fmt::format("{},{},{},{},10\n", i, i, i, i);
    spit(d / "attention.csv", isim::test::slurp(d / "attention.csv") + rows);
    CHECK(error_of(d.string(), m) ==
          (d / "attention.csv").string() +
              ": rows with prefill_chunk > 0 and n_decode > 0: their axes span a grid of 41 x 41 "
              "x 40 x 40 = 2689600 cells, more than 2000000 (the largest measured table spans "
              "57760); expected fewer distinct values per axis");
  }
  SUBCASE("times past an hour") {
    const fs::path d = copy_excerpt("hour");
    spit(d / "per_sequence.csv", replace(isim::test::slurp(d / "per_sequence.csv"), "lm_head,1,1096.93",
                                         "lm_head,1,4e9"));
    const std::string msg = error_of(d.string(), m);
    CAPTURE(msg);
    CHECK(msg.starts_with("the profile imported from " + d.string() + ":"));
    CHECK(msg.find(": forward.tables.lm_head_us.us[0]: must be at most 3600000000 us (an hour)") !=
          std::string::npos);
  }
}
