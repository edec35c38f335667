// Paged decode attention (one query token per sequence), flash-decoding style.
//
// One CTA handles (sequence, kv head, tile of GT q heads of that kv head's group, split):
// - every K/V vector it loads serves all GT q heads, so with GT = group size each KV tile
//   crosses memory once per GQA group;
// - head_dim / 8 lanes own one token row (16-byte loads of 8 elements); 128 threads work on
//   128 / (head_dim / 8) tokens at a time, kUnroll tokens deep, so every thread has
//   2 * kUnroll loads in flight;
// - the split's page ids are staged in shared memory a chunk ahead of the loads that use them;
// - per-thread running max / sum / accumulator are merged across lanes (shuffles) and warps
//   (shared memory). With num_splits > 1 each split writes a float partial and its log2-sum-exp
//   to the workspace, and merge_splits combines them.
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "kernels/cuda/attention.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/vec.cuh"
#include "kernels/decode_split.h"
#include "kernels/split_merge.h"

namespace isim::kernels::cuda {
namespace {

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
constexpr int kChunkPages = 128;
constexpr int kMaxSplits = kMaxDecodeSplits;

struct DecodeParams {
  const void* q;
  const void* k;
  const void* v;
  void* out;
  float* lse;
  const int32_t* indptr;
  const int32_t* indices;
  const int32_t* last_page_len;
  float* partial_out;  // [batch * num_q_heads][num_splits][D]
  float* partial_lse;  // [batch * num_q_heads][num_splits], log2 domain
  int32_t num_q_heads;
  int32_t num_kv_heads;
  int32_t block_tokens;
  int32_t group;
  int32_t head_tiles;  // group / GT
  int32_t num_splits;
  float scale_log2;  // sm_scale * log2(e): scores live in the log2 domain
};

// The q-head tile: the largest of 8, 4, 2, 1 dividing the group.
int head_tile(int32_t group) {
  for (int t : {8, 4, 2}) {
    if (group % t == 0) return t;
  }
  return 1;
}

template <typename T, int D, int GT>
__global__ void __launch_bounds__(kThreads) decode_kernel(const DecodeParams p) {
  constexpr int kLanes = D / kVec;
  constexpr int kTokPar = kThreads / kLanes;
  constexpr int kUnroll = GT >= 8 ? 2 : 4;  // keeps registers under the 255 cap at GT = 8
  constexpr float kNegInf = -INFINITY;

  const int s = blockIdx.x;
  const int split = blockIdx.z;
  const int g = blockIdx.y / p.head_tiles;
  const int h0 = g * p.group + (blockIdx.y % p.head_tiles) * GT;
  const int lane = threadIdx.x % kLanes;
  const int tg = threadIdx.x / kLanes;
  const int bt = p.block_tokens;

  const int32_t page0 = p.indptr[s];
  const int32_t pages = p.indptr[s + 1] - page0;
  const int64_t kv_len = int64_t{pages - 1} * bt + p.last_page_len[s];
  const int32_t per_split = (pages + p.num_splits - 1) / p.num_splits;
  const int32_t pb = min(pages, split * per_split);
  const int32_t pe = min(pages, pb + per_split);
  const int64_t tb = int64_t{pb} * bt;
  const int64_t te = min(int64_t{pe} * bt, kv_len);

  float qf[GT][kVec];
  const T* q = static_cast<const T*>(p.q);
#pragma unroll
  for (int j = 0; j < GT; ++j) {
    const int64_t row = int64_t{s} * p.num_q_heads + h0 + j;
    unpack8<T>(*reinterpret_cast<const uint4*>(q + row * D + lane * kVec), qf[j]);
#pragma unroll
    for (int e = 0; e < kVec; ++e) qf[j][e] *= p.scale_log2;
  }

  float m[GT], l[GT], acc[GT][kVec];
#pragma unroll
  for (int j = 0; j < GT; ++j) {
    m[j] = kNegInf;
    l[j] = 0.f;
#pragma unroll
    for (int e = 0; e < kVec; ++e) acc[j][e] = 0.f;
  }

  __shared__ int32_t page_ids[kChunkPages];
  const T* kp = static_cast<const T*>(p.k);
  const T* vp = static_cast<const T*>(p.v);
  const int64_t block_stride = int64_t{p.num_kv_heads} * bt * D;
  const int64_t head_off = int64_t{g} * bt * D + lane * kVec;

  for (int64_t c0 = tb; c0 < te; c0 += int64_t{kChunkPages} * bt) {
    const int32_t cp0 = static_cast<int32_t>(c0 / bt);
    const int32_t cpages = min(kChunkPages, pe - cp0);
    __syncthreads();  // the previous chunk's page ids are no longer read
    for (int i = threadIdx.x; i < cpages; i += kThreads) page_ids[i] = p.indices[page0 + cp0 + i];
    __syncthreads();
    const int ctoks = static_cast<int>(min(te, c0 + int64_t{kChunkPages} * bt) - c0);

    // The trip count is uniform across the CTA so that every lane reaches the shuffles.
    for (int base = 0; base < ctoks; base += kTokPar * kUnroll) {
      uint4 kr[kUnroll], vr[kUnroll];
      bool valid[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int t = base + u * kTokPar + tg;
        valid[u] = t < ctoks;
        if (valid[u]) {
          const int64_t off = page_ids[t / bt] * block_stride + head_off + int64_t{t % bt} * D;
          kr[u] = __ldcs(reinterpret_cast<const uint4*>(kp + off));
          vr[u] = __ldcs(reinterpret_cast<const uint4*>(vp + off));
        } else {
          kr[u] = make_uint4(0, 0, 0, 0);
          vr[u] = make_uint4(0, 0, 0, 0);
        }
      }
      float x[kUnroll][GT];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        float kf[kVec];
        unpack8<T>(kr[u], kf);
#pragma unroll
        for (int j = 0; j < GT; ++j) {
          float d = 0.f;
#pragma unroll
          for (int e = 0; e < kVec; ++e) d = fmaf(qf[j][e], kf[e], d);
          x[u][j] = d;
        }
      }
#pragma unroll
      for (int off = kLanes / 2; off > 0; off /= 2) {
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
          for (int j = 0; j < GT; ++j) x[u][j] += __shfl_xor_sync(0xffffffffu, x[u][j], off);
        }
      }
      // One rescale per kUnroll tokens: new max first, then the tokens' weights.
#pragma unroll
      for (int j = 0; j < GT; ++j) {
        float mx = m[j];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          if (valid[u]) mx = fmaxf(mx, x[u][j]);
        }
        const float corr = mx == kNegInf ? 1.f : exp2f(m[j] - mx);
        l[j] *= corr;
#pragma unroll
        for (int e = 0; e < kVec; ++e) acc[j][e] *= corr;
        m[j] = mx;
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        if (!valid[u]) continue;
        float vf[kVec];
        unpack8<T>(vr[u], vf);
#pragma unroll
        for (int j = 0; j < GT; ++j) {
          const float w = exp2f(x[u][j] - m[j]);
          l[j] += w;
#pragma unroll
          for (int e = 0; e < kVec; ++e) acc[j][e] = fmaf(w, vf[e], acc[j][e]);
        }
      }
    }
  }

  // Merge the token groups of a warp (lanes kLanes apart hold the same dims).
#pragma unroll
  for (int off = kLanes; off < 32; off *= 2) {
#pragma unroll
    for (int j = 0; j < GT; ++j) {
      const float mo = __shfl_xor_sync(0xffffffffu, m[j], off);
      const float lo = __shfl_xor_sync(0xffffffffu, l[j], off);
      const float mx = fmaxf(m[j], mo);
      const float cs = mx == kNegInf ? 0.f : exp2f(m[j] - mx);
      const float co = mx == kNegInf ? 0.f : exp2f(mo - mx);
      l[j] = l[j] * cs + lo * co;
#pragma unroll
      for (int e = 0; e < kVec; ++e) {
        const float ao = __shfl_xor_sync(0xffffffffu, acc[j][e], off);
        acc[j][e] = acc[j][e] * cs + ao * co;
      }
      m[j] = mx;
    }
  }

  // Merge the warps through shared memory, then write.
  __shared__ float s_acc[kWarps][GT][D];
  __shared__ float s_m[kWarps][GT];
  __shared__ float s_l[kWarps][GT];
  const int warp = threadIdx.x / 32;
  if (threadIdx.x % 32 < kLanes) {
#pragma unroll
    for (int j = 0; j < GT; ++j) {
#pragma unroll
      for (int e = 0; e < kVec; ++e) s_acc[warp][j][lane * kVec + e] = acc[j][e];
      if (lane == 0) {
        s_m[warp][j] = m[j];
        s_l[warp][j] = l[j];
      }
    }
  }
  __syncthreads();
  T* out = static_cast<T*>(p.out);
  for (int i = threadIdx.x; i < GT * D; i += kThreads) {
    const int j = i / D;
    const int d = i % D;
    float mx = kNegInf;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) mx = fmaxf(mx, s_m[w][j]);
    float sum = 0.f, o = 0.f;
    if (mx != kNegInf) {
#pragma unroll
      for (int w = 0; w < kWarps; ++w) {
        const float c = exp2f(s_m[w][j] - mx);
        sum += s_l[w][j] * c;
        o += s_acc[w][j][d] * c;
      }
    }
    const int64_t row = int64_t{s} * p.num_q_heads + h0 + j;
    const float value = sum > 0.f ? o / sum : 0.f;
    const float lse2 = sum > 0.f ? mx + log2f(sum) : kNegInf;
    if (p.num_splits == 1) {
      out[row * D + d] = from_float<T>(value);
      if (p.lse && d == 0) p.lse[row] = lse2 * kLn2;
    } else {
      const int64_t prow = row * p.num_splits + split;
      p.partial_out[prow * D + d] = value;
      if (d == 0) p.partial_lse[prow] = lse2;
    }
  }
}

// Combines the splits of one (sequence, q head) row: weights 2^(lse_k - max).
template <typename T, int D>
__global__ void __launch_bounds__(D)
    merge_splits(const float* partial_out, const float* partial_lse, T* out, float* lse,
                 int num_splits) {
  const int64_t row = blockIdx.x;
  const float* pl = partial_lse + row * num_splits;
  const float mx = split_merge_max(pl, num_splits);
  const float sum = split_merge_sum(pl, num_splits, mx);
  const int d = threadIdx.x;
  out[row * D + d] = from_float<T>(
      split_merge_value(pl, partial_out + row * num_splits * D + d, D, num_splits, mx, sum));
  if (lse && d == 0) lse[row] = split_merge_lse2(mx, sum) * kLn2;
}

size_t align256(size_t n) {
  return (n + 255) / 256 * 256;
}

template <int GT, typename T, int D>
cudaError_t launch_tile(const DecodeParams& prm, int32_t batch, int num_splits,
                        cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(batch),
                  static_cast<unsigned>(prm.num_kv_heads * prm.head_tiles),
                  static_cast<unsigned>(num_splits));
  decode_kernel<T, D, GT><<<grid, kThreads, 0, stream>>>(prm);
  ISIM_CUDA_CHECK(cudaGetLastError());
  if (num_splits > 1) {
    merge_splits<T, D><<<static_cast<unsigned>(int64_t{batch} * prm.num_q_heads), D, 0, stream>>>(
        prm.partial_out, prm.partial_lse, static_cast<T*>(prm.out), prm.lse, num_splits);
    ISIM_CUDA_CHECK(cudaGetLastError());
  }
  return cudaSuccess;
}

}  // namespace

namespace {

template <int D>
cudaError_t occupancy(int gt, int* n) {
  const auto query = [&](auto kernel) {
    return cudaOccupancyMaxActiveBlocksPerMultiprocessor(n, kernel, kThreads, 0);
  };
  switch (gt) {
    case 8:
      return query(decode_kernel<__nv_bfloat16, D, 8>);
    case 4:
      return query(decode_kernel<__nv_bfloat16, D, 4>);
    case 2:
      return query(decode_kernel<__nv_bfloat16, D, 2>);
    default:
      return query(decode_kernel<__nv_bfloat16, D, 1>);
  }
}

// CTAs of the decode kernel for this group's head tile that one SM holds at once (bf16; fp16
// uses the same registers and shared memory). 4 when the runtime cannot say (no device).
int resident_per_sm(const AttentionShape& shape) {
  int n = 0;
  const int gt = head_tile(shape.group_size());
  const cudaError_t e = shape.head_dim == 128 ? occupancy<128>(gt, &n) : occupancy<64>(gt, &n);
  if (e != cudaSuccess || n < 1) {
    cudaGetLastError();  // clear it: this is a planning query, not a launch
    return 4;
  }
  return n;
}

}  // namespace

int decode_num_splits(int32_t batch, const AttentionShape& shape, int64_t max_kv_len,
                      int sm_count) {
  if (batch <= 0 || shape.num_kv_heads <= 0 || shape.num_q_heads % shape.num_kv_heads != 0 ||
      !supported_head_dim(shape.head_dim))
    return 1;
  const int64_t items =
      int64_t{batch} * shape.num_kv_heads * (shape.group_size() / head_tile(shape.group_size()));
  return decode_split_count(items, max_kv_len, int64_t{sm_count} * resident_per_sm(shape));
}

size_t decode_workspace_bytes(int32_t batch, const AttentionShape& shape, int num_splits) {
  const size_t rows = size_t(batch) * size_t(shape.num_q_heads) * size_t(num_splits);
  return align256(rows * size_t(shape.head_dim) * sizeof(float)) + rows * sizeof(float);
}

cudaError_t launch_decode_attention(const DevicePagedKv& kv, const void* q, void* out, float* lse,
                                    float sm_scale, int num_splits, void* workspace,
                                    size_t workspace_bytes, cudaStream_t stream) {
  return cuda_status([&]() -> cudaError_t {
    const AttentionShape& sh = kv.shape;
    const int32_t batch = kv.table.batch;
    if (!check_shape(sh).empty() || !supported_head_dim(sh.head_dim) || batch < 0 ||
        num_splits < 1 || num_splits > kMaxSplits)
      return cudaErrorInvalidValue;
    if (batch == 0) return cudaSuccess;
    if (!aligned16(q) || !aligned16(out) || !aligned16(kv.k) || !aligned16(kv.v))
      return cudaErrorInvalidValue;
    if (num_splits > 1 &&
        (!workspace || workspace_bytes < decode_workspace_bytes(batch, sh, num_splits)))
      return cudaErrorInvalidValue;

    DecodeParams prm{};
    set_paged_params(prm, kv, q, out, lse, sm_scale);
    const int gt = head_tile(prm.group);
    prm.head_tiles = prm.group / gt;
    prm.num_splits = num_splits;
    if (num_splits > 1) {
      const size_t rows = size_t(batch) * size_t(sh.num_q_heads) * size_t(num_splits);
      prm.partial_out = static_cast<float*>(workspace);
      prm.partial_lse = reinterpret_cast<float*>(
          static_cast<char*>(workspace) + align256(rows * size_t(sh.head_dim) * sizeof(float)));
    }
    if (int64_t{sh.num_kv_heads} * prm.head_tiles > 65535) return cudaErrorInvalidValue;

    return dispatch_half_dtype(kv.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      return dispatch_head_dim(sh.head_dim, [&](auto dim) {
        constexpr int D = decltype(dim)::value;
        switch (gt) {
          case 8:
            return launch_tile<8, T, D>(prm, batch, num_splits, stream);
          case 4:
            return launch_tile<4, T, D>(prm, batch, num_splits, stream);
          case 2:
            return launch_tile<2, T, D>(prm, batch, num_splits, stream);
          default:
            return launch_tile<1, T, D>(prm, batch, num_splits, stream);
        }
      });
    });
  });
}

}  // namespace isim::kernels::cuda
