// The roofline of calibrate/analytic.h for the large MoE/MLA models: fp8 GEMMs at the FP8 peak,
// MLA attention as vLLM's MLA backends run it, expert parallelism in the weights that must fit;
// every value worked by hand on the made-up GPU of analytic_fixtures.h (1e14 FLOP/s bf16,
// 1e12 B/s).
#include <doctest/doctest.h>

#include <string>

#include "calibrate/analytic.h"
#include "tests/calibrate/analytic_fixtures.h"
#include "tests/input_error_text.h"

using namespace isim;

namespace {

// 2 bf16 layers of W = 10^7 params (22,048,000 - 2 x 1000 x 1024 over 2), 8 heads of 192 (a
// Kimi-like q/k head: nope 128 + rope 64) with an MLA latent of 512 + 64.
sim::ModelShape mla_model() {
  sim::ModelShape s;
  s.name = "toy-mla";
  s.layers = 2;
  s.hidden = 1024;
  s.heads = 8;
  s.kv_heads = 8;
  s.head_dim = 192;
  s.ffn = 4096;
  s.vocab = 1000;
  s.dtype = "bf16";
  s.params = 22048000;
  s.mla = {512, 64};
  return s;
}

calib::GpuSpec fp8_gpu() {
  calib::GpuSpec g = test::toy_gpu();
  g.fp8_dense_tflops = 200;
  return g;
}

}  // namespace

TEST_CASE("analytic MLA: prefill FLOPs per pair 2 x heads x (qk + v), v = head_dim - rope") {
  const calib::Efficiency e;  // attention 0.5, memory 0.8
  // Chunk 1000 after 1000 cached: 1000 x (1000 + 500) = 1.5e6 pairs; 2 x 1.5e6 x 8 x (192 + 128)
  // = 7.68e9 FLOPs = 76.8 us at 1e14, 153.6 us at 0.5. The bytes, 2000 latents x 1152 B =
  // 2.304 us at 1e12 (2.88 at 0.8), are the smaller side.
  calib::Roofline r(test::toy_gpu(), mla_model(), e);
  CHECK(r.prefill_compute_us(1000, 1000) == doctest::Approx(76.8));
  CHECK(r.prefill_memory_us(1000, 1000) == doctest::Approx(2.304));
  CHECK(r.prefill_attention_us(1000, 1000) == doctest::Approx(153.6));
  // tp 2 halves the heads (and the FLOPs), not the latent.
  sim::ModelShape tp2 = mla_model();
  tp2.tp = 2;
  CHECK(calib::Roofline(test::toy_gpu(), tp2, e).prefill_compute_us(1000, 1000) ==
        doctest::Approx(38.4));
  CHECK(calib::Roofline(test::toy_gpu(), tp2, e).prefill_memory_us(1000, 1000) ==
        doctest::Approx(2.304));
  // A given v_head_dim (GLM-5's differs): 2 x 1.5e6 x 8 x (192 + 256) = 1.0752e10: 107.52 us.
  sim::ModelShape glm = mla_model();
  glm.mla.v_head_dim = 256;
  CHECK(calib::Roofline(test::toy_gpu(), glm, e).prefill_compute_us(1000, 1000) ==
        doctest::Approx(107.52));
  // Standard attention keeps qk = v = head_dim: 2 x 1.5e6 x 8 x 384 = 9.216e9: 92.16 us.
  sim::ModelShape mha = mla_model();
  mha.mla = {};
  CHECK(calib::Roofline(test::toy_gpu(), mha, e).prefill_compute_us(1000, 1000) ==
        doctest::Approx(92.16));
}

TEST_CASE("analytic MLA: decode is absorbed, max(FLOPs over the latent, latent bytes)") {
  const calib::Efficiency e;  // attention 0.5, memory 0.8, 0.1 us per sequence
  // 10^6 KV tokens: 2 x 8 x (2 x 512 + 64) = 17,408 FLOPs each, 1.7408e10 = 174.08 us at 1e14
  // (348.16 at 0.5); (512 + 64) x 2 = 1,152 bytes each, 1.152e9 = 1152 us (1440 at 0.8).
  calib::Roofline r(test::toy_gpu(), mla_model(), e);
  CHECK(r.decode_compute_us(1e6) == doctest::Approx(174.08));
  CHECK(r.decode_kv_us(1e6) == doctest::Approx(1152));
  CHECK(r.decode_attention_us(4, 1e6) == doctest::Approx(1440 + 0.4));
  // At 10 TFLOPS the FLOPs win: 1740.8 us, 3481.6 at 0.5.
  calib::GpuSpec slow = test::toy_gpu();
  slow.bf16_dense_tflops = 10;
  CHECK(calib::Roofline(slow, mla_model(), e).decode_attention_us(4, 1e6) ==
        doctest::Approx(3481.6 + 0.4));
  // tp 4: 2 heads a GPU (43.52 us of FLOPs), the whole latent still read.
  sim::ModelShape tp4 = mla_model();
  tp4.tp = 4;
  CHECK(calib::Roofline(slow, tp4, e).decode_attention_us(4, 1e6) == doctest::Approx(1440 + 0.4));
  // Standard attention has no FLOP side in decode.
  sim::ModelShape mha = mla_model();
  mha.mla = {};
  CHECK(calib::Roofline(slow, mha, e).decode_compute_us(1e6) == 0);
}

TEST_CASE("analytic fp8: GEMMs at the FP8 peak, attention and lm_head at bf16") {
  const calib::Efficiency e;
  sim::ModelShape m = mla_model();
  m.weight_dtype = "fp8";
  const calib::Roofline r(fp8_gpu(), m, e);
  // 2 x 1000 x 10^7 = 2e10 FLOPs at 2e14: 100 us (200 us at the bf16 peak).
  CHECK(r.gemm_peak_tflops() == 200);
  CHECK(r.dense_compute_us(1000) == doctest::Approx(100));
  // lm_head: 2 x 1000 x 1000 x 1024 = 2.048e9 at 1e14: 20.48 us, as for bf16 weights.
  CHECK(r.lm_head_compute_us(1000) == doctest::Approx(20.48));
  CHECK(r.prefill_compute_us(1000, 1000) == doctest::Approx(76.8));
  // A spec sheet without the FP8 peak is named.
  const std::string err = test::error_of_call([&] { calib::Roofline(test::toy_gpu(), m, e); });
  CHECK(err.find("toy-gpu.yaml: fp8_dense_tflops: missing (model toy-mla has fp8 weights") == 0);
  // int4 (w4a16) keeps the bf16 peak.
  m.weight_dtype = "int4";
  CHECK(calib::Roofline(test::toy_gpu(), m, e).gemm_peak_tflops() == 100);
}

namespace {

// The MLA toy with 256 experts of 8192 in both layers: 2 x 256 x 3 x 1024 x 8192 =
// 12,884,901,888 routed params, 24 GiB at bf16: more than the toy GPU's 16 GiB alone.
calib::ModelSpec big_moe(int ep, const std::string& weight_dtype = "") {
  calib::ModelSpec spec;
  spec.source = "made up for the test";
  spec.shape = mla_model();
  spec.shape.moe = {256, 8, 8192, 0, 0};
  spec.shape.params += 12884901888.0;
  spec.shape.ep = ep;
  spec.shape.weight_dtype = weight_dtype;
  return spec;
}

}  // namespace

TEST_CASE("analytic ep: the experts spread over ep GPUs must fit; min_ep when ep is left at 1") {
  const calib::Efficiency e;
  // ep 1: (44,096,000 + 25,769,803,776) B = 24.04 GiB > 16: written with min_ep 2, where
  // (44,096,000 + 12,884,901,888) B = 12.04 GiB fit.
  const sim::Profile p = calib::analytic_profile(test::toy_gpu(), big_moe(1), "m.yaml", e);
  CHECK(p.provenance_value("min_ep").find("2: at ep 1 the weights (24.04 GiB per GPU at tp 1)") ==
        0);
  CHECK(p.tables.moe_roofline.peak_tflops == 100);
  // ep 2 fits as given: no min_ep, the ep written into the model.
  const sim::Profile p2 = calib::analytic_profile(test::toy_gpu(), big_moe(2), "m.yaml", e);
  CHECK(p2.provenance_value("min_ep").empty());
  CHECK(p2.model.ep == 2);
  CHECK(p2.provenance_value("expert_parallel")
            .find("ep 2: each GPU holds the routed experts / 2 "
                  "(weights 12.04 GiB per GPU)") == 0);
  // fp8 experts: the MoE layers run at the FP8 peak.
  CHECK(calib::analytic_profile(fp8_gpu(), big_moe(1, "fp8"), "m.yaml", e)
            .tables.moe_roofline.peak_tflops == 200);
  // A given ep that does not fit names --ep; ep past the experts or on a dense model is refused.
  calib::GpuSpec small = test::toy_gpu();
  small.memory_gib = 4;  // ep 4 leaves 6.04 GiB
  CHECK(test::error_of_call([&] { (void)calib::analytic_profile(small, big_moe(4), "m.yaml", e); })
            .find("toy-gpu.yaml: model toy-mla needs 6.04 GiB of weights per GPU at tp 1 and ep 4, "
                  "more than the 4 GiB of toy-gpu (raise --tp or --ep)") == 0);
  CHECK(test::error_of_call([&] {
          (void)calib::Roofline(test::toy_gpu(), big_moe(257).shape, e);
        }).find("ep must be in [1, 256] (the routed experts), got 257") != std::string::npos);
  sim::ModelShape dense = mla_model();
  dense.ep = 2;
  CHECK(test::error_of_call([&] {
          (void)calib::Roofline(test::toy_gpu(), dense, e);
        }).find("ep 2: expert parallelism needs a MoE model") != std::string::npos);
}
