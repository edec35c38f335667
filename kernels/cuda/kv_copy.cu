// Byte-moving kernels: the gather/scatter block copy and the KV append. Both are dtype-agnostic
// and move 16-byte vectors; a side that is pinned host memory is read or written over PCIe
// directly by the SMs (zero-copy), which is what makes one kernel replace many small memcpys.
#include <algorithm>

#include "kernels/cuda/attention.h"
#include "kernels/cuda/block_copy.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/vec.cuh"

namespace isim::kernels::cuda {
namespace {

constexpr int kCopyThreads = 256;
constexpr int kCopyUnroll = 4;  // 16-byte loads in flight per thread before the stores

// A grid-stride loop over the (block i, plane p) segments, one segment per CTA at a time, on at
// most kMaxCopyCtas CTAs (block_copy.h).
__global__ void __launch_bounds__(kCopyThreads) copy_blocks_kernel(const BlockCopy c) {
  const int64_t segments = c.count * c.planes;
  const int64_t nvec = c.block_bytes / 16;
  for (int64_t seg = blockIdx.x; seg < segments; seg += gridDim.x) {
    const int64_t i = seg / c.planes;
    const int64_t p = seg % c.planes;
    const int64_t sb = c.src_ids ? c.src_ids[i] : i;
    const int64_t db = c.dst_ids ? c.dst_ids[i] : i;
    const auto* src = reinterpret_cast<const uint4*>(static_cast<const char*>(c.src) +
                                                     p * c.src_plane_stride + sb * c.block_bytes);
    auto* dst = reinterpret_cast<uint4*>(static_cast<char*>(c.dst) + p * c.dst_plane_stride +
                                         db * c.block_bytes);
    for (int64_t v0 = threadIdx.x; v0 < nvec; v0 += int64_t{kCopyThreads} * kCopyUnroll) {
      uint4 r[kCopyUnroll];
#pragma unroll
      for (int u = 0; u < kCopyUnroll; ++u) {
        const int64_t v = v0 + int64_t{u} * kCopyThreads;
        if (v < nvec) r[u] = __ldcs(src + v);
      }
#pragma unroll
      for (int u = 0; u < kCopyUnroll; ++u) {
        const int64_t v = v0 + int64_t{u} * kCopyThreads;
        if (v < nvec) __stcs(dst + v, r[u]);
      }
    }
  }
}

struct AppendParams {
  const int32_t* append_indptr;
  const int32_t* indptr;
  const int32_t* indices;
  const int32_t* last_page_len;
  const uint4* k_new;
  const uint4* v_new;
  uint4* k_pool;
  uint4* v_pool;
  int64_t total_tokens;
  int32_t batch;
  int32_t num_kv_heads;
  int32_t block_tokens;
  int32_t row_vecs;  // 16-byte vectors per (token, kv head) row
};

__global__ void append_kv_kernel(const AppendParams a) {
  const int64_t total = a.total_tokens * a.num_kv_heads * a.row_vecs;
  for (int64_t idx = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; idx < total;
       idx += int64_t{gridDim.x} * blockDim.x) {
    const int64_t c = idx % a.row_vecs;
    const int64_t h = (idx / a.row_vecs) % a.num_kv_heads;
    const int64_t tok = idx / (int64_t{a.row_vecs} * a.num_kv_heads);
    int lo = 0, hi = a.batch;  // the last s with append_indptr[s] <= tok
    while (hi - lo > 1) {
      const int mid = (lo + hi) / 2;
      if (a.append_indptr[mid] <= tok)
        lo = mid;
      else
        hi = mid;
    }
    const int s = lo;
    const int64_t n = a.append_indptr[s + 1] - a.append_indptr[s];
    const int64_t kv_len =
        int64_t{a.indptr[s + 1] - a.indptr[s] - 1} * a.block_tokens + a.last_page_len[s];
    const int64_t pos = kv_len - n + (tok - a.append_indptr[s]);
    const int64_t block = a.indices[a.indptr[s] + pos / a.block_tokens];
    const int64_t dst =
        ((block * a.num_kv_heads + h) * a.block_tokens + pos % a.block_tokens) * a.row_vecs + c;
    const int64_t src = (tok * a.num_kv_heads + h) * a.row_vecs + c;
    a.k_pool[dst] = a.k_new[src];
    a.v_pool[dst] = a.v_new[src];
  }
}

}  // namespace

cudaError_t launch_copy_blocks_kernel(const BlockCopy& c, cudaStream_t stream) {
  return cuda_status([&]() -> cudaError_t {
    if (c.count < 0 || c.planes < 1 || c.block_bytes < 16 || c.block_bytes % 16 != 0 ||
        c.src_plane_stride % 16 != 0 || c.dst_plane_stride % 16 != 0)
      return cudaErrorInvalidValue;
    if (c.count == 0) return cudaSuccess;
    if (!c.src || !c.dst || !aligned16(c.src) || !aligned16(c.dst)) return cudaErrorInvalidValue;
    const int64_t grid = std::min<int64_t>(c.segments(), kMaxCopyCtas);
    copy_blocks_kernel<<<static_cast<unsigned>(grid), kCopyThreads, 0, stream>>>(c);
    ISIM_CUDA_CHECK(cudaGetLastError());
    return cudaSuccess;
  });
}

cudaError_t launch_append_kv(const AttentionShape& shape, const PageTable& table,
                             const int32_t* append_indptr, int64_t total_tokens, const void* k_new,
                             const void* v_new, void* k_pool, void* v_pool, Dtype dtype,
                             cudaStream_t stream) {
  return cuda_status([&]() -> cudaError_t {
    const int64_t row_bytes = int64_t{shape.head_dim} * dtype_bytes(dtype);
    if (!check_shape(shape).empty() || row_bytes % 16 != 0 || total_tokens < 0 || table.batch < 0)
      return cudaErrorInvalidValue;
    if (table.batch == 0 || total_tokens == 0) return cudaSuccess;
    if (!aligned16(k_new) || !aligned16(v_new) || !aligned16(k_pool) || !aligned16(v_pool))
      return cudaErrorInvalidValue;
    AppendParams a{};
    a.append_indptr = append_indptr;
    a.indptr = table.indptr;
    a.indices = table.indices;
    a.last_page_len = table.last_page_len;
    a.k_new = static_cast<const uint4*>(k_new);
    a.v_new = static_cast<const uint4*>(v_new);
    a.k_pool = static_cast<uint4*>(k_pool);
    a.v_pool = static_cast<uint4*>(v_pool);
    a.total_tokens = total_tokens;
    a.batch = table.batch;
    a.num_kv_heads = shape.num_kv_heads;
    a.block_tokens = shape.block_tokens;
    a.row_vecs = static_cast<int32_t>(row_bytes / 16);
    const int64_t total = total_tokens * shape.num_kv_heads * a.row_vecs;
    const int64_t grid = std::min<int64_t>((total + 255) / 256, 65536);
    append_kv_kernel<<<static_cast<unsigned>(grid), 256, 0, stream>>>(a);
    ISIM_CUDA_CHECK(cudaGetLastError());
    return cudaSuccess;
  });
}

}  // namespace isim::kernels::cuda
