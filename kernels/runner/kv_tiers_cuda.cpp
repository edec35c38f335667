// CUDA tiers: the swap space is pinned host memory; copies go through the kernels layer's
// CopyEngine (the gather/scatter kernel path, pool to pool across PCIe) on its own stream, timed
// with events on that stream. Built only with the CUDA backend.
#include <cuda_runtime_api.h>

#include <cstring>
#include <stdexcept>

#include "kernels/cuda/block_copy.h"
#include "kernels/cuda/check.h"
#include "kernels/runner/cuda_memory.h"
#include "kernels/runner/kv_tiers.h"

namespace isim::kernels::runner {
namespace {

class CudaTiers final : public KvTiers {
 public:
  CudaTiers(Runner& runner, int64_t cpu_blocks) : gpu_(runner.kv_pool()) {
    cpu_ = gpu_;
    cpu_.num_blocks = cpu_blocks;
    swap_.reserve(std::max<int64_t>(cpu_.bytes(), 1));
    std::memset(swap_.data(), 0, static_cast<size_t>(cpu_.bytes()));
    cpu_.base = swap_.data();
    ISIM_CUDA_CHECK(cudaEventCreate(&start_));
    ISIM_CUDA_CHECK(cudaEventCreate(&stop_));
  }
  ~CudaTiers() override {
    engine_.synchronize();
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }

  int64_t copy_now(const std::vector<BlockMoves>& moves) override {
    if (moves.empty()) return 0;
    submit(moves);
    return wait();
  }
  void copy_start(const std::vector<BlockMoves>& moves) override {
    in_flight_ = !moves.empty();
    if (in_flight_) submit(moves);
  }
  int64_t copy_wait() override {
    if (!in_flight_) return 0;
    in_flight_ = false;
    return wait();
  }
  void read(bool cpu_tier, int32_t block, std::vector<std::byte>& out) override {
    const auto& pool = cpu_tier ? cpu_ : gpu_;
    out.resize(static_cast<size_t>(pool.planes * pool.block_bytes));
    for (int64_t p = 0; p < pool.planes; ++p)
      ISIM_CUDA_CHECK(cudaMemcpy(out.data() + p * pool.block_bytes, at(pool, p, block),
                                 static_cast<size_t>(pool.block_bytes), cudaMemcpyDefault));
  }
  void write(bool cpu_tier, int32_t block, const std::vector<std::byte>& in) override {
    const auto& pool = cpu_tier ? cpu_ : gpu_;
    for (int64_t p = 0; p < pool.planes; ++p)
      ISIM_CUDA_CHECK(cudaMemcpy(at(pool, p, block), in.data() + p * pool.block_bytes,
                                 static_cast<size_t>(pool.block_bytes), cudaMemcpyDefault));
  }
  int64_t planes() const override { return gpu_.planes; }
  int64_t block_bytes() const override { return gpu_.block_bytes; }

 private:
  static std::byte* at(const kernels::BlockPool& pool, int64_t plane, int32_t block) {
    return static_cast<std::byte*>(pool.base) + plane * pool.plane_stride() +
           int64_t{block} * pool.block_bytes;
  }
  void submit(const std::vector<BlockMoves>& moves) {
    ISIM_CUDA_CHECK(cudaEventRecord(start_, engine_.stream()));
    for (const BlockMoves& m : moves) {
      const auto& src = m.to_cpu ? gpu_ : cpu_;
      const auto& dst = m.to_cpu ? cpu_ : gpu_;
      ISIM_CUDA_CHECK(engine_.submit(
          kernels::cuda::default_copy_path(/*to_device=*/!m.to_cpu),
          kernels::pool_to_pool(src, m.src.data(), dst, m.dst.data(),
                                static_cast<int64_t>(m.src.size()))));
    }
    ISIM_CUDA_CHECK(cudaEventRecord(stop_, engine_.stream()));
  }
  int64_t wait() {
    ISIM_CUDA_CHECK(cudaEventSynchronize(stop_));
    float ms = 0;
    ISIM_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
    return static_cast<int64_t>(static_cast<double>(ms) * 1e6);
  }

  kernels::BlockPool gpu_, cpu_;
  PinnedBuffer swap_;
  kernels::cuda::CopyEngine engine_;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  bool in_flight_ = false;
};

}  // namespace

std::unique_ptr<KvTiers> make_cuda_tiers(Runner& runner, int64_t cpu_blocks) {
  return std::make_unique<CudaTiers>(runner, cpu_blocks);
}

}  // namespace isim::kernels::runner
