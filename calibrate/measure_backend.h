// The backend isim-calibrate measures on and the facts it records about the machine: an
// internal header of calibrate/measure.cpp (measure_backend.cpp implements it).
//
// Contract:
// - open_backend opens the runner and swap bench of o.backend: "cpu" always works (device
//   "cpu: MODEL NAME", memory from /proc/meminfo); "cuda" loads the CUDA module and needs a
//   device, else InputError("--backend cuda: ...; use --backend cpu"). `facts` are the
//   provenance lines of the backend, in the order the profile lists them.
// - utc_now: the time as YYYY-MM-DDTHH:MM:SSZ; git_sha: the short sha of the repository holding
//   the model file, "unknown" outside one.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "calibrate/measure.h"
#include "kernels/runner/runner.h"
#include "kernels/runner/swap_bench.h"

namespace isim::calib {

struct Backend {
  std::unique_ptr<kernels::runner::Runner> runner;
  std::unique_ptr<kernels::runner::SwapBench> swap;
  std::string device;
  double memory_gib = 0;  // CUDA: totalGlobalMem, what the device lets CUDA allocate
  bool cuda = false;
  std::vector<std::pair<std::string, std::string>> facts;  // provenance
};

Backend open_backend(const CalibrateOptions& o, const kernels::runner::RunnerConfig& rc,
                     int64_t swap_blocks);
std::string utc_now();
std::string git_sha(const std::string& model_path);

}  // namespace isim::calib
