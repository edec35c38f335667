// Paged decode attention (one query token per sequence), flash-decoding style: the launchers of
// kernels/cuda/attention.h, the chunk-map and merge kernels, and the dispatch table.
//
// - Kernels: decode_simt.cuh (CUDA cores, head tiles of 1, 2, 4, 8) and decode_mma.cuh (tensor
//   cores, 16- or 64-row tiles), both streaming K/V through decode_pipeline.cuh's three-stage
//   cp.async pipeline. The tile is chosen by decode_head_tile (kernels/decode_split.h).
// - Instances: {bf16, f16} x head_dim {64, 128} x block_tokens {8, 16, 32, runtime} x tile
//   {simt 1, 2, 4, 8; mma 16, 64}; block sizes other than 8, 16, 32 take the runtime instance.
// - A split plan (DecodeChunkPlan.split()) takes three launches: map_chunks fills the chunk map
//   (chunk_indptr, item_seq) in the workspace from the device page table, the decode kernel runs
//   one CTA per (work item, kv head, head tile) and writes final rows for one-chunk sequences
//   and log2-domain partials for the others, and merge_chunks combines those.
#include <algorithm>
#include <climits>
#include <cmath>
#include <utility>

#include "kernels/cuda/attention.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/decode_mma.cuh"
#include "kernels/cuda/decode_simt.cuh"
#include "kernels/decode_split.h"
#include "kernels/split_merge.h"

namespace isim::kernels::cuda {
namespace {

using decode::kThreads;
using decode::Params;
using KernelFn = void (*)(Params);

// chunk_indptr[s] = sum over earlier sequences of ceil(pages / chunk_pages), and item_seq of each
// item (at most `capacity`, the host plan's count). One CTA scans the batch kThreads at a time.
__global__ void __launch_bounds__(kThreads)
    map_chunks(const int32_t* indptr, int32_t batch, int32_t chunk_pages, int64_t capacity,
               int32_t* chunk_indptr, int32_t* item_seq) {
  __shared__ int32_t warp_total[decode::kWarps];
  __shared__ int32_t carry;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int warp = static_cast<int>(threadIdx.x) / 32;
  if (threadIdx.x == 0) carry = 0;
  for (int32_t base = 0; base < batch; base += kThreads) {
    const int32_t s = base + static_cast<int32_t>(threadIdx.x);
    const auto n = static_cast<int32_t>(
        s < batch ? (int64_t{indptr[s + 1] - indptr[s]} + chunk_pages - 1) / chunk_pages : 0);
    int32_t incl = n;
#pragma unroll
    for (int off = 1; off < 32; off *= 2) {
      const int32_t up = __shfl_up_sync(0xffffffffu, incl, off);
      if (lane >= off) incl += up;
    }
    if (lane == 31) warp_total[warp] = incl;
    __syncthreads();
    int32_t first = carry + incl - n;
    for (int k = 0; k < warp; ++k) first += warp_total[k];
    if (s < batch) {
      chunk_indptr[s] = first;
      for (int32_t i = 0; i < n && first + i < capacity; ++i) item_seq[first + i] = s;
    }
    __syncthreads();  // everyone has read carry and warp_total
    if (threadIdx.x == kThreads - 1) carry = first + n;
    __syncthreads();
  }
  if (threadIdx.x == 0) chunk_indptr[batch] = carry;
}

// Combines the chunks of one (sequence, q head) row: weights 2^(lse_k - max). Rows of one-chunk
// sequences were written by the decode kernel.
template <typename T, int D>
__global__ void __launch_bounds__(D)
    merge_chunks(const float* partial_out, const float* partial_lse, const int32_t* chunk_indptr,
                 int32_t num_q_heads, T* out, float* lse) {
  const int64_t row = blockIdx.x;
  const auto s = static_cast<int32_t>(row / num_q_heads);
  const auto h = static_cast<int32_t>(row % num_q_heads);
  const int32_t first = chunk_indptr[s];
  const int n = chunk_indptr[s + 1] - first;
  if (n <= 1) return;
  const int64_t prow = int64_t{first} * num_q_heads + int64_t{h} * n;
  const float* pl = partial_lse + prow;
  const float mx = split_merge_max(pl, n);
  const float sum = split_merge_sum(pl, n, mx);
  const int d = static_cast<int>(threadIdx.x);
  out[row * D + d] =
      from_float<T>(split_merge_value(pl, partial_out + prow * D + d, D, n, mx, sum));
  if (lse && d == 0) lse[row] = split_merge_lse2(mx, sum) * kLn2;
}

struct KernelChoice {
  KernelFn fn = nullptr;
  int smem = 0;
};

template <typename T, int D, int BT>
KernelChoice choose_tile(DecodeHeadTile tile) {
  constexpr int kSimt = decode::simt_smem_bytes<D>(), kMma = decode::mma_smem_bytes<D>();
  if (tile.tensor_cores)
    return tile.rows == 16 ? KernelChoice{decode::decode_mma_kernel<T, D, BT, 1>, kMma}
                           : KernelChoice{decode::decode_mma_kernel<T, D, BT, 4>, kMma};
  switch (tile.rows) {
    case 1:
      return {decode::decode_simt_kernel<T, D, BT, 1>, kSimt};
    case 2:
      return {decode::decode_simt_kernel<T, D, BT, 2>, kSimt};
    case 4:
      return {decode::decode_simt_kernel<T, D, BT, 4>, kSimt};
    default:
      return {decode::decode_simt_kernel<T, D, BT, 8>, kSimt};
  }
}

template <typename T, int D>
KernelChoice choose_block(int32_t block_tokens, DecodeHeadTile tile) {
  switch (block_tokens) {
    case 8:
      return choose_tile<T, D, 8>(tile);
    case 16:
      return choose_tile<T, D, 16>(tile);
    case 32:
      return choose_tile<T, D, 32>(tile);
    default:
      return choose_tile<T, D, 0>(tile);
  }
}

// The decode kernel instance for this dtype and shape, with its shared memory allowance set.
cudaError_t choose_kernel(Dtype dtype, const AttentionShape& sh, KernelChoice* choice) {
  const DecodeHeadTile tile = decode_head_tile(sh.group_size());
  const cudaError_t e = dispatch_half_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return dispatch_head_dim(sh.head_dim, [&](auto dim) {
      *choice = choose_block<T, decltype(dim)::value>(sh.block_tokens, tile);
      return cudaSuccess;
    });
  });
  if (e != cudaSuccess) return e;
  return cudaFuncSetAttribute(reinterpret_cast<const void*>(choice->fn),
                              cudaFuncAttributeMaxDynamicSharedMemorySize, choice->smem);
}

// CTAs of the chosen instance that one SM holds at once (bf16; fp16 uses the same registers and
// shared memory). Without an answer (no device), what an sm_90 SM's 228 KiB of shared memory
// allow.
int resident_per_sm(const AttentionShape& shape) {
  KernelChoice choice;
  int n = 0;
  if (choose_kernel(Dtype::kBF16, shape, &choice) != cudaSuccess ||
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, choice.fn, kThreads, choice.smem) !=
          cudaSuccess ||
      n < 1) {
    cudaGetLastError();  // clear it: this is a planning query, not a launch
    return std::max(1, (228 << 10) / (choice.smem + (1 << 10)));
  }
  return n;
}

size_t align256(size_t n) {
  return (n + 255) / 256 * 256;
}

// The workspace of a split plan: chunk_indptr, item_seq, partial_out, partial_lse.
struct Workspace {
  size_t map, items, out, lse;
  Workspace(const AttentionShape& sh, const DecodeChunkPlan& plan)
      : map(align256((size_t(plan.batch) + 1) * sizeof(int32_t))),
        items(align256(size_t(plan.work_items) * sizeof(int32_t))),
        out(align256(size_t(plan.work_items) * size_t(sh.num_q_heads) * size_t(sh.head_dim) *
                     sizeof(float))),
        lse(size_t(plan.work_items) * size_t(sh.num_q_heads) * sizeof(float)) {}
  size_t bytes() const { return map + items + out + lse; }
};

// Points prm at the workspace's parts; returns the chunk map's (chunk_indptr, item_seq) for
// map_chunks to fill.
std::pair<int32_t*, int32_t*> carve(Params& prm, const Workspace& ws, void* workspace) {
  char* base = static_cast<char*>(workspace);
  auto* chunk_indptr = reinterpret_cast<int32_t*>(base);
  auto* item_seq = reinterpret_cast<int32_t*>(base + ws.map);
  prm.chunk_indptr = chunk_indptr;
  prm.item_seq = item_seq;
  prm.partial_out = reinterpret_cast<float*>(base + ws.map + ws.items);
  prm.partial_lse = reinterpret_cast<float*>(base + ws.map + ws.items + ws.out);
  return {chunk_indptr, item_seq};
}

bool valid_plan(const DecodeChunkPlan& plan, int32_t batch) {
  return plan.batch == batch && plan.chunk_pages >= 1 && plan.work_items >= batch &&
         plan.work_items <= INT_MAX;
}

template <typename T, int D>
cudaError_t launch_merge(const Params& prm, int32_t batch, cudaStream_t stream) {
  merge_chunks<T, D><<<static_cast<unsigned>(int64_t{batch} * prm.num_q_heads), D, 0, stream>>>(
      prm.partial_out, prm.partial_lse, prm.chunk_indptr, prm.num_q_heads, static_cast<T*>(prm.out),
      prm.lse);
  return cudaGetLastError();
}

}  // namespace

DecodeChunkPlan decode_plan(const AttentionShape& shape, const int32_t* host_indptr, int32_t batch,
                            int sm_count) {
  if (batch <= 0 || !check_shape(shape).empty() || !supported_head_dim(shape.head_dim))
    return {std::max(batch, 0), INT_MAX, std::max(batch, 0)};  // unsplit; a launch rejects it
  const int64_t ctas = int64_t{shape.num_kv_heads} * decode_head_tiles(shape.group_size());
  return decode_chunk_plan_auto(host_indptr, batch, ctas,
                                int64_t{sm_count} * resident_per_sm(shape), shape.block_tokens);
}

size_t decode_workspace_bytes(const AttentionShape& shape, const DecodeChunkPlan& plan) {
  return plan.split() ? Workspace(shape, plan).bytes() : 0;
}

cudaError_t launch_decode_attention(const DevicePagedKv& kv, const void* q, void* out, float* lse,
                                    float sm_scale, const DecodeChunkPlan& plan, void* workspace,
                                    size_t workspace_bytes, cudaStream_t stream) {
  return cuda_status([&]() -> cudaError_t {
    const AttentionShape& sh = kv.shape;
    const int32_t batch = kv.table.batch;
    if (!check_shape(sh).empty() || !supported_head_dim(sh.head_dim) ||
        (kv.dtype != Dtype::kBF16 && kv.dtype != Dtype::kF16) || batch < 0 ||
        !valid_plan(plan, batch))
      return cudaErrorInvalidValue;
    if (batch == 0) return cudaSuccess;
    if (!aligned16(q) || !aligned16(out) || !aligned16(kv.k) || !aligned16(kv.v))
      return cudaErrorInvalidValue;
    if (plan.split() && (!workspace || workspace_bytes < decode_workspace_bytes(sh, plan)))
      return cudaErrorInvalidValue;
    if (int64_t{sh.num_kv_heads} * decode_head_tiles(sh.group_size()) > 65535)
      return cudaErrorInvalidValue;

    Params prm{};
    set_paged_params(prm, kv, q, out, lse, sm_scale);
    prm.head_tiles = decode_head_tiles(prm.group);
    prm.chunk_pages = plan.chunk_pages;
    KernelChoice choice;
    ISIM_CUDA_CHECK(choose_kernel(kv.dtype, sh, &choice));
    if (plan.split()) {
      const auto [chunk_indptr, item_seq] = carve(prm, Workspace(sh, plan), workspace);
      map_chunks<<<1, kThreads, 0, stream>>>(prm.indptr, batch, plan.chunk_pages, plan.work_items,
                                             chunk_indptr, item_seq);
      ISIM_CUDA_CHECK(cudaGetLastError());
    }
    const dim3 grid(static_cast<unsigned>(plan.split() ? plan.work_items : batch),
                    static_cast<unsigned>(sh.num_kv_heads * prm.head_tiles));
    choice.fn<<<grid, kThreads, static_cast<size_t>(choice.smem), stream>>>(prm);
    ISIM_CUDA_CHECK(cudaGetLastError());
    if (!plan.split()) return cudaSuccess;
    return dispatch_half_dtype(kv.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      return dispatch_head_dim(sh.head_dim, [&](auto dim) {
        return launch_merge<T, decltype(dim)::value>(prm, batch, stream);
      });
    });
  });
}

}  // namespace isim::kernels::cuda
