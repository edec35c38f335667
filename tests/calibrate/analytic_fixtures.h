// Fixtures shared by the analytic-profile tests: a made-up GPU with round figures, so that
// every roofline time in them can be worked out by hand.
#pragma once

#include "calibrate/analytic.h"

namespace isim::test {

// 100 TFLOPS (1e14 FLOP/s), 1000 GB/s HBM (1e12 B/s), 16 GiB, PCIe Gen4 at 10 GB/s each way.
inline calib::GpuSpec toy_gpu() {
  calib::GpuSpec g;
  g.name = "toy-gpu";
  g.bf16_dense_tflops = 100;
  g.hbm_gbps = 1000;
  g.memory_gib = 16;
  g.pcie_gen = 4;
  g.pcie_gbps = 10;
  g.path = "toy-gpu.yaml";
  return g;
}

}  // namespace isim::test
