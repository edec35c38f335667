// CPU swap bench: memcpy of scattered pool blocks to and from a host buffer (copy_blocks).
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "kernels/cpu/block_copy.h"
#include "kernels/runner/swap_bench.h"

namespace isim::kernels::runner {
namespace {

using Clock = std::chrono::steady_clock;

class CpuSwapBench final : public SwapBench {
 public:
  CpuSwapBench(Runner& runner, int64_t max_blocks) : pool_(runner.kv_pool()), max_(max_blocks) {
    if (max_blocks < 1 || 2 * max_blocks > pool_.num_blocks)
      throw std::invalid_argument(
          fmt::format("swap bench: max_blocks = {}: must be in 1..{} (half the pool)", max_blocks,
                      pool_.num_blocks / 2));
    // Out-ids scatter over the first half of the pool (odd stride), in-ids over the second.
    const int64_t half = pool_.num_blocks / 2;
    for (int64_t i = 0; i < max_blocks; ++i) {
      out_ids_.push_back(static_cast<int32_t>((i * 7919) % half));
      in_ids_.push_back(static_cast<int32_t>(half + (i * 7919) % half));
    }
    const auto bytes = static_cast<size_t>(max_blocks * pool_.planes * pool_.block_bytes);
    out_buf_.resize(bytes);
    in_buf_.resize(bytes);
  }
  ~CpuSwapBench() override { stop_background(); }

  std::vector<std::string> paths() const override { return {"host-memcpy"}; }
  int64_t max_blocks() const override { return max_; }

  SwapTiming time(const std::string& path, int64_t blocks, bool out, bool in) override {
    if (path != "host-memcpy")
      throw std::invalid_argument(
          fmt::format("swap bench: unknown path '{}' (valid: host-memcpy)", path));
    check(blocks);
    SwapTiming t;
    const auto run = [](const BlockCopy& c, double& us) {
      const auto t0 = Clock::now();
      cpu::copy_blocks(c);
      us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
    };
    const BlockCopy o = gather_blocks(pool_, out_ids_.data(), blocks, out_buf_.data());
    const BlockCopy i = scatter_blocks(in_buf_.data(), blocks, pool_, in_ids_.data());
    if (out && in) {
      std::jthread other([&] { run(i, t.in_us); });
      run(o, t.out_us);
    } else if (out) {
      run(o, t.out_us);
    } else if (in) {
      run(i, t.in_us);
    }
    return t;
  }

  void start_background(int64_t blocks) override {
    check(blocks);
    stop_background();
    stop_ = false;
    background_ = std::jthread([this, blocks] {
      while (!stop_) time("host-memcpy", blocks, true, true);
    });
  }
  void stop_background() override {
    stop_ = true;
    if (background_.joinable()) background_.join();
  }

 private:
  void check(int64_t blocks) const {
    if (blocks < 1 || blocks > max_)
      throw std::invalid_argument(
          fmt::format("swap bench: blocks = {}: must be in 1..{}", blocks, max_));
  }

  BlockPool pool_;
  int64_t max_;
  std::vector<int32_t> out_ids_, in_ids_;
  std::vector<std::byte> out_buf_, in_buf_;
  std::atomic<bool> stop_{true};
  std::jthread background_;
};

}  // namespace

std::unique_ptr<SwapBench> make_cpu_swap_bench(Runner& runner, int64_t max_blocks) {
  return std::make_unique<CpuSwapBench>(runner, max_blocks);
}

}  // namespace isim::kernels::runner
