// Decode cells: the bench models' attention shapes (bench_models(): 32 or 64 q heads, 8 kv heads,
// head dim 128) in bf16 and fp16 over batch x context x block size, compared with the measured
// device-to-device copy rate.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include <fmt/format.h>

#include "kernels/bench/bench.h"
#include "kernels/cuda/attention.h"
#include "kernels/cuda/check.h"
#include "kernels/dtype.h"

namespace isim::kernels::bench {

namespace {

// indptr of `batch` sequences of `pages` pages each.
std::vector<int32_t> uniform_indptr(int64_t batch, int64_t pages) {
  std::vector<int32_t> indptr(size_t(batch + 1));
  for (int64_t s = 0; s <= batch; ++s) indptr[size_t(s)] = int32_t(s * pages);
  return indptr;
}

// One model shape and dtype over every batch x context x block cell.
void decode_shape(const Options& opt, const Device& dev, const Ceilings& c, const ModelShape& m,
                  Dtype dtype, std::vector<Row>& rows) {
  const std::vector<int64_t> batches =
      opt.quick ? std::vector<int64_t>{1, 32, 128} : std::vector<int64_t>{1, 8, 32, 128};
  const std::vector<int64_t> contexts =
      opt.quick ? std::vector<int64_t>{4096, 32768} : std::vector<int64_t>{512, 4096, 32768};
  const std::vector<int32_t> blocks =
      opt.quick ? std::vector<int32_t>{16} : std::vector<int32_t>{16, 32};
  const AttentionShape base{m.q_heads, m.kv_heads, m.head_dim, 16};
  const int64_t token_bytes = int64_t{base.num_kv_heads} * base.head_dim * 2;  // per K or V

  // One pool (K and V planes) big enough for the largest cell, shrunk to fit free memory.
  size_t free_bytes = 0, total_bytes = 0;
  ISIM_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  int64_t pool_tokens = batches.back() * contexts.back();
  while (pool_tokens * token_bytes * 2 > int64_t(free_bytes * 6 / 10)) pool_tokens /= 2;
  const size_t plane_bytes = size_t(pool_tokens * token_bytes);
  DeviceMemory k(plane_bytes), v(plane_bytes);
  // Random bf16 in [-1, 1]; read as fp16 the same bits are finite values of modest size, which
  // is all a timing needs.
  fill_random_bf16(k.get(), plane_bytes, 1);
  fill_random_bf16(v.get(), plane_bytes, 2);

  const int64_t max_rows = batches.back() * base.num_q_heads;
  DeviceMemory q(size_t(max_rows * base.head_dim * 2)), out(q.size());
  fill_random_bf16(q.get(), q.size(), 3);
  size_t ws_bytes = 0;
  for (int32_t bt : blocks) {
    AttentionShape shape = base;
    shape.block_tokens = bt;
    for (int64_t b : batches) {
      for (int64_t ctx : contexts) {
        const std::vector<int32_t> indptr = uniform_indptr(b, ctx / bt);
        const DecodeChunkPlan plan =
            cuda::decode_plan(shape, indptr.data(), int32_t(b), dev.sm_count);
        ws_bytes = std::max(ws_bytes, cuda::decode_workspace_bytes(shape, plan));
      }
    }
  }
  DeviceMemory ws(ws_bytes);
  cudaStream_t stream;
  ISIM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::mt19937_64 rng(4);
  const std::string type = std::string(dtype_name(dtype));

  for (int32_t bt : blocks) {
    AttentionShape shape = base;
    shape.block_tokens = bt;
    const int64_t pool_blocks = pool_tokens / bt;
    std::vector<int32_t> perm(static_cast<size_t>(pool_blocks));
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    for (int64_t batch : batches) {
      for (int64_t ctx : contexts) {
        Row r;
        r.section = "decode";
        r.path = "paged-decode";
        r.model = m.model;
        r.dtype = type;
        r.batch = batch;
        r.context = ctx;
        r.block_tokens = bt;
        r.cell = fmt::format("{} {} batch {} x context {} x block {}", m.model, type, batch, ctx,
                             bt);
        r.ceiling = "d2d";
        r.ceiling_gbps = c.d2d;
        const int64_t pages = ctx / bt;
        const int64_t need = batch * pages;
        if (need > pool_blocks) {
          fmt::print(stderr, "decode: {} skipped, the pool does not fit in device memory\n",
                     r.cell);
          continue;
        }
        const int64_t kv_bytes = batch * ctx * token_bytes * 2;
        r.bytes = kv_bytes + 2 * batch * base.num_q_heads * base.head_dim * 2;  // + q and out
        // Rotate among disjoint block sets so that consecutive runs never hit in L2.
        const int64_t replicas = std::clamp<int64_t>((4 * dev.l2_bytes + kv_bytes - 1) / kv_bytes,
                                                     1, std::min<int64_t>(pool_blocks / need, 256));
        const std::vector<int32_t> indptr = uniform_indptr(batch, pages);
        const std::vector<int32_t> last(size_t(batch), bt);
        std::vector<int32_t> indices(perm.begin(), perm.begin() + replicas * need);
        DeviceMemory d_indptr(indptr.size() * 4), d_last(last.size() * 4),
            d_indices(indices.size() * 4);
        ISIM_CUDA_CHECK(
            cudaMemcpy(d_indptr.get(), indptr.data(), d_indptr.size(), cudaMemcpyHostToDevice));
        ISIM_CUDA_CHECK(
            cudaMemcpy(d_last.get(), last.data(), d_last.size(), cudaMemcpyHostToDevice));
        ISIM_CUDA_CHECK(
            cudaMemcpy(d_indices.get(), indices.data(), d_indices.size(), cudaMemcpyHostToDevice));

        const DecodeChunkPlan plan =
            cuda::decode_plan(shape, indptr.data(), int32_t(batch), dev.sm_count);
        r.splits = plan.work_items / batch;  // chunks per sequence: the batch is uniform
        cuda::DevicePagedKv kv{shape,
                               {static_cast<const int32_t*>(d_indptr.get()), nullptr,
                                static_cast<const int32_t*>(d_last.get()), int32_t(batch)},
                               k.get(),
                               v.get(),
                               dtype};
        const float scale = 1.0f / std::sqrt(float(shape.head_dim));
        r.median_ms = median_ms(stream, opt.warmup, opt.reps, [&](int i) {
          kv.table.indices = static_cast<const int32_t*>(d_indices.get()) + (i % replicas) * need;
          ISIM_CUDA_CHECK(cuda::launch_decode_attention(kv, q.get(), out.get(), nullptr, scale,
                                                        plan, ws.get(), ws.size(), stream));
        });
        r.gbps = gb_per_s(r.bytes, r.median_ms);
        rows.push_back(r);
      }
    }
  }
  ISIM_CUDA_CHECK(cudaStreamDestroy(stream));
}

}  // namespace

void bench_decode(const Options& opt, const Device& dev, const Ceilings& c,
                  std::vector<Row>& rows) {
  for (const ModelShape& m : bench_models())
    for (Dtype dtype : {Dtype::kBF16, Dtype::kF16}) decode_shape(opt, dev, c, m, dtype, rows);
}

}  // namespace isim::kernels::bench
