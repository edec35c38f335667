// Timing of KV swap copies between a runner's pool and a swap buffer outside it, for
// calibration. CUDA: device pool <-> pinned host staging over PCIe, by each copy path
// (kernels/cuda/block_copy.h). CPU: host memcpy between the pool and a host buffer, which is
// what the CPU backend's "swap" is; it says nothing about PCIe.
//
// Contract:
// - A copy moves `blocks` scattered pool blocks in every plane (2 * layers planes), i.e.
//   blocks * kv_pool().planes * block_bytes bytes; ids are a fixed scatter over the pool.
// - time() returns the elapsed microseconds of one copy per direction asked for; with both
//   directions they run at the same time (two streams / two threads) and each is timed alone.
// - start_background() keeps `blocks`-sized copies in both directions running beside the
//   runner's compute until stop_background(); used to measure compute slowdown.
// - Throws std::invalid_argument for blocks outside 1..max_blocks or an unknown path.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/runner/runner.h"

namespace isim::kernels::runner {

struct SwapTiming {
  double out_us = 0;  // pool -> swap buffer (device to host on CUDA)
  double in_us = 0;   // swap buffer -> pool (host to device on CUDA)
};

class SwapBench {
 public:
  virtual ~SwapBench() = default;
  virtual std::vector<std::string> paths() const = 0;  // the first is the swapper's default
  virtual int64_t max_blocks() const = 0;
  virtual SwapTiming time(const std::string& path, int64_t blocks, bool out, bool in) = 0;
  virtual void start_background(int64_t blocks) = 0;
  virtual void stop_background() = 0;
};

// `max_blocks` <= half the runner's pool (copies out of one half land in the other on swap-in).
std::unique_ptr<SwapBench> make_cpu_swap_bench(Runner& runner, int64_t max_blocks);

}  // namespace isim::kernels::runner
