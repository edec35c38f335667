// The llmservingsim importer at tp 2, for a MoE model and with the ragged-decode fit, on
// tests/data/llmservingsim-{tp2,moe}-excerpt (rows cut unchanged from LLMServingSim's
// RTXPRO6000 llama-3.1-8b-tp2 and qwen3-30b-a3b folders), every expected value worked out by
// hand; then every shared table folder at its own tp (skipped without ../shared/data).
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "calibrate/analytic.h"
#include "calibrate/import_llmservingsim.h"
#include "calibrate/import_llmservingsim_parts.h"
#include "calibrate/model.h"
#include "core/input_error.h"
#include "sim/cost_model.h"
#include "tests/cli_helpers.h"
#include "tests/input_error_text.h"
#include "tests/test_paths.h"

namespace fs = std::filesystem;
using isim::calib::import_llmservingsim;
using isim::calib::LlmServingSimOptions;
using isim::calib::ModelSpec;

namespace {

const std::string kTp2 = isim::test::data_dir() + "/llmservingsim-tp2-excerpt";
const std::string kMoe = isim::test::data_dir() + "/llmservingsim-moe-excerpt";

ModelSpec tp_model(const std::string& name) {
  return isim::calib::load_model(isim::test::source_dir() + "/calibrate/models/" + name + ".yaml");
}

// Qwen3-30B-A3B-Instruct-2507 (../shared/data/llmservingsim/models/*.json): 48 layers, hidden
// 2048, 32 heads (4 KV) x 128, intermediate 6144 (unused: every layer is MoE), vocab 151936,
// 128 experts of 768, 8 per token. Per layer q 2048x4096 + k, v 2 x 2048x512 + o 4096x2048 +
// q/k norms 256 + 2 norms 4096 + router 2048x128 + experts 128 x 3 x 2048x768 = 623,120,640;
// x 48 + embedding and lm_head 2 x 151936x2048 + final norm 2048 = 30,532,122,624.
ModelSpec qwen3_moe() {
  ModelSpec m;
  isim::sim::ModelShape& s = m.shape;
  s.name = "qwen3-30b-a3b";
  s.layers = 48;
  s.hidden = 2048;
  s.heads = 32;
  s.kv_heads = 4;
  s.head_dim = 128;
  s.ffn = 6144;
  s.vocab = 151936;
  s.dtype = "bf16";
  s.params = 30532122624.0;
  m.shape.moe = {128, 8, 768, 0, 0};
  m.shape.active_params = 3353032704.0;
  m.source = "Qwen/Qwen3-30B-A3B-Instruct-2507 config.json (built in the test)";
  m.max_position = 262144;
  return m;
}

LlmServingSimOptions tp_opts(int tp) {
  LlmServingSimOptions o;
  o.tp = tp;
  return o;
}

std::string tp_error(const std::string& dir, const ModelSpec& m, const LlmServingSimOptions& o) {
  return isim::test::error_of_call([&] { import_llmservingsim(dir, m, o); });
}

fs::path tp_copy(const std::string& from, const std::string& name) {
  const fs::path d = isim::test::scratch("import-lss-tp-" + name);
  for (const auto& e : fs::directory_iterator(from))
    fs::copy_file(e.path(), d / e.path().filename());
  for (const auto& e : fs::directory_iterator(d))
    fs::permissions(e.path(), fs::perms::owner_write, fs::perm_options::add);
  return d;
}

void tp_append(const fs::path& p, const std::string& line) {
  std::ofstream(p, std::ios::app) << line;
}

bool tp_has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("llmservingsim import at tp 2: one rank's tables plus a ring all-reduce per layer") {
  const auto p = import_llmservingsim(kTp2, tp_model("llama-3.1-8b"), tp_opts(2));
  CHECK(p.model.tp == 2);
  // gate_up_proj at 1 token: 80.288 us (the tp-1 folder's is about twice that).
  // dense(1) = qkv 21.824 + 2 x layernorm 2.416 + rotary 2.10133 + o 13.718 + gate_up 80.288
  // + act 1.77067 + down 45.0773 + (embedding 3.11467 + final_layernorm 2.42167) / 32.
  CHECK(p.tables.dense_us.y.front() == doctest::Approx(169.784).epsilon(1e-9));
  // RTX PRO 6000 (no NVLink): PCIe Gen5 x16 64 GB/s x link 0.75 = 48 GB/s, 5 us a call.
  // 2 tokens x 4096 x 2 B = 16,384 B: 5 + 2 x 1/2 x 16384 / 48e9 s = 5.341333 us -> 5.341.
  const auto& ar = p.tables.allreduce_us;
  REQUIRE(ar.x.size() == 4);
  CHECK(ar.x[1] == 16384);
  CHECK(ar.y[1] == 5.341);
  // In a forward pass: two per layer, 32 layers.
  isim::sim::Profile no_ar = p;
  no_ar.tables.allreduce_us = {};
  isim::sim::BatchShape b;
  b.total_tokens = 2;
  b.num_decode = 2;
  b.decode_kv_tokens = 32;
  b.num_logits = 2;
  CHECK(isim::sim::CostModel(p).forward(b) - isim::sim::CostModel(no_ar).forward(b) ==
        32 * 2 * 5341);
  CHECK(tp_has(p.provenance_value("tables_tp"), "measured on ONE GPU"));
  CHECK(
      tp_has(p.provenance_value("tp_check"),
             "lm_head at 1 sequence takes 356.181 us; at tp 2 it streams vocab 128256 x hidden "
             "4096 x 2 B / 2 = 0.5253 GB of weights, i.e. 1475 GB/s = 0.82 of RTX-PRO-6000-96GB"));
  CHECK(tp_has(p.provenance_value("allreduce_rule"), "PCIe Gen5 x16"));
  // The ragged-decode fit of tp 2: alpha_default and the four cells, labels read as edges.
  const auto& s = p.tables.decode_skew;
  CHECK(s.alpha_default == 0.0654);
  REQUIRE(s.cells.size() == 4);
  CHECK(s.cells[1] == isim::sim::DecodeSkew::Cell{0, 2, 0.7, 1024, 0, 0.5501});
  CHECK(s.cells[3] == isim::sim::DecodeSkew::Cell{0, 4, 0.4, 16384, 0, 0.0157});
  CHECK(s.kp_bins.front() == -1);
}

TEST_CASE("llmservingsim import at tp 2 with the all-reduce from a given link") {
  LlmServingSimOptions o = tp_opts(2);
  o.link_gbps = 100;  // NVLink-like: 75 GB/s reached
  o.allreduce_latency_us = 10;
  const auto p = import_llmservingsim(kTp2, tp_model("llama-3.1-8b"), o);
  // 10 + 16384 / 75e9 s = 10.218453 us -> 10.218.
  CHECK(p.tables.allreduce_us.y[1] == 10.218);
  CHECK(tp_has(p.provenance_value("allreduce_rule"), "--link-gbps"));
}

TEST_CASE("llmservingsim import at tp 2 with the all-reduce from an aiconfigurator table") {
  LlmServingSimOptions o = tp_opts(2);
  o.allreduce_dir = isim::test::data_dir() + "/aiconfigurator-excerpt";
  o.allreduce = "vllm_graph";
  const auto p = import_llmservingsim(kTp2, tp_model("llama-3.1-8b"), o);
  // custom_allreduce_perf.csv, vllm_graph, bfloat16, 2 GPUs: 128 elements (256 B) in
  // 0.00437792 ms -> 4.378 us.
  CHECK(p.tables.allreduce_us.x.front() == 256);
  CHECK(p.tables.allreduce_us.y.front() == 4.378);
  CHECK(tp_has(p.provenance_value("allreduce_rule"), "not on NVIDIA RTX PRO 6000"));
}

TEST_CASE("isim profile import --from llmservingsim --tp 2 writes a profile that loads") {
  const fs::path out = isim::test::scratch("import-lss-tp-cli") / "p.yaml";
  std::string err;
  CHECK(isim::test::run_bin(
            "isim",
            "profile import --from llmservingsim --model " + isim::test::source_dir() +
                "/calibrate/models/llama-3.1-8b.yaml --tp 2 " + kTp2 + " --out " + out.string(),
            nullptr, &err) == 0);
  const auto p = isim::sim::load_profile(out.string());
  CHECK(p.model.tp == 2);
  CHECK(p.tables.allreduce_us.y[1] == 5.341);
  CHECK(p.tables.decode_skew.cells.size() == 4);
  CHECK(isim::test::run_bin("isim",
                            "profile import --from llmservingsim --model " +
                                isim::test::source_dir() + "/calibrate/models/llama-3.1-8b.yaml " +
                                kTp2 + " --out " + out.string(),
                            nullptr, &err) == 2);
  CHECK(tp_has(err, "lm_head: these tables cannot be tp 1"));
}

TEST_CASE("llmservingsim import: the tables' tp is checked against --tp") {
  const auto llama = tp_model("llama-3.1-8b");
  // The tp-2 folder read as tp 1: lm_head at one sequence would stream 1.05 GB in 356 us.
  CHECK(tp_has(tp_error(kTp2, llama, tp_opts(1)),
               kTp2 + "/per_sequence.csv: lm_head: these tables cannot be tp 1 of model "
                      "llama-3.1-8b: lm_head at 1 sequence takes 356.181 us"));
  CHECK(tp_has(tp_error(kTp2, llama, tp_opts(1)), "= 1.65 of RTX-PRO-6000-96GB's 1792 GB/s"));
  // tp 4: not a degree meta.yaml lists.
  CHECK(tp_has(tp_error(kTp2, llama, tp_opts(4)), "tp 4: only tp 1, 2 in"));
  // tp 3 is listed nowhere and divides nothing.
  CHECK(tp_has(tp_error(kTp2, llama, tp_opts(3)), "tp 3: only tp 1, 2 in"));
  // A meta.yaml that says the engine itself ran tp 2: where its all-reduce falls is unknown.
  const fs::path d = tp_copy(kTp2, "engine-tp");
  std::string meta = isim::test::slurp(d / "meta.yaml");
  meta.replace(meta.find("tensor_parallel_size: 1"), 23, "tensor_parallel_size: 2");
  std::ofstream(d / "meta.yaml") << meta;
  CHECK(tp_has(tp_error(d.string(), llama, tp_opts(2)),
               "engine_effective.tensor_parallel_size: 2: expected 1"));
}

TEST_CASE("llmservingsim import of a MoE model: moe.csv, qk_norm, no dense FFN") {
  const auto p = import_llmservingsim(kMoe, qwen3_moe(), tp_opts(1));
  // dense(1) = qkv 0.. : every op of the excerpt at 1 token, no FFN op; qk_norm counted once.
  CHECK(tp_has(p.provenance_value("dense_rule"), "+ qk_norm"));
  CHECK(tp_has(p.provenance_value("dense_rule"), "every layer's FFN is the MoE block"));
  // moe_us: tokens [1, 2, 4] x experts [8, 16, 32]; the cells the profiler skips (1 token x 16
  // or 32 experts, 2 x 32) take the same experts' time at the next measured token count.
  const auto& g = p.tables.moe_us;
  CHECK(g.x == std::vector<double>{1, 2, 4});
  CHECK(g.y == std::vector<double>{8, 16, 32});
  CHECK(g.z == std::vector<double>{50.23, 134.976, 234.315, 56.192, 134.976, 234.315, 56.64,
                                   135.221, 234.315});
  CHECK(tp_has(p.provenance_value("moe_rule"), "6 cells measured, 3 filled"));
  // 2 tokens: 128 (1 - (15/16)^2) = 15.5 experts; 56.192 + 7.5/8 x (134.976 - 56.192) = 130.052.
  bool outside = true;
  CHECK(isim::sim::moe_layer_us(p.model, p.tables, 2, &outside) == doctest::Approx(130.052));
  CHECK_FALSE(outside);
  CHECK(p.tables.decode_skew.alpha_default == 0.0645);
}

TEST_CASE("llmservingsim import of a MoE model without moe.csv: the grouped-GEMM roofline") {
  const fs::path d = tp_copy(kMoe, "no-moe");
  fs::remove(d / "moe.csv");
  const auto p = import_llmservingsim(d.string(), qwen3_moe(), tp_opts(1));
  CHECK(p.tables.moe_us.empty());
  CHECK(p.tables.moe_roofline == isim::sim::MoeRoofline{503.8, 1792, 0.7, 0.8});
  CHECK(tp_has(p.provenance_value("moe_rule"), "no moe.csv in this folder"));
}

TEST_CASE("llmservingsim import: bad MoE and skew input names the file and line") {
  const auto m = qwen3_moe();
  SUBCASE("a missing moe.csv column") {
    const fs::path d = tp_copy(kMoe, "moe-column");
    std::ofstream(d / "moe.csv") << "tokens,experts,time_us\n1,8,50\n";
    CHECK(tp_error(d.string(), m, tp_opts(1)) ==
          (d / "moe.csv").string() +
              ": activated_experts: missing (columns: tokens, experts, time_us)");
  }
  SUBCASE("more experts than the model has") {
    const fs::path d = tp_copy(kMoe, "moe-experts");
    tp_append(d / "moe.csv", "8,200,400\n");
    CHECK(tp_has(
        tp_error(d.string(), m, tp_opts(1)),
        (d / "moe.csv").string() + ":8: activated_experts: expected an integer from 1 to 128"));
  }
  SUBCASE("moe.csv with a dense model") {
    CHECK(tp_has(tp_error(kMoe, tp_model("qwen3-32b"), tp_opts(1)), "does not match model"));
    auto dense = m;
    dense.shape.moe = {};
    CHECK(tp_error(kMoe, dense, tp_opts(1)) ==
          kMoe +
              "/moe.csv: model qwen3-30b-a3b has no experts (a MoE table for a dense model: "
              "is --model the folder's model?)");
  }
  SUBCASE("an unknown skew_fit label, a bad pc, a duplicate bucket") {
    const fs::path d = tp_copy(kTp2, "skew");
    const std::string text = isim::test::slurp(d / "skew_fit.csv");
    tp_append(d / "skew_fit.csv", "0,n<=3,sr<=70%,kvB<=1k,kp=0,0.1,2\n");
    CHECK(tp_error(d.string(), tp_model("llama-3.1-8b"), tp_opts(2)) ==
          (d / "skew_fit.csv").string() +
              ":6: n_label: unknown label 'n<=3' (meta.yaml bucket_axes: n<=128, n<=16, n<=2, "
              "n<=256, n<=32, n<=4, n<=64, n<=8, n>256)");
    std::ofstream(d / "skew_fit.csv") << text << "x,n<=2,sr<=70%,kvB<=1k,kp=0,0.1,2\n";
    CHECK(tp_has(tp_error(d.string(), tp_model("llama-3.1-8b"), tp_opts(2)),
                 (d / "skew_fit.csv").string() + ":6: pc: expected a number, got 'x'"));
    std::ofstream(d / "skew_fit.csv") << text << "0,n<=2,sr<=70%,kvB<=1k,kp=0,0.1,2\n";
    CHECK(tp_error(d.string(), tp_model("llama-3.1-8b"), tp_opts(2)) ==
          (d / "skew_fit.csv").string() +
              ":6: duplicate bucket (the same pc and labels as an earlier row)");
  }
}

TEST_CASE("the known-hardware figures are calibrate/gpus' sheets") {
  for (const auto& h : isim::calib::lss::known_hardware()) {
    CAPTURE(h.id);
    const auto g =
        isim::calib::load_gpu_spec(isim::test::source_dir() + "/calibrate/gpus/" + h.gpu_spec);
    CHECK(g.name == h.spec.name);
    CHECK(g.bf16_dense_tflops == h.spec.bf16_dense_tflops);
    CHECK(g.hbm_gbps == h.spec.hbm_gbps);
    CHECK(g.memory_gib == h.spec.memory_gib);
    CHECK(g.pcie_gen == h.spec.pcie_gen);
    CHECK(g.pcie_gbps == h.spec.pcie_gbps);
    CHECK(g.nvlink_gbps == h.spec.nvlink_gbps);
  }
}

namespace {
const std::string kSharedLss = isim::test::shared_data() + "/llmservingsim";
}

TEST_CASE("every shared table folder imports at its tp" *
          doctest::skip(isim::test::absent(!fs::exists(kSharedLss +
                                                       "/RTXPRO6000-qwen3-30b-a3b")))) {
  struct Folder {
    std::string dir;
    ModelSpec model;
    int tp;
  };
  const Folder folders[] = {
      {"RTX4090-llama-3.1-8b", tp_model("llama-3.1-8b"), 1},
      {"RTXPRO6000-llama-3.1-8b", tp_model("llama-3.1-8b"), 1},
      {"RTXPRO6000-llama-3.1-8b-tp2", tp_model("llama-3.1-8b"), 2},
      {"RTXPRO6000-qwen3-32b", tp_model("qwen3-32b"), 1},
      {"RTXPRO6000-qwen3-32b-tp2", tp_model("qwen3-32b"), 2},
      {"RTXPRO6000-qwen3-30b-a3b", qwen3_moe(), 1},
      {"RTXPRO6000-qwen3-30b-a3b-tp2", qwen3_moe(), 2},
  };
  for (const Folder& f : folders) {
    CAPTURE(f.dir);
    const auto p = import_llmservingsim(kSharedLss + "/" + f.dir, f.model, tp_opts(f.tp));
    CHECK(p.model.tp == f.tp);
    CHECK(p.tables.allreduce_us.empty() == (f.tp == 1));
    // The RTX 4090 folder's meta.yaml has skew_fit disabled (no bucket axes, no alpha_default).
    if (f.dir == "RTX4090-llama-3.1-8b")
      CHECK(p.tables.decode_skew.cells.empty());
    else
      CHECK(p.tables.decode_skew.cells.size() > 3000);
    CHECK(p.tables.moe_us.empty() == (f.dir != "RTXPRO6000-qwen3-30b-a3b"));
    CHECK(p.tables.moe_roofline.given() == (f.dir == "RTXPRO6000-qwen3-30b-a3b-tp2"));
    // The other degree is refused (tp 2 for the RTX 4090 folder, which lists only 1).
    CHECK_THROWS_AS(import_llmservingsim(kSharedLss + "/" + f.dir, f.model, tp_opts(3 - f.tp)),
                    isim::InputError);
    // A 64-decode step with the same 65,528 KV tokens, uniform at the mean and ragged (8 at
    // 4,096, 56 at 585): the fit moves the ragged one (skew rate 0.125, kv_big 4,096).
    isim::sim::BatchShape b;
    b.total_tokens = 64;
    b.num_decode = 64;
    b.num_logits = 64;
    b.decode_kv_tokens = 8 * 4096 + 56 * 585;
    b.decode_kv_max = 4096;
    b.decode_kv_min = 585;
    const isim::sim::CostModel cm(p);
    isim::sim::BatchShape u = b;
    u.decode_kv_max = u.decode_kv_min = 0;
    CHECK((cm.forward(b) != cm.forward(u)) == p.tables.decode_skew.given());
    // At tp 1 the measured MoE layer and the roofline the tp-2 profile uses agree within 10%
    // at 512 tokens (912.0 us measured, 842.6 us roofline).
    if (!p.tables.moe_us.empty()) {
      isim::sim::TablesForward roof = p.tables;
      roof.moe_us = {};
      roof.moe_roofline = {503.8, 1792, 0.7, 0.8};
      const double measured = isim::sim::moe_layer_us(p.model, p.tables, 512, nullptr);
      CHECK(isim::sim::moe_layer_us(p.model, roof, 512, nullptr) ==
            doctest::Approx(measured).epsilon(0.1));
    }
  }
}

TEST_CASE("llmservingsim import clips a skew cell's alpha to [-0.2, 1]") {
  // The tp-2 excerpt with two cells added whose alpha lies outside: -735 (as some published
  // cells do) and 3.2; the four cells inside keep theirs.
  const fs::path dir = isim::test::scratch("lss-skew-clip");
  fs::copy(kTp2, dir, fs::copy_options::recursive);
  std::ofstream(dir / "skew_fit.csv", std::ios::app)
      << "0,n<=8,sr<=5%,kvB<=1k,kp=0,-735,1\n0,n<=16,sr<=5%,kvB<=1k,kp=0,3.2,2\n";
  const auto p = import_llmservingsim(dir.string(), tp_model("llama-3.1-8b"), tp_opts(2));
  const auto& cells = p.tables.decode_skew.cells;
  REQUIRE(cells.size() == 6);
  CHECK(cells[1].alpha == 0.5501);
  CHECK(cells[4] == isim::sim::DecodeSkew::Cell{0, 8, 0.05, 1024, 0, -0.2});
  CHECK(cells[5] == isim::sim::DecodeSkew::Cell{0, 16, 0.05, 1024, 0, 1.0});
  CHECK(tp_has(p.provenance_value("decode_skew_rule"), "2 cells outside [-0.2, 1] clipped to it"));
}

TEST_CASE("llmservingsim import of a MoE model: the knee is read on dense_us plus the MoE layer") {
  // The excerpt's dense_us per layer (2 layernorm + qkv_proj + rotary_emb + o_proj + qk_norm +
  // (embedding + final_layernorm) / 48): 25.5419 us at 1 token, 30.28168 at 2, 30.71859 at 4.
  // Alone, (T(2) - T(1)) / 1 = 4.74 is not within 15% of (T(4) - T(2)) / 2 = 0.2185: knee 2.
  const auto base = import_llmservingsim(kMoe, qwen3_moe(), tp_opts(1));
  CHECK(base.saturation_tokens == 2);
  // A MoE layer of 1000 us a token whatever the experts (every layer is MoE, 48/48): the sums
  // are 1025.5419, 2030.28168, 4030.71859; (T(4) - T(2)) / 2 = 1000.2185 and T(2) - T(1) =
  // 1004.7398 lie within 15%: knee 1.
  const fs::path d = tp_copy(kMoe, "moe-knee");
  std::ofstream(d / "moe.csv") << "tokens,activated_experts,time_us\n1,8,1000\n2,8,2000\n"
                                  "2,16,2000\n4,8,4000\n4,16,4000\n4,32,4000\n";
  const auto p = import_llmservingsim(d.string(), qwen3_moe(), tp_opts(1));
  CHECK(p.saturation_tokens == 1);
  CHECK(tp_has(p.provenance_value("saturation_rule"), "knee of dense_us + 48/48 of the MoE layer"));
}

TEST_CASE("llmservingsim import: a skew_fit or per_tp that is not a map is named, not a crash") {
  // The meta.yaml of the tp-2 excerpt cut before its skew_fit section, then a scalar in its
  // place (a fuzzer found that yaml-cpp's subscript of a scalar threw past the importer).
  const auto cut = [](const std::string& name, const std::string& tail) {
    const fs::path d = tp_copy(kTp2, name);
    const std::string meta = isim::test::slurp(d / "meta.yaml");
    std::ofstream(d / "meta.yaml") << meta.substr(0, meta.find("skew_fit:")) << tail;
    return d.string();
  };
  const auto llama = tp_model("llama-3.1-8b");
  const std::string scalar = cut("skew-scalar", "skew_fit: 3\n");
  CHECK(tp_error(scalar, llama, tp_opts(2)) ==
        scalar + "/meta.yaml:53: skew_fit: expected a map (enabled, bucket_axes, per_tp)");
  const std::string per_tp = cut("skew-per-tp",
                                 "skew_fit:\n  enabled: true\n  bucket_axes: {}\n"
                                 "  per_tp: 2\n");
  CHECK(tp_has(tp_error(per_tp, llama, tp_opts(2)),
               "skew_fit.per_tp.2.alpha_default: missing (no fitted alpha for tp 2)"));
}
