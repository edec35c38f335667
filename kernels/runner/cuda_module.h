// The CUDA backend as a module loaded on first use: the runner, its swap bench, the live KV
// tiers and the device query, behind one table of functions.
//
// Why: linking cuBLAS and the CUDA runtime into every program costs each start about 0.4 s and
// 150 MiB of resident memory (the loader maps and relocates libcublasLt), which the simulator,
// which never needs them, must not pay. Only live-cuda and `isim-calibrate --backend cuda` load
// the module, with dlopen, the first time they ask.
//
// Contract:
// - cuda_module(&why) returns the table, or null with `why` saying what is missing: this build
//   has no CUDA backend, or the module (libisim_cuda.so, beside the programs in the build's bin/
//   folder, or where $ISIM_CUDA_MODULE points) cannot be loaded. It loads once per process and
//   never throws.
// - The functions behave as declared in cuda_runner.h and kv_tiers.h; device_info() never
//   throws, and reports `available = false` without a usable device.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "kernels/runner/cuda_runner.h"
#include "kernels/runner/kv_tiers.h"

namespace isim::kernels::runner {

struct CudaModule {
  CudaDeviceInfo (*device_info)();
  std::unique_ptr<Runner> (*make_runner)(const RunnerConfig&);
  std::unique_ptr<SwapBench> (*make_swap_bench)(Runner&, int64_t);
  std::unique_ptr<KvTiers> (*make_tiers)(Runner&, int64_t);
};

const CudaModule* cuda_module(std::string* why);

}  // namespace isim::kernels::runner

// The module's one exported symbol.
extern "C" const isim::kernels::runner::CudaModule* isim_cuda_module();
