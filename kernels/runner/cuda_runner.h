// CUDA backend of the runner and its swap bench (declared without CUDA headers, so callers
// compile anywhere; defined only in builds with the CUDA backend, library isim_runner_cuda).
//
// Contract:
// - cuda_device_info() never throws: without a usable device it returns available = false and
//   `why` (the cudaGetDeviceCount error or "no CUDA device").
// - make_cuda_runner needs dims.dtype kBF16 or kF16 and head_dim 64 or 128 (std::invalid_argument
//   otherwise) and a device (kernels::cuda::CudaError otherwise). Weights are generated on the
//   device from the same weight_value as the CPU backend, rounded to the dtype.
// - make_cuda_swap_bench's paths are "kernel" (gather/scatter kernel into pinned staging, the
//   swapper's default), "batched" (cudaMemcpyBatchAsync, when the runtime has it) and
//   "per-block" (one cudaMemcpyAsync per block and plane); the runner must be a CUDA runner.
#pragma once

#include <memory>
#include <string>

#include "kernels/runner/runner.h"
#include "kernels/runner/swap_bench.h"

namespace isim::kernels::runner {

struct CudaDeviceInfo {
  bool available = false;
  std::string why;  // when not available
  std::string name;
  int sm_count = 0;
  double memory_gib = 0;
  std::string driver;   // e.g. "13.0" (cudaDriverGetVersion)
  std::string runtime;  // cudaRuntimeGetVersion
  std::string clocks;   // "sm 1980 MHz, memory 2619 MHz" where readable
};

CudaDeviceInfo cuda_device_info();
std::unique_ptr<Runner> make_cuda_runner(const RunnerConfig& config);
std::unique_ptr<SwapBench> make_cuda_swap_bench(Runner& runner, int64_t max_blocks);

}  // namespace isim::kernels::runner
