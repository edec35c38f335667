// CPU tiers: the swap space is a host buffer; copies are the kernels layer's CPU block copies,
// pipelined ones on a worker thread beside the forward.
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "kernels/cpu/block_copy.h"
#include "kernels/runner/kv_tiers.h"

namespace isim::kernels::runner {
namespace {

using Clock = std::chrono::steady_clock;

class CpuTiers final : public KvTiers {
 public:
  CpuTiers(Runner& runner, int64_t cpu_blocks) : gpu_(runner.kv_pool()) {
    cpu_ = gpu_;
    cpu_.num_blocks = cpu_blocks;
    swap_.assign(static_cast<size_t>(cpu_.bytes()), std::byte{0});
    cpu_.base = swap_.data();
  }
  ~CpuTiers() override {
    if (worker_.joinable()) worker_.join();
  }

  int64_t copy_now(const std::vector<BlockMoves>& moves) override {
    const auto t0 = Clock::now();
    copy(moves);
    return elapsed(t0);
  }
  void copy_start(const std::vector<BlockMoves>& moves) override {
    if (worker_.joinable()) throw std::logic_error("CpuTiers: copies already in flight");
    async_ns_ = 0;
    if (moves.empty()) return;
    pending_ = moves;
    worker_ = std::thread([this] {
      const auto t0 = Clock::now();
      copy(pending_);
      async_ns_ = elapsed(t0);
    });
  }
  int64_t copy_wait() override {
    if (worker_.joinable()) worker_.join();
    return async_ns_;
  }
  void read(bool cpu_tier, int32_t block, std::vector<std::byte>& out) override {
    const auto& pool = cpu_tier ? cpu_ : gpu_;
    check(pool, block);
    out.resize(static_cast<size_t>(pool.planes * pool.block_bytes));
    for (int64_t p = 0; p < pool.planes; ++p)
      std::memcpy(out.data() + p * pool.block_bytes, at(pool, p, block),
                  static_cast<size_t>(pool.block_bytes));
  }
  void write(bool cpu_tier, int32_t block, const std::vector<std::byte>& in) override {
    const auto& pool = cpu_tier ? cpu_ : gpu_;
    check(pool, block);
    for (int64_t p = 0; p < pool.planes; ++p)
      std::memcpy(at(pool, p, block), in.data() + p * pool.block_bytes,
                  static_cast<size_t>(pool.block_bytes));
  }
  int64_t planes() const override { return gpu_.planes; }
  int64_t block_bytes() const override { return gpu_.block_bytes; }

 private:
  static int64_t elapsed(Clock::time_point t0) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count();
  }
  static std::byte* at(const kernels::BlockPool& pool, int64_t plane, int32_t block) {
    return static_cast<std::byte*>(pool.base) + plane * pool.plane_stride() +
           int64_t{block} * pool.block_bytes;
  }
  static void check(const kernels::BlockPool& pool, int32_t block) {
    if (block < 0 || block >= pool.num_blocks)
      throw std::logic_error("CpuTiers: block id outside the pool");
  }
  void copy(const std::vector<BlockMoves>& moves) const {
    for (const BlockMoves& m : moves) {
      const auto& src = m.to_cpu ? gpu_ : cpu_;
      const auto& dst = m.to_cpu ? cpu_ : gpu_;
      kernels::cpu::copy_blocks(kernels::pool_to_pool(src, m.src.data(), dst, m.dst.data(),
                                                      static_cast<int64_t>(m.src.size())));
    }
  }

  kernels::BlockPool gpu_, cpu_;
  std::vector<std::byte> swap_;
  std::vector<BlockMoves> pending_;
  std::thread worker_;
  int64_t async_ns_ = 0;
};

}  // namespace

std::unique_ptr<KvTiers> make_cpu_tiers(Runner& runner, int64_t cpu_blocks) {
  return std::make_unique<CpuTiers>(runner, cpu_blocks);
}

}  // namespace isim::kernels::runner
