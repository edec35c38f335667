// CUDA swap bench: scattered device pool blocks <-> contiguous pinned host staging, by the copy
// paths of kernels/cuda/block_copy.h, one CopyEngine (stream) per direction, CUDA events.
// "default" is what live-cuda's swaps use: default_copy_path() for each direction.
// UNVERIFIED: written and compiled without a GPU; it has never run.
#include <fmt/format.h>

#include <atomic>
#include <stdexcept>
#include <thread>

#include "kernels/cuda/block_copy.h"
#include "kernels/cuda/check.h"
#include "kernels/runner/cuda_memory.h"
#include "kernels/runner/cuda_runner.h"

namespace isim::kernels::runner {
namespace {

using cuda::CopyPath;

class CudaSwapBench final : public SwapBench {
 public:
  CudaSwapBench(Runner& runner, int64_t max_blocks) : pool_(runner.kv_pool()), max_(max_blocks) {
    if (runner.backend() != "cuda")
      throw std::invalid_argument("cuda swap bench: the runner is not a CUDA runner");
    if (max_blocks < 1 || 2 * max_blocks > pool_.num_blocks)
      throw std::invalid_argument(
          fmt::format("cuda swap bench: max_blocks = {}: must be in 1..{} (half the pool)",
                      max_blocks, pool_.num_blocks / 2));
    const int64_t half = pool_.num_blocks / 2;
    for (int64_t i = 0; i < max_blocks; ++i) {
      out_ids_.push_back(static_cast<int32_t>((i * 7919) % half));
      in_ids_.push_back(static_cast<int32_t>(half + (i * 7919) % half));
    }
    const int64_t bytes = max_blocks * pool_.planes * pool_.block_bytes;
    out_staging_.reserve(bytes);
    in_staging_.reserve(bytes);
    for (cudaEvent_t* e : {&out_start_, &out_stop_, &in_start_, &in_stop_})
      ISIM_CUDA_CHECK(cudaEventCreate(e));
  }
  ~CudaSwapBench() override {
    stop_background();
    for (cudaEvent_t e : {out_start_, out_stop_, in_start_, in_stop_}) cudaEventDestroy(e);
  }

  std::vector<std::string> paths() const override {
    std::vector<std::string> p = {"default", "kernel"};
    if (cuda::batched_copy_available()) p.push_back("batched");
    p.push_back("coalesced");
    p.push_back("per-block");
    return p;
  }
  int64_t max_blocks() const override { return max_; }

  SwapTiming time(const std::string& path, int64_t blocks, bool out, bool in) override {
    const CopyPath out_via = path == "default" ? cuda::default_copy_path(false) : parse(path);
    const CopyPath in_via = path == "default" ? cuda::default_copy_path(true) : parse(path);
    if (blocks < 1 || blocks > max_)
      throw std::invalid_argument(
          fmt::format("cuda swap bench: blocks = {}: must be in 1..{}", blocks, max_));
    const BlockCopy o = gather_blocks(pool_, out_ids_.data(), blocks, out_staging_.data());
    const BlockCopy i = scatter_blocks(in_staging_.data(), blocks, pool_, in_ids_.data());
    if (out) {
      ISIM_CUDA_CHECK(cudaEventRecord(out_start_, out_engine_.stream()));
      ISIM_CUDA_CHECK(out_engine_.submit(out_via, o, out_stop_));
    }
    if (in) {
      ISIM_CUDA_CHECK(cudaEventRecord(in_start_, in_engine_.stream()));
      ISIM_CUDA_CHECK(in_engine_.submit(in_via, i, in_stop_));
    }
    SwapTiming t;
    float ms = 0;
    if (out) {
      ISIM_CUDA_CHECK(cudaEventSynchronize(out_stop_));
      ISIM_CUDA_CHECK(cudaEventElapsedTime(&ms, out_start_, out_stop_));
      t.out_us = 1e3 * ms;
    }
    if (in) {
      ISIM_CUDA_CHECK(cudaEventSynchronize(in_stop_));
      ISIM_CUDA_CHECK(cudaEventElapsedTime(&ms, in_start_, in_stop_));
      t.in_us = 1e3 * ms;
    }
    return t;
  }

  void start_background(int64_t blocks) override {
    stop_background();
    stop_ = false;
    background_ = std::jthread([this, blocks] {
      while (!stop_) time("default", blocks, true, true);
    });
  }
  void stop_background() override {
    stop_ = true;
    if (background_.joinable()) background_.join();
  }

 private:
  static CopyPath parse(const std::string& path) {
    if (path == "kernel") return CopyPath::kKernel;
    if (path == "batched") return CopyPath::kBatched;
    if (path == "coalesced") return CopyPath::kCoalesced;
    if (path == "per-block") return CopyPath::kPerBlock;
    throw std::invalid_argument(fmt::format(
        "cuda swap bench: unknown path '{}' (valid: default, kernel, batched, coalesced, "
        "per-block)",
        path));
  }

  BlockPool pool_;
  int64_t max_;
  std::vector<int32_t> out_ids_, in_ids_;
  PinnedBuffer out_staging_, in_staging_;
  cuda::CopyEngine out_engine_, in_engine_;
  cudaEvent_t out_start_ = nullptr, out_stop_ = nullptr, in_start_ = nullptr, in_stop_ = nullptr;
  std::atomic<bool> stop_{true};
  std::jthread background_;
};

}  // namespace

std::unique_ptr<SwapBench> make_cuda_swap_bench(Runner& runner, int64_t max_blocks) {
  return std::make_unique<CudaSwapBench>(runner, max_blocks);
}

}  // namespace isim::kernels::runner
