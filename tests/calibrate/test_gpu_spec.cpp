// GPU spec sheets (calibrate/gpus/, calibrate/analytic.h's format): every shipped sheet loads
// with figures in range, and every bad sheet is refused naming FILE:LINE: key.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "calibrate/analytic.h"
#include "core/input_error.h"
#include "tests/cli_helpers.h"
#include "tests/input_error_text.h"
#include "tests/test_paths.h"

using namespace isim;
namespace fs = std::filesystem;

TEST_CASE("GPU spec files: every shipped one loads; bad ones name FILE:LINE: key") {
  const fs::path dir = fs::path(test::source_dir()) / "calibrate/gpus";
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    CAPTURE(e.path().string());
    const calib::GpuSpec g = calib::load_gpu_spec(e.path().string());
    CHECK(g.bf16_dense_tflops > 100);
    CHECK(g.hbm_gbps > 500);
    if (g.name == "GB300-NVL72") {  // its host copies take NVLink-C2C, not PCIe
      CHECK(g.pcie_gen == 6);
      CHECK(g.pcie_gbps == 225);  // 900 GB/s both ways for one Grace and its two GPUs
    } else {
      CHECK((g.pcie_gen == 4 || g.pcie_gen == 5));
      CHECK(g.pcie_gbps == (g.pcie_gen == 4 ? 32 : 64));
    }
    if (g.fp8_dense_tflops > 0)  // twice bf16 (989.4 and 1,978.9 round apart on Hopper)
      CHECK(g.fp8_dense_tflops == doctest::Approx(2 * g.bf16_dense_tflops).epsilon(1e-3));
    ++n;
  }
  CHECK(n == 9);
  const calib::GpuSpec gb300 = calib::load_gpu_spec((dir / "GB300.yaml").string());
  CHECK(gb300.fp8_dense_tflops == 5000);  // 360 PFLOPS dense FP8 per rack / 72
  CHECK(gb300.bf16_dense_tflops == 2500);
  CHECK(gb300.nvlink_gbps == 900);
  CHECK(gb300.network_gbps == 100);  // ConnectX-8, 800 Gb/s
  CHECK(gb300.nvlink_domain_gpus == 72);
  const calib::GpuSpec h200 = calib::load_gpu_spec((dir / "H200.yaml").string());
  CHECK(h200.bf16_dense_tflops == 989);
  CHECK(h200.hbm_gbps == 4800);
  CHECK(h200.memory_gib == 141);
  CHECK(h200.nvlink_gbps == 450);  // optional: 900 GB/s both ways together
  CHECK(calib::load_gpu_spec((dir / "RTX-4090.yaml").string()).nvlink_gbps == 0);
  CHECK(h200.fp8_dense_tflops == 1979);
  CHECK(h200.network_gbps == 50);  // ConnectX-7, 400 Gb/s
  CHECK(h200.nvlink_domain_gpus == 8);
  CHECK(calib::load_gpu_spec((dir / "RTX-4090.yaml").string()).fp8_dense_tflops == 0);

  auto d = test::scratch("specs");
  const std::string good =
      "name: g\n"
      "bf16_dense_tflops: {value: 1, source: s}\n"
      "hbm_gbps: {value: 1, source: s}\n"
      "memory_gib: {value: 1, source: s}\n"
      "pcie_gen: {value: 4, source: s}\n"
      "pcie_gbps: {value: 32, source: s}\n";
  CHECK_NOTHROW(calib::load_gpu_spec(test::write_file(d / "good.yaml", good)));
  const std::string link =
      test::write_file(d / "link.yaml", good + "nvlink_gbps: {value: 0, source: s}\n");
  CHECK(test::error_of_call([&] {
          calib::load_gpu_spec(link);
        }).find(link + ":7: nvlink_gbps.value: must be > 0, got 0") == 0);
  const std::string lonely =
      test::write_file(d / "lonely.yaml", good + "nvlink_domain_gpus: {value: 8, source: s}\n");
  CHECK(test::error_of_call([&] {
          calib::load_gpu_spec(lonely);
        }).find(lonely + ":7: nvlink_domain_gpus: given without nvlink_gbps") == 0);
  const std::string half =
      test::write_file(d / "half.yaml", good + "nvlink_gbps: {value: 9, source: s}\n" +
                                            "nvlink_domain_gpus: {value: 7.5, source: s}\n");
  CHECK(test::error_of_call([&] {
          calib::load_gpu_spec(half);
        }).find(half + ":8: nvlink_domain_gpus.value: expected a GPU count 1..100000, got 7.5") ==
        0);
  const std::string nosrc =
      test::write_file(d / "nosrc.yaml", "name: g\nbf16_dense_tflops: {value: 1}\n");
  CHECK(test::error_of_call([&] {
          calib::load_gpu_spec(nosrc);
        }).find(nosrc + ":2: bf16_dense_tflops.source: missing") == 0);
  const std::string typo =
      test::write_file(d / "typo.yaml", good + "hbm_gbs: {value: 1, source: s}\n");
  CHECK(test::error_of_call([&] {
          calib::load_gpu_spec(typo);
        }).find(typo + ":7: hbm_gbs: unknown key") == 0);
  std::string negative = good;
  negative.replace(negative.find("hbm_gbps: {value: 1"), 19, "hbm_gbps: {value: -3");
  const std::string neg = test::write_file(d / "neg.yaml", negative);
  CHECK(test::error_of_call([&] {
          calib::load_gpu_spec(neg);
        }).find(neg + ":3: hbm_gbps.value: must be > 0, got -3") == 0);
  std::string huge = good;
  huge.replace(huge.find("memory_gib: {value: 1"), 21, "memory_gib: {value: 1e300");
  const std::string big = test::write_file(d / "big.yaml", huge);
  CHECK(test::error_of_call([&] { calib::load_gpu_spec(big); }) ==
        big + ":4: memory_gib.value: must be at most 1048576 GiB (a PiB), got 1e+300");
}
