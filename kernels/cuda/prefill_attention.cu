// Paged multi-token attention: ragged causal query chunks over paged KV (FlashAttention-style
// tiling on CUDA cores, no tensor cores).
//
// One CTA handles (sequence, kv head, tile of queries). Its 64 rows are (query, q head) pairs of
// that kv head's GQA group, so every K/V tile in shared memory serves the whole group. Two
// adjacent lanes own a row: each scores half of the 32 keys of a tile, they agree on the running
// max and sum through one shuffle, and each accumulates half of the head dims. Masked and padded
// keys are zero-filled so that a zero weight never multiplies garbage.
#include <cmath>
#include <type_traits>

#include "kernels/cuda/attention.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/vec.cuh"

namespace isim::kernels::cuda {
namespace {

constexpr int kThreads = 128;
constexpr int kRows = kThreads / 2;
constexpr int kTileKeys = 32;

struct PrefillParams {
  const void* q;
  const void* k;
  const void* v;
  void* out;
  float* lse;
  const int32_t* qo_indptr;
  const int32_t* indptr;
  const int32_t* indices;
  const int32_t* last_page_len;
  int32_t num_q_heads;
  int32_t num_kv_heads;
  int32_t block_tokens;
  int32_t group;
  int32_t queries_per_cta;  // kRows / group
  float scale_log2;
};

template <typename T, int D>
__global__ void __launch_bounds__(kThreads) prefill_kernel(const PrefillParams p) {
  constexpr int kStride = D + kVec;  // padded smem row: 16-byte aligned, fewer bank conflicts
  constexpr int kChunks = D / kVec;
  constexpr int kHalf = D / 2;
  constexpr int kKeys = kTileKeys / 2;
  constexpr float kNegInf = -INFINITY;
  __shared__ __align__(16) T sq[kRows * kStride];
  __shared__ __align__(16) T sk[kTileKeys * kStride];
  __shared__ __align__(16) T sv[kTileKeys * kStride];
  __shared__ float sp[kRows][kTileKeys + 1];

  const int s = blockIdx.z;
  const int g = blockIdx.y;
  const int G = p.group;
  const int32_t q_begin = p.qo_indptr[s];
  const int32_t q_len = p.qo_indptr[s + 1] - q_begin;
  const int32_t qt0 = blockIdx.x * p.queries_per_cta;
  if (qt0 >= q_len) return;  // uniform: the whole CTA leaves
  const int nq = min(p.queries_per_cta, q_len - qt0);
  const int rows = nq * G;
  const int bt = p.block_tokens;
  const int32_t page0 = p.indptr[s];
  const int64_t kv_len = int64_t{p.indptr[s + 1] - page0 - 1} * bt + p.last_page_len[s];
  const int64_t delta = kv_len - q_len;  // query i sees kv positions [0, delta + i]
  const int64_t kv_end = delta + qt0 + nq;

  const T* q = static_cast<const T*>(p.q);
  for (int i = threadIdx.x; i < kRows * kChunks; i += kThreads) {
    const int r = i / kChunks, c = i % kChunks;
    uint4 val = make_uint4(0, 0, 0, 0);
    if (r < rows) {
      const int64_t row = int64_t{q_begin + qt0 + r / G} * p.num_q_heads + g * G + r % G;
      val = *reinterpret_cast<const uint4*>(q + row * D + c * kVec);
    }
    *reinterpret_cast<uint4*>(&sq[r * kStride + c * kVec]) = val;
  }

  const int r = threadIdx.x >> 1;
  const int part = threadIdx.x & 1;
  const int64_t limit = r < rows ? delta + qt0 + r / G : -1;
  float m = kNegInf, l = 0.f;
  float o[kHalf];
#pragma unroll
  for (int e = 0; e < kHalf; ++e) o[e] = 0.f;

  const T* kp = static_cast<const T*>(p.k);
  const T* vp = static_cast<const T*>(p.v);
  for (int64_t kb = 0; kb < kv_end; kb += kTileKeys) {
    __syncthreads();  // the previous tile is consumed (and, the first time, sq is written)
    for (int i = threadIdx.x; i < kTileKeys * kChunks; i += kThreads) {
      const int t = i / kChunks, c = i % kChunks;
      const int64_t pos = kb + t;
      uint4 kk = make_uint4(0, 0, 0, 0), vv = make_uint4(0, 0, 0, 0);
      if (pos < kv_end) {
        const int64_t block = p.indices[page0 + pos / bt];
        const int64_t off = ((block * p.num_kv_heads + g) * bt + pos % bt) * D + c * kVec;
        kk = *reinterpret_cast<const uint4*>(kp + off);
        vv = *reinterpret_cast<const uint4*>(vp + off);
      }
      *reinterpret_cast<uint4*>(&sk[t * kStride + c * kVec]) = kk;
      *reinterpret_cast<uint4*>(&sv[t * kStride + c * kVec]) = vv;
    }
    __syncthreads();

    float x[kKeys];
#pragma unroll
    for (int j = 0; j < kKeys; ++j) x[j] = 0.f;
    for (int c = 0; c < kChunks; ++c) {
      float qf[kVec];
      unpack8<T>(*reinterpret_cast<const uint4*>(&sq[r * kStride + c * kVec]), qf);
#pragma unroll
      for (int j = 0; j < kKeys; ++j) {
        float kf[kVec];
        unpack8<T>(*reinterpret_cast<const uint4*>(&sk[(part * kKeys + j) * kStride + c * kVec]),
                   kf);
#pragma unroll
        for (int e = 0; e < kVec; ++e) x[j] = fmaf(qf[e], kf[e], x[j]);
      }
    }
    float tile_max = kNegInf;
#pragma unroll
    for (int j = 0; j < kKeys; ++j) {
      x[j] = kb + part * kKeys + j <= limit ? x[j] * p.scale_log2 : kNegInf;
      tile_max = fmaxf(tile_max, x[j]);
    }
    tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
    const float m_new = fmaxf(m, tile_max);
    const float corr = m_new == kNegInf ? 1.f : exp2f(m - m_new);
    float sum = 0.f;
#pragma unroll
    for (int j = 0; j < kKeys; ++j) {
      x[j] = m_new == kNegInf ? 0.f : exp2f(x[j] - m_new);
      sum += x[j];
      sp[r][part * kKeys + j] = x[j];
    }
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    l = l * corr + sum;
    m = m_new;
#pragma unroll
    for (int e = 0; e < kHalf; ++e) o[e] *= corr;
    __syncwarp();  // both lanes of the row wrote their half of sp[r]
    for (int j = 0; j < kTileKeys; ++j) {
      const float w = sp[r][j];
#pragma unroll
      for (int c = 0; c < kHalf / kVec; ++c) {
        float vf[kVec];
        unpack8<T>(*reinterpret_cast<const uint4*>(&sv[j * kStride + part * kHalf + c * kVec]), vf);
#pragma unroll
        for (int e = 0; e < kVec; ++e) o[c * kVec + e] = fmaf(w, vf[e], o[c * kVec + e]);
      }
    }
  }

  if (r >= rows) return;
  const int64_t row = int64_t{q_begin + qt0 + r / G} * p.num_q_heads + g * G + r % G;
  const float inv = l > 0.f ? 1.f / l : 0.f;
  T* out = static_cast<T*>(p.out) + row * D + part * kHalf;
#pragma unroll
  for (int c = 0; c < kHalf / kVec; ++c) {
    float f[kVec];
#pragma unroll
    for (int e = 0; e < kVec; ++e) f[e] = o[c * kVec + e] * inv;
    *reinterpret_cast<uint4*>(out + c * kVec) = pack8<T>(f);
  }
  if (p.lse && part == 0) p.lse[row] = l > 0.f ? (m + log2f(l)) * kLn2 : kNegInf;
}

}  // namespace

cudaError_t launch_prefill_attention(const DevicePagedKv& kv, const int32_t* qo_indptr,
                                     int32_t max_q_len, const void* q, void* out, float* lse,
                                     float sm_scale, cudaStream_t stream) {
  return cuda_status([&]() -> cudaError_t {
    const AttentionShape& sh = kv.shape;
    const int32_t batch = kv.table.batch;
    if (!check_shape(sh).empty() || !supported_head_dim(sh.head_dim) || sh.group_size() > kRows ||
        batch < 0 || batch > 65535 || max_q_len < 0 || sh.num_kv_heads > 65535)
      return cudaErrorInvalidValue;
    if (batch == 0 || max_q_len == 0) return cudaSuccess;
    if (!aligned16(q) || !aligned16(out) || !aligned16(kv.k) || !aligned16(kv.v))
      return cudaErrorInvalidValue;

    PrefillParams prm{};
    set_paged_params(prm, kv, q, out, lse, sm_scale);
    prm.qo_indptr = qo_indptr;
    prm.queries_per_cta = kRows / prm.group;
    const dim3 grid(
        static_cast<unsigned>((max_q_len + prm.queries_per_cta - 1) / prm.queries_per_cta),
        static_cast<unsigned>(sh.num_kv_heads), static_cast<unsigned>(batch));

    return dispatch_half_dtype(kv.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      return dispatch_head_dim(sh.head_dim, [&](auto dim) -> cudaError_t {
        constexpr int D = decltype(dim)::value;
        prefill_kernel<T, D><<<grid, kThreads, 0, stream>>>(prm);
        ISIM_CUDA_CHECK(cudaGetLastError());
        return cudaSuccess;
      });
    });
  });
}

}  // namespace isim::kernels::cuda
