// Copy cells: scattered 16-token KV blocks of one layer (K and V planes, Llama-3-8B: 32 KiB
// each) between the device pool and contiguous pinned staging, by each copy path, each
// direction alone and both at once, compared with large pinned cudaMemcpy rates.
#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

#include <fmt/format.h>

#include "kernels/bench/bench.h"
#include "kernels/cuda/block_copy.h"
#include "kernels/cuda/check.h"

namespace isim::kernels::bench {

void bench_copy(const Options& opt, const Device&, const Ceilings& c, std::vector<Row>& rows) {
  const std::vector<int64_t> counts = opt.quick ? std::vector<int64_t>{64, 1024, 16384}
                                                : std::vector<int64_t>{64, 256, 1024, 4096, 16384};
  const int64_t block_tokens = 16, planes = 2;
  const int64_t block_bytes = block_tokens * 8 * 128 * 2;
  const int64_t max_n = counts.back();
  const int64_t pool_blocks = 2 * max_n;  // gather from one half of the ids, scatter to the other

  DeviceMemory pool(size_t(planes * pool_blocks * block_bytes));
  ISIM_CUDA_CHECK(cudaMemset(pool.get(), 0x3c, pool.size()));
  PinnedMemory out_staging(size_t(planes * max_n * block_bytes));
  PinnedMemory in_staging(out_staging.size());
  std::fill_n(static_cast<char*>(in_staging.get()), in_staging.size(), char{0x3c});
  std::vector<int32_t> perm(static_cast<size_t>(pool_blocks));
  std::iota(perm.begin(), perm.end(), 0);
  std::mt19937_64 rng(5);
  std::shuffle(perm.begin(), perm.end(), rng);
  const int32_t* gather_ids = perm.data();
  const int32_t* scatter_ids = perm.data() + max_n;
  const BlockPool dev_pool{pool.get(), planes, pool_blocks, block_bytes};

  cuda::CopyEngine out_engine, in_engine;  // one dedicated copy stream per direction
  cudaStream_t s0;
  ISIM_CUDA_CHECK(cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking));
  cudaEvent_t fork, out_done, in_done;
  ISIM_CUDA_CHECK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  ISIM_CUDA_CHECK(cudaEventCreateWithFlags(&out_done, cudaEventDisableTiming));
  ISIM_CUDA_CHECK(cudaEventCreateWithFlags(&in_done, cudaEventDisableTiming));
  const int warmup = std::max(1, opt.warmup / 3), reps = std::max(3, opt.reps / 4);

  for (int64_t n : counts) {
    const BlockCopy out = gather_blocks(dev_pool, gather_ids, n, out_staging.get());
    const BlockCopy in = scatter_blocks(in_staging.get(), n, dev_pool, scatter_ids);
    for (cuda::CopyPath path : {cuda::CopyPath::kPerBlock, cuda::CopyPath::kCoalesced,
                                cuda::CopyPath::kBatched, cuda::CopyPath::kKernel}) {
      if (path == cuda::CopyPath::kBatched && !cuda::batched_copy_available()) {
        fmt::print(stderr,
                   "copy: batched path skipped: this CUDA runtime has no "
                   "cudaMemcpyBatchAsync\n");
        continue;
      }
      for (const char* dir : {"d2h", "h2d", "both"}) {
        const bool do_out = dir[0] != 'h', do_in = dir[0] != 'd';
        Row r;
        r.section = "copy";
        r.path = std::string(cuda::copy_path_name(path));
        r.direction = dir;
        r.blocks = n;
        r.block_tokens = block_tokens;
        r.cell = fmt::format("{} blocks {}", n, dir);
        r.bytes = out.bytes() * (do_out + do_in);
        r.ceiling = do_out && do_in ? "pinned both" : do_out ? "pinned d2h" : "pinned h2d";
        r.ceiling_gbps = do_out && do_in ? c.duplex : do_out ? c.d2h : c.h2d;
        r.median_ms = median_ms(s0, warmup, reps, [&](int) {
          ISIM_CUDA_CHECK(cudaEventRecord(fork, s0));
          if (do_out) {
            ISIM_CUDA_CHECK(cudaStreamWaitEvent(out_engine.stream(), fork, 0));
            ISIM_CUDA_CHECK(out_engine.submit(path, out, out_done));
          }
          if (do_in) {
            ISIM_CUDA_CHECK(cudaStreamWaitEvent(in_engine.stream(), fork, 0));
            ISIM_CUDA_CHECK(in_engine.submit(path, in, in_done));
          }
          if (do_out) ISIM_CUDA_CHECK(cudaStreamWaitEvent(s0, out_done, 0));
          if (do_in) ISIM_CUDA_CHECK(cudaStreamWaitEvent(s0, in_done, 0));
        });
        r.gbps = gb_per_s(r.bytes, r.median_ms);
        rows.push_back(r);
      }
    }
  }
  ISIM_CUDA_CHECK(cudaEventDestroy(fork));
  ISIM_CUDA_CHECK(cudaEventDestroy(out_done));
  ISIM_CUDA_CHECK(cudaEventDestroy(in_done));
  ISIM_CUDA_CHECK(cudaStreamDestroy(s0));
}

}  // namespace isim::kernels::bench
