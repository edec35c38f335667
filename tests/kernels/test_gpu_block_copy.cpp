// The three CUDA block-copy paths move exactly the bytes the CPU reference moves: scattered
// device blocks to contiguous pinned staging and back, and pool to pool across PCIe.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/cpu/block_copy.h"
#include "kernels/cuda/block_copy.h"
#include "tests/kernels/gpu_buffers.h"

using namespace isim;
using kernels::BlockPool;
using kernels::cuda::CopyPath;
using test::DeviceBuffer;
using test::PinnedBuffer;

namespace {

std::vector<unsigned char> random_bytes(size_t n, std::mt19937_64& rng) {
  std::vector<unsigned char> v(n);
  for (auto& b : v) b = static_cast<unsigned char>(rng());
  return v;
}

std::vector<int32_t> shuffled_ids(int64_t n, std::mt19937_64& rng) {
  std::vector<int32_t> ids(static_cast<size_t>(n));
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);
  return ids;
}

}  // namespace

TEST_CASE("every copy path round-trips scattered blocks byte-identical through pinned staging") {
  std::mt19937_64 rng(11);
  kernels::cuda::CopyEngine out_engine, in_engine;
  cudaEvent_t out_done, in_done;
  ISIM_CUDA_CHECK(cudaEventCreateWithFlags(&out_done, cudaEventDisableTiming));
  ISIM_CUDA_CHECK(cudaEventCreateWithFlags(&in_done, cudaEventDisableTiming));
  if (!kernels::cuda::batched_copy_available())
    MESSAGE("cudaMemcpyBatchAsync is not in this CUDA runtime: kBatched runs the per-block path");
  // 2 layers (4 planes); 16-token blocks of 2 kv heads x 64 dims x 2 bytes = 4 KiB, and an
  // odd multiple of 16 bytes.
  for (int64_t block_bytes : {int64_t{4096}, int64_t{16 * 37}}) {
    for (CopyPath path : {CopyPath::kPerBlock, CopyPath::kBatched, CopyPath::kKernel}) {
      for (int64_t n : {1, 3, 19, 200}) {
        CAPTURE(block_bytes);
        CAPTURE(kernels::cuda::copy_path_name(path));
        CAPTURE(n);
        const int64_t planes = 4, pool_blocks = 257;
        const auto src_bytes = random_bytes(size_t(planes * pool_blocks * block_bytes), rng);
        DeviceBuffer<unsigned char> gpu(src_bytes), gpu_back(src_bytes.size());
        gpu_back.poison(0xab);
        PinnedBuffer staging(size_t(planes * n * block_bytes));
        std::memset(staging.get(), 0xcd, staging.size());
        const BlockPool gp{gpu.get(), planes, pool_blocks, block_bytes};
        const BlockPool bp{gpu_back.get(), planes, pool_blocks, block_bytes};
        const auto from = shuffled_ids(pool_blocks, rng);
        const auto to = shuffled_ids(pool_blocks, rng);

        ISIM_CUDA_CHECK(out_engine.submit(
            path, kernels::gather_blocks(gp, from.data(), n, staging.get()), out_done));
        // The swap-in waits on the swap-out's event, as a scheduler would.
        ISIM_CUDA_CHECK(cudaStreamWaitEvent(in_engine.stream(), out_done, 0));
        ISIM_CUDA_CHECK(in_engine.submit(
            path, kernels::scatter_blocks(staging.get(), n, bp, to.data()), in_done));
        ISIM_CUDA_CHECK(cudaEventSynchronize(in_done));
        CHECK(cudaEventQuery(out_done) == cudaSuccess);

        // Expected, by the CPU reference on host copies.
        std::vector<unsigned char> want_staging(staging.size());
        std::vector<unsigned char> want_back(src_bytes.size(), 0xab);
        kernels::cpu::copy_blocks(
            kernels::gather_blocks(BlockPool{const_cast<unsigned char*>(src_bytes.data()), planes,
                                             pool_blocks, block_bytes},
                                   from.data(), n, want_staging.data()));
        kernels::cpu::copy_blocks(kernels::scatter_blocks(
            want_staging.data(), n, BlockPool{want_back.data(), planes, pool_blocks, block_bytes},
            to.data()));
        CHECK(std::memcmp(staging.get(), want_staging.data(), staging.size()) == 0);
        CHECK(gpu_back.download() == want_back);
      }
    }
  }
  ISIM_CUDA_CHECK(cudaEventDestroy(out_done));
  ISIM_CUDA_CHECK(cudaEventDestroy(in_done));
}

TEST_CASE("pool-to-pool copies between device and pinned host pools, scattered on both sides") {
  std::mt19937_64 rng(12);
  kernels::cuda::CopyEngine engine;
  const int64_t planes = 6, blocks = 64, block_bytes = 2048, n = 40;
  const auto bytes = random_bytes(size_t(planes * blocks * block_bytes), rng);
  DeviceBuffer<unsigned char> gpu(bytes);
  for (CopyPath path : {CopyPath::kPerBlock, CopyPath::kBatched, CopyPath::kKernel}) {
    CAPTURE(kernels::cuda::copy_path_name(path));
    PinnedBuffer host(bytes.size());
    std::memset(host.get(), 0, host.size());
    const auto from = shuffled_ids(blocks, rng), to = shuffled_ids(blocks, rng);
    const BlockPool gp{gpu.get(), planes, blocks, block_bytes},
        hp{host.get(), planes, blocks, block_bytes};
    ISIM_CUDA_CHECK(engine.submit(path, kernels::pool_to_pool(gp, from.data(), hp, to.data(), n)));
    ISIM_CUDA_CHECK(engine.synchronize());
    std::vector<unsigned char> want(bytes.size(), 0);
    kernels::cpu::copy_blocks(kernels::pool_to_pool(
        BlockPool{const_cast<unsigned char*>(bytes.data()), planes, blocks, block_bytes},
        from.data(), BlockPool{want.data(), planes, blocks, block_bytes}, to.data(), n));
    CHECK(std::memcmp(host.get(), want.data(), want.size()) == 0);
  }
}

TEST_CASE("the copy kernel rejects sizes that are not whole 16-byte vectors") {
  kernels::BlockCopy c{};
  c.src = reinterpret_cast<const void*>(uintptr_t{256});
  c.dst = reinterpret_cast<void*>(uintptr_t{512});
  c.count = 1;
  c.block_bytes = 24;
  CHECK(kernels::cuda::launch_copy_blocks_kernel(c, nullptr) == cudaErrorInvalidValue);
  c.block_bytes = 32;
  c.src = reinterpret_cast<const void*>(uintptr_t{258});
  CHECK(kernels::cuda::launch_copy_blocks_kernel(c, nullptr) == cudaErrorInvalidValue);
}
