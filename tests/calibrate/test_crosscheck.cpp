// The roofline's cross-check against aiconfigurator tables, on tests/data/aiconfigurator-excerpt
// (rows cut unchanged from the H200 tables). Expected errors are worked from the rows and the
// formulas of calibrate/crosscheck.h on the made-up GPU of analytic_fixtures.h with NVLink 450.
#include <doctest/doctest.h>

#include <string>

#include "calibrate/crosscheck.h"
#include "tests/calibrate/analytic_fixtures.h"
#include "tests/input_error_text.h"

using namespace isim;

namespace {

const std::string kExcerpt = std::string(ISIM_SOURCE_DIR) + "/tests/data/aiconfigurator-excerpt";

// Llama-like: qkv (32 + 16) x 128 = 6144 x 4096 and o 4096 x 4096 have rows in the excerpt;
// gate_up 16384 x 4096 too; down 4096 x 1000 and lm_head 1000 x 4096 do not.
sim::ModelShape llama_like() {
  sim::ModelShape s;
  s.name = "llama-like";
  s.layers = 2;
  s.hidden = 4096;
  s.heads = 32;
  s.kv_heads = 8;
  s.head_dim = 128;
  s.ffn = 8192;
  s.vocab = 1000;
  s.dtype = "bf16";
  s.params = 2e9;
  return s;
}

calib::GpuSpec gpu() {
  calib::GpuSpec g = test::toy_gpu();  // 1e14 FLOP/s, 1e12 B/s
  g.nvlink_gbps = 450;
  return g;
}

const calib::CrossCheckClass& find(const calib::CrossCheck& c, const std::string& kernel) {
  for (const auto& k : c.classes)
    if (k.kernel == kernel) return k;
  FAIL("no class " << kernel);
  return c.classes.front();
}

}  // namespace

TEST_CASE("cross-check: GEMMs, attention and all-to-all against the excerpt, by hand") {
  const calib::Efficiency e;  // compute 0.7, memory 0.8, attention 0.5, link 0.75, latency 5 us
  const calib::CrossCheck c = calib::cross_check_aiconfigurator(kExcerpt, gpu(), llama_like(), e);
  // GEMMs at the excerpt's m = 1, 2, 2048, 4096 (nearest to 1, 8, 32 -> 2, 128, 512, 2048 ->
  // 2048, 8192 -> 4096). o, m = 1: max(2 x 4096^2 / 7e13 = 0.479 us, (4096^2 + 2 x 4096) x 2 /
  // 8e11 = 41.964 us) against 12.557 us: +234.2%. Memory side: o at m 1, 2 (+234.2%, +231.1%),
  // qkv at m 1, 2 (62.940 / 16.140: +290.0%, 62.966 / 15.902: +296.0%): median 262.06%.
  // Compute side: o at 2048 (981.71 / 84.362: +1063.7%), 4096 (+1068.2%), qkv at 2048
  // (+1014.1%), 4096 (2945.1 / 248.22: +1086.5%); gate_up 16384 x 4096 the same way.
  const auto& mem = find(c, "gemm bf16 (memory side)");
  CHECK(mem.points == 6);  // and gate_up at m 1, 2
  CHECK(mem.note.find("n x k: qkv 6144x4096, o 4096x4096, gate_up 16384x4096; no rows for down "
                      "4096x8192, lm_head 1000x4096") == 0);
  const auto& comp = find(c, "gemm bf16 (compute side)");
  CHECK(comp.points == 6);
  // gate_up m 2: (67,108,864 + 2 x 4096 + 2 x 16384) x 2 / 8e11 = 167.875 us against 33.725 us:
  // +397.77%, the largest memory-side error.
  CHECK(mem.max_abs_error == doctest::Approx(167.87456 / 33.72533 - 1).epsilon(1e-6));
  // Generation rows of 32/8/128 (4 of 6: one has a window, one 64 heads): b = 1, KV 16: 16 x
  // 4096 B / 8e11 + 0.1 = 0.18192 us against 11.653 us: -98.44%; b = 2, KV 2 x 64: 0.8554 us
  // against 11.877: -92.80%; median -96.61%.
  const auto& gen = find(c, "generation attention");
  CHECK(gen.points == 4);
  CHECK(gen.max_abs_error == doctest::Approx(0.98439).epsilon(1e-4));
  CHECK(gen.median_error == doctest::Approx(-0.96605).epsilon(1e-4));
  // Context rows of 32/8/128 (3 of 4): isl 64: max(2 x 64 x 32 x 32 x 256 / 5e13 = 0.67109 us,
  // 64 x 4096 / 8e11 = 0.32768 us) against 14.331 us: -95.32%; isl 16: -99.33%; median -98.78%.
  const auto& ctx = find(c, "context attention");
  CHECK(ctx.points == 3);
  CHECK(ctx.median_error == doctest::Approx(-0.98782).epsilon(1e-4));
  CHECK(ctx.max_abs_error == doctest::Approx(0.99328).epsilon(1e-4));
  // All-to-all, link 450 x 0.75 = 337.5 GB/s: 2 GPUs, 2^28 halves = 512 MiB: 5 + 0.5 x 2^29 /
  // 337.5e3 = 800.36 us against 901.69: -11.24%. 8 GPUs: 512 B, 5.0013 us against 11.63
  // (-57.00%); 512 MiB, 5 + 7/8 x 2^29 / 337.5e3 = 1396.89 us against 1509.91 (-7.49%).
  const auto& a2 = find(c, "alltoall 2 GPUs");
  CHECK(a2.points == 1);
  CHECK(a2.median_error == doctest::Approx(-0.112373).epsilon(1e-4));
  const auto& a8 = find(c, "alltoall 8 GPUs");
  CHECK(a8.points == 2);
  CHECK(a8.max_abs_error == doctest::Approx(0.569963).epsilon(1e-4));
  CHECK(a8.median_abs_error == doctest::Approx(0.322409).epsilon(1e-4));
  const std::string text = calib::cross_check_text(c);
  CHECK(text.find("  alltoall 2 GPUs                 1      11.2%      11.2%     -11.2%") !=
        std::string::npos);
}

TEST_CASE("cross-check: MLA has no attention rows; a missing table names its file") {
  sim::ModelShape m = llama_like();
  m.mla = {512, 64};
  const calib::CrossCheck c = calib::cross_check_aiconfigurator(kExcerpt, gpu(), m, {});
  for (const auto& k : c.classes)
    if (k.kernel.find("attention") != std::string::npos) {
      CHECK(k.points == 0);
      CHECK(k.note.find("MLA: the tables have no MLA rows") == 0);
    }
  CHECK(calib::cross_check_text(c).find("generation attention            0          -") !=
        std::string::npos);
  // MLA's and the experts' GEMMs: kv_a (512 + 64) x 4096, kv_b 32 x (128 + 128) x 512, o 4096 x
  // 32 x 128; whole experts at ep 4 (gate_up 2 x 2048 x 4096, the o shape again, listed once),
  // shared experts and lm_head split by tp 1; no dense FFN (no dense layers).
  m.head_dim = 192;
  m.params = 4e9;
  m.moe = {64, 8, 2048, 1024, 0};
  m.ep = 4;
  const calib::CrossCheck moe = calib::cross_check_aiconfigurator(kExcerpt, gpu(), m, {});
  CHECK(find(moe, "gemm bf16 (memory side)").note ==
        "n x k: o 4096x4096; no rows for kv_a 576x4096, kv_b 8192x512, expert down 4096x2048, "
        "shared gate_up 2048x4096, shared down 4096x1024, lm_head 1000x4096");
  const std::string err = test::error_of_call(
      [&] { (void)calib::cross_check_aiconfigurator("/nonexistent", gpu(), llama_like(), {}); });
  CHECK(err.find("/nonexistent/gemm_perf.csv") != std::string::npos);
}
