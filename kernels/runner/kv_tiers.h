// KvTiers: the real KV memory behind the engine's two block pools, and the copies between them.
// The "GPU" tier is the runner's pool (device memory on CUDA, host memory on CPU); the "CPU"
// tier is the swap space (pinned host memory on CUDA, host memory on CPU). Block id b of the
// engine's pool is slot b of the tier, in every plane (2 x layers planes).
//
// Contract:
// - Times are nanoseconds.
// - copy_now moves blocks and waits; it returns the measured time of the copies alone (CUDA:
//   events on the copy stream; CPU: a steady clock).
// - copy_start enqueues pipelined copies that run beside the next forward (CUDA: the copy
//   stream; CPU: a worker thread); copy_wait waits for them and returns their measured time.
//   Copies in one call never overlap in their destinations.
// - read / write move one whole block (every plane, [plane][block_bytes]) to or from host
//   memory for integrity checks and fault injection; they are not timed and are only called
//   when no copy is in flight.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/runner/runner.h"

namespace isim::kernels::runner {

struct BlockMoves {
  bool to_cpu = true;
  std::vector<int32_t> src, dst;
};

class KvTiers {
 public:
  virtual ~KvTiers() = default;
  virtual int64_t copy_now(const std::vector<BlockMoves>& moves) = 0;
  virtual void copy_start(const std::vector<BlockMoves>& moves) = 0;
  virtual int64_t copy_wait() = 0;
  virtual void read(bool cpu_tier, int32_t block, std::vector<std::byte>& out) = 0;
  virtual void write(bool cpu_tier, int32_t block, const std::vector<std::byte>& in) = 0;
  virtual int64_t planes() const = 0;
  virtual int64_t block_bytes() const = 0;  // per plane
};

// Host swap space beside a CPU runner's pool.
std::unique_ptr<KvTiers> make_cpu_tiers(Runner& runner, int64_t cpu_blocks);
// Pinned swap space beside a CUDA runner's device pool (in the CUDA module, cuda_module.h).
std::unique_ptr<KvTiers> make_cuda_tiers(Runner& runner, int64_t cpu_blocks);

}  // namespace isim::kernels::runner
