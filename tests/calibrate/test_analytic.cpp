// The analytic (roofline) profile against hand-computed values, the knee, fitting efficiency
// factors back from a profile generated with known ones, and the shipped GPU and model files.
#include <doctest/doctest.h>

#include "tests/calibrate/analytic_fixtures.h"
#include "tests/input_error_text.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "calibrate/analytic.h"
#include "calibrate/model.h"
#include "core/input_error.h"
#include "sim/cost_model.h"
#include "tests/test_paths.h"

using namespace isim;
namespace fs = std::filesystem;

namespace {

// A made-up bf16 model whose decoder layer holds W = (22,048,000 - 2 x 1000 x 1024) / 2 = 10^7
// parameters. Activations a = 4x1024 + (2x8 + 2x2)x128 + 2x4096 = 14,848 elements per token
// (29,696 bytes); KV per token per layer: 2 x 2 x 128 x 2 = 1,024 bytes.
calib::ModelSpec tiny_model() {
  calib::ModelSpec m;
  m.source = "made up for the test";
  auto& s = m.shape;
  s.name = "toy";
  s.layers = 2;
  s.hidden = 1024;
  s.heads = 8;
  s.kv_heads = 2;
  s.head_dim = 128;
  s.ffn = 4096;
  s.vocab = 1000;
  s.dtype = "bf16";
  s.params = 22048000;
  s.tp = 1;
  return m;
}

// compute 0.5, memory 0.8, attention 0.5, pcie 0.8, overhead 30 us, 0.1 us per decode sequence,
// 4 us per copy, duplex 0.8.
calib::Efficiency round_eff() {
  calib::Efficiency e;
  e.compute = 0.5;
  e.memory = 0.8;
  e.attention = 0.5;
  e.pcie = 0.8;
  e.overhead_us = 30;
  e.attention_per_seq_us = 0.1;
  e.pcie_latency_us = 4;
  e.duplex = 0.8;
  return e;
}

std::string write(const fs::path& p, const std::string& text) {
  std::ofstream(p) << text;
  return p.string();
}

fs::path scratch(const std::string& name) {
  fs::path d = fs::temp_directory_path() / (std::string("isim-test-analytic-") + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string error_of(const std::function<void()>& f) {
  return isim::test::error_of_call(f);
}

}  // namespace

TEST_CASE("roofline terms match hand-computed microseconds") {
  const calib::Roofline r(isim::test::toy_gpu(), tiny_model().shape, round_eff());
  CHECK(r.layer_params() == doctest::Approx(1e7));
  // dense compute: 2 t 1e7 / 1e14 s = 0.2 t us, / 0.5 = 0.4 t us.
  // dense memory: (2e7 + 29,696 t) B / 1e12 = 20 + 0.029696 t us, / 0.8 = 25 + 0.03712 t us.
  CHECK(r.dense_compute_us(10) == doctest::Approx(2.0));
  CHECK(r.dense_memory_us(10) == doctest::Approx(20.29696));
  CHECK(r.dense_us(1) == doctest::Approx(25.03712));  // memory-bound
  CHECK(r.dense_us(1024) == doctest::Approx(409.6));  // compute-bound (memory: 63.01088)
  // decode attention (4 sequences, 10,000 KV tokens): 10,000 x 1,024 B / 1e12 = 10.24 us, / 0.8
  // = 12.8 us, + 4 x 0.1 us = 13.2 us.
  CHECK(r.decode_attention_us(4, 10000) == doctest::Approx(13.2));
  // prefill attention (chunk 100, kv 1,000): 4 x 100 x 1,050 x 8 x 128 = 430,080,000 FLOPs =
  // 4.3008 us, / 0.5 = 8.6016 us; bytes 1,100 x 1,024 / 1e12 = 1.1264 us / 0.8 = 1.408 us.
  CHECK(r.prefill_attention_us(100, 1000) == doctest::Approx(8.6016));
  // chunk 1, kv 10,000: FLOPs 4 x 10,000.5 x 1,024 = 0.40962048 us / 0.5 = 0.81924096 us;
  // bytes 10,001 x 1,024 = 10.241024 us / 0.8 = 12.80128 us (memory-bound).
  CHECK(r.prefill_attention_us(1, 10000) == doctest::Approx(12.80128));
  // lm_head: compute 2 s x 1000 x 1024 / 1e14 = 0.02048 s us, / 0.5 = 0.04096 s us; memory
  // (2,048,000 + 4,048 s) B / 1e12 = 2.048 + 0.004048 s us, / 0.8 = 2.56 + 0.00506 s us.
  CHECK(r.lm_head_us(1) == doctest::Approx(2.56506));
  CHECK(r.lm_head_us(1000) == doctest::Approx(40.96));
  // PCIe: 4096 B / (4,000 ns + 4096 / (10 x 0.8) ns = 512 ns) = 0.9078 GB/s.
  CHECK(r.pcie_gbps(4096) == doctest::Approx(4096.0 / 4512.0));
  CHECK(r.pcie_gbps(1073741824) == doctest::Approx(1073741824.0 / 134221728.0));
}

TEST_CASE("the knee is where dense turns compute-bound") {
  const calib::Roofline r(isim::test::toy_gpu(), tiny_model().shape, round_eff());
  // 0.4 t = 25 + 0.03712 t  =>  t = 25 / 0.36288 = 68.89...
  CHECK(r.knee_tokens() == doctest::Approx(25.0 / 0.36288));
  CHECK(r.dense_compute_us(68) / 0.5 < r.dense_memory_us(68) / 0.8);
  CHECK(r.dense_compute_us(69) / 0.5 > r.dense_memory_us(69) / 0.8);

  const sim::Profile p =
      calib::analytic_profile(isim::test::toy_gpu(), tiny_model(), "toy.yaml", round_eff());
  CHECK(p.saturation_tokens == 69);
  // The knee is a grid point, so T(69) is exact: dense(69) = max(27.6, 27.56128) = 27.6 us.
  const sim::CostModel cm(p);
  CHECK(p.tables.dense_us.eval(69) == doctest::Approx(27.6));
  // T(1) = 2 layers x (dense 25.03712 + prefill(1, 0) 0.00128) + lm_head 2.56506 + 30
  //      = 82.64186 us.
  CHECK(cm.T(1) == 82642);

  // A model that never turns compute-bound (activations outweigh FLOPs): the grid's last point.
  calib::GpuSpec slow = isim::test::toy_gpu();
  slow.hbm_gbps = 1;  // 1 GB/s: bytes per token dominate at any size
  const calib::Roofline never(slow, tiny_model().shape, round_eff());
  CHECK(std::isinf(never.knee_tokens()));
  const sim::Profile q = calib::analytic_profile(slow, tiny_model(), "toy.yaml", round_eff());
  CHECK(q.saturation_tokens == 8192);
}

TEST_CASE("the analytic profile is a valid tables profile that round-trips") {
  const sim::Profile p =
      calib::analytic_profile(isim::test::toy_gpu(), tiny_model(), "toy.yaml", round_eff());
  CHECK(p.form == sim::ForwardForm::kTables);
  CHECK(p.provenance_value("source") == "analytic");
  CHECK(p.provenance_value("gpu_spec") == "toy-gpu.yaml");
  CHECK(p.provenance_value("factors").find("compute 0.5, memory 0.8, attention 0.5") !=
        std::string::npos);
  CHECK(p.swap.h2d_gbps == p.swap.d2h_gbps);
  CHECK(p.swap.duplex_factor == 0.8);
  CHECK(p.tables.overhead_us == 30);
  auto d = scratch("roundtrip");
  sim::write_profile_file((d / "p.yaml").string(), p);
  sim::Profile back = sim::load_profile((d / "p.yaml").string());
  back.path.clear();
  CHECK(back == p);
}

TEST_CASE("tensor parallelism divides FLOPs and bytes") {
  calib::ModelSpec m2 = tiny_model();
  m2.shape.tp = 2;
  const calib::Roofline one(isim::test::toy_gpu(), tiny_model().shape, round_eff());
  const calib::Roofline two(isim::test::toy_gpu(), m2.shape, round_eff());
  CHECK(two.dense_compute_us(100) == doctest::Approx(one.dense_compute_us(100) / 2));
  CHECK(two.decode_attention_us(1, 1000) ==
        doctest::Approx(one.decode_kv_us(1000) / 2 / 0.8 + 0.1));
}

TEST_CASE("tensor parallelism adds a ring all-reduce over the GPU link") {
  calib::Efficiency e = round_eff();
  e.link = 0.5;
  e.allreduce_latency_us = 5;
  calib::GpuSpec g = isim::test::toy_gpu();
  g.nvlink_gbps = 100;
  calib::ModelSpec m4 = tiny_model();
  m4.shape.tp = 4;
  // 1 MB at tp 4: 2 x 3/4 x 10^6 B / (100 GB/s x 0.5) = 30 us, + 5 us.
  CHECK(calib::Roofline(g, m4.shape, e).allreduce_us(1e6) == doctest::Approx(35));
  // Without NVLink in the spec, over PCIe (10 GB/s): 300 us + 5 us.
  CHECK(calib::Roofline(isim::test::toy_gpu(), m4.shape, e).allreduce_us(1e6) ==
        doctest::Approx(305));
  CHECK(calib::Roofline(g, tiny_model().shape, e).allreduce_us(1e6) == 0);

  calib::ModelSpec m2 = tiny_model();
  m2.shape.tp = 2;
  const sim::Profile p = calib::analytic_profile(g, m2, "toy.yaml", e);
  // Tabulated at the dense grid's token counts x 1024 hidden x 2 bytes; 1 token = 2,048 bytes:
  // 5 + 1 x 2048 / (50 GB/s) = 5.04096 us; 8192 tokens: 5 + 16,777,216 / 50,000 = 340.54432 us.
  const auto& ar = p.tables.allreduce_us;
  REQUIRE(ar.x.size() == p.tables.dense_us.x.size());
  CHECK(ar.x.front() == 2048);
  CHECK(ar.y.front() == doctest::Approx(5.04096));
  CHECK(ar.x.back() == 8192.0 * 2048);
  CHECK(ar.y.back() == doctest::Approx(340.54432));
  CHECK(p.provenance_value("tensor_parallel")
            .find("allreduce_us = 5 us + 2 x 1 / 2 x bytes / (100 GB/s NVLink x link 0.5)") !=
        std::string::npos);
  CHECK(calib::analytic_profile(g, tiny_model(), "toy.yaml", e).tables.allreduce_us.empty());
  e.link = 1.5;
  CHECK_THROWS_AS(calib::Roofline(g, m2.shape, e), InputError);
}

TEST_CASE("fitting recovers the factors a profile was generated with") {
  calib::Efficiency truth;
  truth.compute = 0.55;
  truth.memory = 0.65;
  truth.attention = 0.35;
  truth.pcie = 0.6;
  truth.overhead_us = 42;
  truth.attention_per_seq_us = 0.3;
  truth.pcie_latency_us = 6;
  truth.duplex = 0.7;
  const sim::Profile measured =
      calib::analytic_profile(isim::test::toy_gpu(), tiny_model(), "toy.yaml", truth);
  const calib::FitResult fit =
      calib::fit_efficiency(measured, isim::test::toy_gpu());  // from the defaults
  CHECK(fit.kept.empty());
  CHECK(fit.eff.compute == doctest::Approx(0.55).epsilon(1e-9));
  CHECK(fit.eff.memory == doctest::Approx(0.65).epsilon(1e-9));
  CHECK(fit.eff.attention == doctest::Approx(0.35).epsilon(1e-9));
  CHECK(fit.eff.pcie == doctest::Approx(0.6).epsilon(1e-9));
  CHECK(fit.eff.pcie_latency_us == doctest::Approx(6).epsilon(1e-9));
  CHECK(fit.eff.attention_per_seq_us == doctest::Approx(0.3).epsilon(1e-9));
  CHECK(fit.eff.overhead_us == 42);
  CHECK(fit.eff.duplex == 0.7);

  // Applied to another GPU, the fitted factors give that GPU's roofline with them.
  calib::GpuSpec other = isim::test::toy_gpu();
  other.bf16_dense_tflops = 200;
  other.hbm_gbps = 3000;
  const sim::Profile target = calib::analytic_profile(other, tiny_model(), "toy.yaml", fit.eff);
  const calib::Roofline want(other, tiny_model().shape, truth);
  CHECK(target.tables.dense_us.eval(1) == doctest::Approx(want.dense_us(1)));
  CHECK(target.tables.dense_us.eval(4096) == doctest::Approx(want.dense_us(4096)));

  // A profile with only memory-bound dense points keeps the default compute factor.
  sim::Profile small = measured;
  small.tables.dense_us.x = {1, 2, 4};
  small.tables.dense_us.y.clear();
  const calib::Roofline truth_r(isim::test::toy_gpu(), tiny_model().shape, truth);
  for (double x : small.tables.dense_us.x) small.tables.dense_us.y.push_back(truth_r.dense_us(x));
  const calib::FitResult partial = calib::fit_efficiency(small, isim::test::toy_gpu());
  CHECK(partial.eff.compute == calib::Efficiency{}.compute);
  CHECK(partial.eff.memory == doctest::Approx(0.65).epsilon(1e-9));
  REQUIRE(!partial.kept.empty());
  CHECK(partial.kept.front().find("compute") == 0);

  // A linear profile has nothing to fit.
  sim::Profile lin = measured;
  lin.form = sim::ForwardForm::kLinear;
  CHECK(error_of([&] {
          calib::fit_efficiency(lin, isim::test::toy_gpu());
        }).find("tables profile") != std::string::npos);
}

TEST_CASE("analytic profiles reject what a roofline cannot price") {
  calib::ModelSpec fp32 = tiny_model();
  fp32.shape.dtype = "fp32";
  CHECK(error_of([&] {
          calib::Roofline(isim::test::toy_gpu(), fp32.shape, round_eff());
        }).find("dtype fp32") != std::string::npos);
  calib::ModelSpec huge = tiny_model();
  huge.shape.params = 20e9;  // 37 GiB of bf16 weights on a 16 GiB GPU
  CHECK(error_of([&] {
          calib::analytic_profile(isim::test::toy_gpu(), huge, "m", round_eff());
        }).find("raise --tp") != std::string::npos);
  // 1e-300 GB/s of HBM passed load_gpu_spec and made dense times of 1e305 us, a profile that
  // isim profile analytic wrote and load_profile refused (found by tests/fuzz).
  calib::GpuSpec slow = isim::test::toy_gpu();
  slow.hbm_gbps = 1e-300;
  CHECK(error_of([&] {
          calib::analytic_profile(slow, tiny_model(), "m.yaml", round_eff());
        }).starts_with("the analytic profile of toy (m.yaml) on toy-gpu (toy-gpu.yaml):"));
  CHECK(error_of([&] {
          calib::analytic_profile(slow, tiny_model(), "m.yaml", round_eff());
        }).find(": forward.tables.dense_us.us[0]: must be at most 3600000000 us (an hour)") !=
        std::string::npos);
  calib::ModelSpec deep = tiny_model();
  deep.shape.layers = 100000000;  // KV blocks of 16 x 2 x 1e8 x 2 x 128 x 2 bytes: past 2 GiB
  deep.shape.params = 1e12;
  slow = isim::test::toy_gpu();
  slow.memory_gib = 1e6;
  CHECK(error_of([&] {
          calib::analytic_profile(slow, deep, "m.yaml", round_eff());
        }).find(": model: KV bytes per token") != std::string::npos);
  calib::Efficiency bad = round_eff();
  bad.memory = 1.5;
  CHECK(error_of([&] {
          calib::Roofline(isim::test::toy_gpu(), tiny_model().shape, bad);
        }).find("efficiency factors must be in (0, 1]") != std::string::npos);
}

TEST_CASE("a model whose KV bytes per token would overflow is refused, naming the product") {
  const fs::path d = scratch("model-kv");
  std::ifstream in(test::source_dir() + "/calibrate/models/llama-3.1-8b.yaml");
  std::string good((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto with = [&](const std::string& from, const std::string& to) {
    std::string text = good;
    text.replace(text.find(from), from.size(), to);
    return write(d / "m.yaml", text);
  };
  // Llama-3.1-8B: 2 x 32 layers x 8 kv_heads x 128 x 2 bytes = 131072 = 2^17 a token. With
  // kv_heads 8192 (heads 16384, so that heads stays a multiple) it is 2^27, the limit itself;
  // kv_heads 16384 is twice that. layers 2^31 - 1 would overflow int64 in the product.
  const std::string at = with("heads: 32\nkv_heads: 8", "heads: 16384\nkv_heads: 8192");
  CHECK(error_of([&] { calib::load_model(at); }) == "(no error)");
  const std::string over = with("heads: 32\nkv_heads: 8", "heads: 16384\nkv_heads: 16384");
  CHECK(error_of([&] { calib::load_model(over); }) ==
        over +
            ":3: layers: KV bytes per token 2 x layers 32 x kv_heads 16384 x head_dim 128 x 2 "
            "bytes = 2.68435e+08; expected at most 134217728 (128 MiB)");
  const std::string huge = with("layers: 32", "layers: 2147483647");
  CHECK(error_of([&] { calib::load_model(huge); })
            .find(":3: layers: KV bytes per token 2 x layers "
                  "2147483647 x ") != std::string::npos);
}

TEST_CASE("model files: every shipped one loads; GPT-J agrees with InferCept's profile") {
  const fs::path dir = fs::path(test::source_dir()) / "calibrate/models";
  for (const char* name : {"gpt-j-6b", "llama-2-7b", "llama-2-13b", "llama-3.1-8b", "llama-3.1-70b",
                           "qwen3-32b", "tiny"}) {
    CAPTURE(name);
    const calib::ModelSpec m = calib::load_model((dir / (std::string(name) + ".yaml")).string());
    CHECK(m.shape.name == name);
    if (std::string(name) != "tiny") CHECK(m.source.find("config.json") != std::string::npos);
  }
  const calib::ModelSpec gptj = calib::load_model((dir / "gpt-j-6b.yaml").string());
  const sim::Profile infercept =
      sim::load_profile(test::source_dir() + "/calibrate/profiles/a100-80g-gptj-6b.infercept.yaml");
  CHECK(gptj.shape == infercept.model);
  // Llama-style models: the parameter count is the sum of the layer and embedding matrices.
  for (const char* name : {"llama-2-7b", "llama-2-13b", "llama-3.1-8b", "llama-3.1-70b"}) {
    CAPTURE(name);
    const auto s = calib::load_model((dir / (std::string(name) + ".yaml")).string()).shape;
    const double h = s.hidden, q = s.heads * s.head_dim, kv = s.kv_heads * s.head_dim;
    const double layer = h * q * 2 + h * kv * 2 + 3 * h * s.ffn + 2 * h;
    CHECK(s.params == s.layers * layer + 2.0 * s.vocab * h + h);
  }
}
