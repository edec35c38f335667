// The roofline of calibrate/analytic.h on MLA and quantized models: KV bytes from MLA's latent,
// weight bytes from weight_dtype (values worked by hand).
#include <doctest/doctest.h>

#include "calibrate/analytic.h"
#include "tests/calibrate/analytic_fixtures.h"

using namespace isim;

namespace {

// 2 layers, hidden 1024, W = (22,048,000 - 2 x 1000 x 1024) / 2 = 10^7 params per layer, bf16.
sim::ModelShape toy(int tp) {
  sim::ModelShape s;
  s.name = "toy";
  s.layers = 2;
  s.hidden = 1024;
  s.heads = 8;
  s.kv_heads = 8;
  s.head_dim = 128;
  s.ffn = 4096;
  s.vocab = 1000;
  s.dtype = "bf16";
  s.params = 22048000;
  s.tp = tp;
  return s;
}

}  // namespace

TEST_CASE("analytic: an MLA model reads its latent KV, the same at every tp") {
  sim::ModelShape m = toy(1);
  m.mla = {512, 64};
  // One layer's KV per token: (512 + 64) x 2 bytes = 1,152; 10^6 tokens at 1e12 B/s: 1,152 us.
  CHECK(calib::Roofline(isim::test::toy_gpu(), m, {}).decode_kv_us(1e6) == doctest::Approx(1152));
  m.tp = 4;
  CHECK(calib::Roofline(isim::test::toy_gpu(), m, {}).decode_kv_us(1e6) == doctest::Approx(1152));
  // Standard attention: 2 x 8 x 128 x 2 = 4,096 B per layer, split by tp 4: 1,024 us.
  CHECK(calib::Roofline(isim::test::toy_gpu(), toy(4), {}).decode_kv_us(1e6) ==
        doctest::Approx(1024));
}

TEST_CASE("analytic: quantized weights stream at their own bytes") {
  // dense_memory(0) = W x weight bytes / tp / B: bf16 10^7 x 2 / 1e12 = 20 us; fp8 10 us; int4
  // 5 us; the activations stay in bf16.
  sim::ModelShape m = toy(1);
  CHECK(calib::Roofline(isim::test::toy_gpu(), m, {}).dense_memory_us(0) == doctest::Approx(20));
  m.weight_dtype = "fp8";
  calib::GpuSpec fp8_gpu = isim::test::toy_gpu();
  fp8_gpu.fp8_dense_tflops = 200;
  CHECK(calib::Roofline(fp8_gpu, m, {}).dense_memory_us(0) == doctest::Approx(10));
  m.weight_dtype = "int4";
  CHECK(calib::Roofline(isim::test::toy_gpu(), m, {}).dense_memory_us(0) == doctest::Approx(5));
  // The weights the profile checks against the GPU's memory: embedding and lm_head 2,048,000 at
  // 2 bytes + 2 x 10^7 at 0.5 = 14,096,000 bytes.
  CHECK(m.weight_bytes_per_gpu() == 14096000.0);
}
