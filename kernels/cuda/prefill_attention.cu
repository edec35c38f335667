// Paged multi-token attention on tensor cores: ragged causal query chunks over paged KV,
// FlashAttention-2 style (kernels/cuda/attention.h has the contract, kv_layout.h the causal rule).
//
// Rows. A chunk of q_len queries against kv head g is q_len * G rows (G = GQA group size), row
// R being (query R / G, q head g * G + R % G). A CTA of 4 warps owns 64 consecutive rows of one
// (sequence, kv head), warp w rows 16w .. 16w + 15, so every K/V tile in shared memory serves
// the whole group and a group size that does not divide 64 wastes no row.
//
// Pipeline. The CTA walks the sequence's keys in tiles of 64, gathering each tile's K and V rows
// through the page table with cp.async into one of two shared-memory stages while the warps work
// on the other. Tiles wholly above the causal diagonal of the CTA's last row are never loaded.
// Per tile each warp computes S = Q K^T with mma.sync m16n8k16 (float accumulators, Q kept in
// registers), masks keys past each row's limit (only in tiles that cross the diagonal), updates
// its rows' running max and sum in the exp2 domain, and accumulates O += P V, P going from the
// score accumulators to 16-bit A fragments without leaving registers. At the end the rows are
// normalised, rounded once to the dtype, and written through shared memory as 16-byte rows;
// lse = (m + log2 l) ln 2.
#include <cmath>

#include "kernels/cuda/attention.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/mma.cuh"
#include "kernels/cuda/vec.cuh"

namespace isim::kernels::cuda {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;
constexpr int kTileRows = 16 * kWarps;  // (query, q head) rows per CTA
constexpr int kTileKeys = 64;           // keys per K/V tile
constexpr int kMaxGroup = 64;
static_assert(kTileRows == kTileKeys, "the Q tile is staged in a K tile's shared memory");

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
  float scale_log2;
};

// Shared memory: two stages of (K tile, V tile). Q is staged in stage 1's K tile before the
// first prefetch into it, the output in stage 0's K tile after the last tile. Rows are padded
// by 16 bytes, so that the eight row addresses of an ldmatrix fall in distinct banks.
template <int D>
struct Tiles {
  static constexpr int kStride = D + kVec;            // elements per padded row
  static constexpr int kElems = kTileKeys * kStride;  // one Q, K, V or O tile
  static constexpr size_t kBytes = 4 * kElems * sizeof(uint16_t);
};

// What one CTA works on. Positions are int64 like kv_len.
struct CtaWork {
  int64_t q_begin;    // the chunk's first token in q and out
  int64_t rows;       // q_len * G
  int64_t row0;       // the CTA's first row
  int64_t delta;      // kv_len - q_len: query i sees keys [0, delta + i]
  int64_t kv_end;     // keys that the CTA's last row sees
  int64_t full_keys;  // keys that every row of the CTA sees: no mask below this
  int32_t page0;      // the sequence's first entry in indices
  int32_t kv_head;
};

__device__ CtaWork cta_work(const PrefillParams& p) {
  CtaWork w;
  const int s = blockIdx.z;
  w.kv_head = blockIdx.y;
  w.q_begin = p.qo_indptr[s];
  const int64_t q_len = p.qo_indptr[s + 1] - w.q_begin;
  w.rows = q_len * p.group;
  // The chunk's last rows see the most keys; their CTAs are launched first (x runs fastest).
  w.row0 = int64_t{gridDim.x - 1 - blockIdx.x} * kTileRows;
  w.page0 = p.indptr[s];
  const int64_t kv_len =
      int64_t{p.indptr[s + 1] - w.page0 - 1} * p.block_tokens + p.last_page_len[s];
  w.delta = kv_len - q_len;
  const int64_t last = (w.row0 + kTileRows < w.rows ? w.row0 + kTileRows : w.rows) - 1;
  w.kv_end = w.delta + last / p.group + 1;
  w.full_keys = w.delta + w.row0 / p.group + 1;
  return w;
}

// Element row of q / out holding row R of the chunk.
__device__ __forceinline__ int64_t q_row(const PrefillParams& p, const CtaWork& w, int64_t R) {
  return (w.q_begin + R / p.group) * p.num_q_heads + int64_t{w.kv_head} * p.group + R % p.group;
}

// Issues the copies of the CTA's 64 Q rows; rows past the chunk are zero-filled.
template <typename T, int D>
__device__ void load_q_tile(const PrefillParams& p, const CtaWork& w, T* sq) {
  constexpr int kChunks = D / kVec;
  const T* q = static_cast<const T*>(p.q);
  for (int i = threadIdx.x; i < kTileRows * kChunks; i += kThreads) {
    const int r = i / kChunks, c = i % kChunks;
    const int64_t R = w.row0 + r;
    const bool live = R < w.rows;
    const T* src = live ? q + q_row(p, w, R) * D + c * kVec : q;
    cp_async16(sq + r * Tiles<D>::kStride + c * kVec, src, live);
  }
}

// Issues the gather of keys [kb, kb + 64) of the CTA's kv head through the page table into a
// stage (K at `stage`, V after it); keys at or past kv_end are zero-filled, so a zero weight
// never multiplies garbage.
template <typename T, int D>
__device__ __forceinline__ void load_kv_tile(const PrefillParams& p, const CtaWork& w, int64_t kb,
                                             T* stage) {
  constexpr int kChunks = D / kVec;
  constexpr int kRowStep = kThreads / kChunks;
  const int bt = p.block_tokens;
  const int c = threadIdx.x % kChunks;
  const int64_t first_page = w.page0 + kb / bt;
  const int first_slot = static_cast<int>(kb % bt);
  const T* k = static_cast<const T*>(p.k);
  const T* v = static_cast<const T*>(p.v);
#pragma unroll
  for (int i = 0; i < kTileKeys / kRowStep; ++i) {
    const int r = threadIdx.x / kChunks + i * kRowStep;
    const bool live = kb + r < w.kv_end;
    int64_t off = 0;
    if (live) {
      const int slot = first_slot + r;
      const int64_t block = p.indices[first_page + slot / bt];
      off = ((block * p.num_kv_heads + w.kv_head) * bt + slot % bt) * D + c * kVec;
    }
    T* dst = stage + r * Tiles<D>::kStride + c * kVec;
    cp_async16(dst, k + off, live);
    cp_async16(dst + Tiles<D>::kElems, v + off, live);
  }
}

// The warp's 16 Q rows as A fragments, one per 16-wide slice of the head dims. Lanes 0-15
// address rows 0-15 at dims 0-7 of the slice, lanes 16-31 the same rows at dims 8-15.
template <typename T, int D>
__device__ void load_q_frags(const T* sq, uint32_t (&qa)[D / 16][4]) {
  const int lane = threadIdx.x % 32;
  const T* row = sq + (16 * (threadIdx.x / 32) + lane % 16) * Tiles<D>::kStride + lane / 16 * 8;
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) ldmatrix_x4(row + kk * 16, qa[kk]);
}

// s = Q K^T for the warp's rows and the tile's keys; s[j] holds keys 8j .. 8j + 7. One ldmatrix
// gives the B fragments of two 8-key n-tiles: its matrices are (keys 0-7, dims 0-7),
// (keys 0-7, dims 8-15), (keys 8-15, dims 0-7), (keys 8-15, dims 8-15) of a 16 x 16 block.
template <typename T, int D>
__device__ __forceinline__ void tile_scores(const uint32_t (&qa)[D / 16][4], const T* sk,
                                            float (&s)[kTileKeys / 8][4]) {
  constexpr int kStride = Tiles<D>::kStride;
  const int lane = threadIdx.x % 32;
  const T* row = sk + (lane % 8 + lane / 16 * 8) * kStride + lane / 8 % 2 * 8;
#pragma unroll
  for (int j = 0; j < kTileKeys / 8; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.f;
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
#pragma unroll
    for (int jj = 0; jj < kTileKeys / 16; ++jj) {
      uint32_t b[4];
      ldmatrix_x4(row + jj * 16 * kStride + kk * 16, b);
      mma_16816<T>(s[2 * jj], qa[kk], b[0], b[1]);
      mma_16816<T>(s[2 * jj + 1], qa[kk], b[2], b[3]);
    }
  }
}

// Softmax state of a thread's two rows, g and g + 8 of its warp's 16: the running max m (log2
// domain), the thread's partial sum l over its columns (the four lanes of a row add theirs at
// the end; they always share m), and the last key the row may see (-1 for a padding row).
struct RowState {
  float m[2];
  float l[2];
  int64_t limit[2];
};

__device__ RowState row_state(const PrefillParams& p, const CtaWork& w) {
  RowState st;
  const int r = 16 * (threadIdx.x / 32) + threadIdx.x % 32 / 4;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int64_t R = w.row0 + r + 8 * h;
    st.limit[h] = R < w.rows ? w.delta + R / p.group : -1;
    st.m[h] = -INFINITY;
    st.l[h] = 0.f;
  }
  return st;
}

// Scales (and, if kMasked, masks) the tile's scores, moves o and l to the new running max, and
// turns s into the weights exp2(x - m). A row with no visible key yet keeps weights 0.
template <int D, bool kMasked>
__device__ __forceinline__ void online_softmax(float (&s)[kTileKeys / 8][4], float (&o)[D / 8][4],
                                               RowState& st, float scale_log2, int64_t kb) {
  const int t = threadIdx.x % 4;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int64_t rel = st.limit[h] - kb;  // last visible key, relative to the tile
    const int last = static_cast<int>(rel < -1 ? -1 : (rel > kTileKeys ? kTileKeys : rel));
    float mx = -INFINITY;
#pragma unroll
    for (int j = 0; j < kTileKeys / 8; ++j) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        float& x = s[j][2 * h + e];
        x = !kMasked || 8 * j + 2 * t + e <= last ? x * scale_log2 : -INFINITY;
        mx = fmaxf(mx, x);
      }
    }
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    const float m_new = fmaxf(st.m[h], mx);
    const float base = m_new == -INFINITY ? 0.f : m_new;
    const float corr = exp2f(st.m[h] - base);
    float sum = 0.f;
#pragma unroll
    for (int j = 0; j < kTileKeys / 8; ++j) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        float& x = s[j][2 * h + e];
        x = exp2f(x - base);
        sum += x;
      }
    }
    st.l[h] = st.l[h] * corr + sum;
    st.m[h] = m_new;
#pragma unroll
    for (int j = 0; j < D / 8; ++j) {
      o[j][2 * h] *= corr;
      o[j][2 * h + 1] *= corr;
    }
  }
}

// o += P V, P being the weights in s rounded to T. The score fragments of n-tiles 2kk and
// 2kk + 1 are the A fragment of key slice kk. One transposed ldmatrix gives the B fragments of
// two 8-dim n-tiles: matrices (keys 0-7, dims 0-7), (keys 8-15, dims 0-7), (keys 0-7, dims
// 8-15), (keys 8-15, dims 8-15) of a 16 x 16 block.
template <typename T, int D>
__device__ __forceinline__ void tile_pv(const float (&s)[kTileKeys / 8][4], const T* sv,
                                        float (&o)[D / 8][4]) {
  constexpr int kStride = Tiles<D>::kStride;
  const int lane = threadIdx.x % 32;
  const T* row = sv + (lane % 8 + lane / 8 % 2 * 8) * kStride + lane / 16 * 8;
#pragma unroll
  for (int kk = 0; kk < kTileKeys / 16; ++kk) {
    const float(&lo)[4] = s[2 * kk];
    const float(&hi)[4] = s[2 * kk + 1];
    const uint32_t pa[4] = {float2_to_pair<T>(lo[0], lo[1]), float2_to_pair<T>(lo[2], lo[3]),
                            float2_to_pair<T>(hi[0], hi[1]), float2_to_pair<T>(hi[2], hi[3])};
#pragma unroll
    for (int jd = 0; jd < D / 16; ++jd) {
      uint32_t b[4];
      ldmatrix_x4_trans(row + kk * 16 * kStride + jd * 16, b);
      mma_16816<T>(o[2 * jd], pa, b[0], b[1]);
      mma_16816<T>(o[2 * jd + 1], pa, b[2], b[3]);
    }
  }
}

// Normalises the warp's rows, rounds them once to T into its 16 rows of `so`, writes lse, then
// copies the rows to out as 16-byte vectors. Each warp touches only its own rows of `so`.
template <typename T, int D>
__device__ void store_rows(const PrefillParams& p, const CtaWork& w, const float (&o)[D / 8][4],
                           const RowState& st, T* so) {
  constexpr int kStride = Tiles<D>::kStride;
  constexpr int kChunks = D / kVec;
  const int lane = threadIdx.x % 32, t = lane % 4;
  const int warp_row = 16 * (threadIdx.x / 32);
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float l = st.l[h];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    const float inv = l > 0.f ? 1.f / l : 0.f;
    const int r = warp_row + lane / 4 + 8 * h;
#pragma unroll
    for (int j = 0; j < D / 8; ++j) {
      *reinterpret_cast<uint32_t*>(so + r * kStride + 8 * j + 2 * t) =
          float2_to_pair<T>(o[j][2 * h] * inv, o[j][2 * h + 1] * inv);
    }
    const int64_t R = w.row0 + r;
    if (p.lse && t == 0 && R < w.rows)
      p.lse[q_row(p, w, R)] = l > 0.f ? (st.m[h] + log2f(l)) * kLn2 : -INFINITY;
  }
  __syncwarp();
  T* out = static_cast<T*>(p.out);
  for (int i = lane; i < 16 * kChunks; i += 32) {
    const int r = warp_row + i / kChunks, c = i % kChunks;
    const int64_t R = w.row0 + r;
    if (R < w.rows) {
      *reinterpret_cast<uint4*>(out + q_row(p, w, R) * D + c * kVec) =
          *reinterpret_cast<const uint4*>(so + r * kStride + c * kVec);
    }
  }
}

template <typename T, int D>
__global__ void __launch_bounds__(kThreads) prefill_kernel(const PrefillParams p) {
  static_assert(sizeof(T) == sizeof(uint16_t));
  extern __shared__ __align__(16) unsigned char smem[];
  T* const base = reinterpret_cast<T*>(smem);
  const auto stage = [base](int64_t i) { return base + (i % 2) * 2 * Tiles<D>::kElems; };

  const CtaWork w = cta_work(p);
  if (w.row0 >= w.rows) return;  // uniform: the whole CTA leaves

  load_q_tile<T, D>(p, w, stage(1));
  cp_async_commit();
  load_kv_tile<T, D>(p, w, 0, stage(0));
  cp_async_commit();
  cp_async_wait<1>();  // the Q group is done
  __syncthreads();
  uint32_t qa[D / 16][4];
  load_q_frags<T, D>(stage(1), qa);
  __syncthreads();  // stage 1 is free for tile 1

  RowState st = row_state(p, w);
  float o[D / 8][4] = {};
  const int64_t tiles = (w.kv_end + kTileKeys - 1) / kTileKeys;
  for (int64_t t = 0; t < tiles; ++t) {
    if (t + 1 < tiles) load_kv_tile<T, D>(p, w, (t + 1) * kTileKeys, stage(t + 1));
    cp_async_commit();  // possibly empty, so that one pending group always means tile t is in
    cp_async_wait<1>();
    __syncthreads();
    const int64_t kb = t * kTileKeys;
    const T* sk = stage(t);
    float s[kTileKeys / 8][4];
    tile_scores<T, D>(qa, sk, s);
    if (kb + kTileKeys > w.full_keys)
      online_softmax<D, true>(s, o, st, p.scale_log2, kb);
    else
      online_softmax<D, false>(s, o, st, p.scale_log2, kb);
    tile_pv<T, D>(s, sk + Tiles<D>::kElems, o);
    __syncthreads();  // the stage is consumed before tile t + 2 lands in it
  }
  // With no tile (a chunk longer than its kv_len), tile 0 may still be landing in stage 0.
  cp_async_wait<0>();
  __syncthreads();
  store_rows<T, D>(p, w, o, st, stage(0));
}

}  // namespace

cudaError_t launch_prefill_attention(const DevicePagedKv& kv, const int32_t* qo_indptr,
                                     int32_t max_q_len, const void* q, void* out, float* lse,
                                     float sm_scale, cudaStream_t stream) {
  return cuda_status([&]() -> cudaError_t {
    const AttentionShape& sh = kv.shape;
    const int32_t batch = kv.table.batch;
    if (!check_shape(sh).empty() || !supported_head_dim(sh.head_dim) ||
        sh.group_size() > kMaxGroup || batch < 0 || batch > 65535 || max_q_len < 0 ||
        sh.num_kv_heads > 65535)
      return cudaErrorInvalidValue;
    if (batch == 0 || max_q_len == 0) return cudaSuccess;
    if (!aligned16(q) || !aligned16(out) || !aligned16(kv.k) || !aligned16(kv.v))
      return cudaErrorInvalidValue;

    PrefillParams prm{};
    set_paged_params(prm, kv, q, out, lse, sm_scale);
    prm.qo_indptr = qo_indptr;
    // At most (2^31 - 1) * 64 rows, so at most 2^31 - 1 row tiles: within gridDim.x.
    const int64_t row_tiles = (int64_t{max_q_len} * prm.group + kTileRows - 1) / kTileRows;
    const dim3 grid(static_cast<unsigned>(row_tiles), static_cast<unsigned>(sh.num_kv_heads),
                    static_cast<unsigned>(batch));

    return dispatch_half_dtype(kv.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      return dispatch_head_dim(sh.head_dim, [&](auto dim) -> cudaError_t {
        constexpr int D = decltype(dim)::value;
        constexpr size_t kSmem = Tiles<D>::kBytes;
        if constexpr (kSmem > 48 * 1024) {  // above the default, the kernel must opt in
          ISIM_CUDA_CHECK(cudaFuncSetAttribute(prefill_kernel<T, D>,
                                               cudaFuncAttributeMaxDynamicSharedMemorySize,
                                               static_cast<int>(kSmem)));
        }
        prefill_kernel<T, D><<<grid, kThreads, kSmem, stream>>>(prm);
        ISIM_CUDA_CHECK(cudaGetLastError());
        return cudaSuccess;
      });
    });
  });
}

}  // namespace isim::kernels::cuda
