// Device side of paged decode attention (kernels/cuda/decode_attention.cu), part 1: what a CTA
// owns, the multi-stage cp.async pipeline that streams its K/V tiles into shared memory, and the
// store of its result. Included by decode_attention.cu only (sm_80 and later).
//
// - A CTA owns (work item = blockIdx.x, kv head x head tile = blockIdx.y). A work item is one
//   chunk of chunk_pages pages of one sequence (kernels/decode_split.h); without a split plan
//   it is the whole sequence blockIdx.x.
// - Shared memory starts with kStages stages, each a K tile then a V tile of kTile token rows of
//   D elements, rows padded to D + 8 elements (16-byte aligned, and 8 consecutive rows fall in
//   distinct banks for ldmatrix), then a window of kPageWindow page ids of the chunk. The window
//   is refilled, between two CTA barriers, only when a tile's pages leave it.
// - Each thread issues 16-byte cp.async copies (L2 only). Rows past the chunk's end are
//   zero-filled, so no stale or uninitialised value reaches a product.
// - BT is the compile-time block size (8, 16 or 32, a divisor of kTile: page and slot come from
//   shifts), or 0 for the runtime-size instance, which divides per token.
#pragma once

#include <cstdint>

#include "kernels/cuda/mma.cuh"
#include "kernels/cuda/vec.cuh"

namespace isim::kernels::cuda::decode {

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
constexpr int kStages = 3;
constexpr int kPageWindow = 256;

struct Params {
  const void* q;
  const void* k;
  const void* v;
  void* out;
  float* lse;
  const int32_t* indptr;
  const int32_t* indices;
  const int32_t* last_page_len;
  const int32_t* chunk_indptr;  // [batch + 1] first work item of each sequence; null: unsplit
  const int32_t* item_seq;      // [work items] sequence of each item; null: unsplit
  float* partial_out;           // [work items * num_q_heads][D] (see store_result)
  float* partial_lse;           // [work items * num_q_heads], log2 domain
  int32_t num_q_heads;
  int32_t num_kv_heads;
  int32_t block_tokens;
  int32_t group;
  int32_t head_tiles;  // ceil(group / tile rows)
  int32_t chunk_pages;
  float scale_log2;  // sm_scale * log2(e): scores live in the log2 domain
};

template <int D>
constexpr int kRowStride = D + 8;

// Dynamic shared memory of a kernel streaming kTile-token stages.
template <int D, int kTile>
constexpr int pipeline_smem_bytes() {
  return kStages * 2 * kTile * kRowStride<D> * 2 + kPageWindow * 4;
}

struct Work {
  int32_t s;        // sequence
  int32_t chunk;    // index of this chunk in the sequence
  int32_t nchunks;  // chunks of the sequence
  int32_t item0;    // the sequence's first work item
  int32_t page0;    // indptr[s]
  int32_t pe;       // end of the chunk's pages, relative to the sequence
  int64_t tb, te;   // the chunk's tokens [tb, te), relative to the sequence
};

__device__ __forceinline__ int64_t min64(int64_t a, int64_t b) {
  return a < b ? a : b;
}

__device__ inline Work decode_work(const Params& p) {
  Work w;
  const int32_t item = static_cast<int32_t>(blockIdx.x);
  if (p.item_seq) {
    w.s = p.item_seq[item];
    w.item0 = p.chunk_indptr[w.s];
    w.nchunks = p.chunk_indptr[w.s + 1] - w.item0;
    w.chunk = item - w.item0;
  } else {
    w.s = item, w.item0 = item, w.nchunks = 1, w.chunk = 0;
  }
  w.page0 = p.indptr[w.s];
  const int32_t pages = p.indptr[w.s + 1] - w.page0;
  const int64_t per = p.item_seq ? p.chunk_pages : pages;
  const int64_t pb = w.chunk * per;
  w.pe = static_cast<int32_t>(min64(pages, pb + per));
  const int64_t kv_len = int64_t{pages - 1} * p.block_tokens + p.last_page_len[w.s];
  w.tb = pb * p.block_tokens;
  w.te = min64(int64_t{w.pe} * p.block_tokens, kv_len);
  return w;
}

// The chunk's page ids [first, end) in shared memory; CTA-uniform.
struct PageWindow {
  int32_t* ids;
  int32_t first = 0, end = 0;

  // Makes pages [lo, hi] resident; seq_ids = indices + indptr[s], pe = the chunk's page end.
  __device__ void cover(int32_t lo, int32_t hi, const int32_t* seq_ids, int32_t pe) {
    if (lo >= first && hi < end) return;
    __syncthreads();  // no thread still reads the old ids
    first = lo;
    end = pe < lo + kPageWindow ? pe : lo + kPageWindow;
#pragma unroll
    for (int k = 0; k < kPageWindow / kThreads; ++k) {
      const int i = static_cast<int>(threadIdx.x) + k * kThreads;
      if (i < end - first) ids[i] = seq_ids[first + i];
    }
    __syncthreads();
  }
};

// Issues the copies of one tile: token rows [tok0, tok0 + ntok) of the sequence, K into sk and
// V into sv; rows ntok .. kTile - 1 are zero-filled. kg, vg point at the kv head's slot 0 of
// block 0; block_stride is the elements between blocks.
template <typename T, int D, int BT, int kTile>
__device__ __forceinline__ void load_tile(T* sk, T* sv, const PageWindow& win, const T* kg,
                                          const T* vg, int64_t block_stride, int bt, int64_t tok0,
                                          int ntok) {
  constexpr int kLanes = D / kVec;
  static_assert(kTile * kLanes % kThreads == 0, "whole copies per thread");
  constexpr int kBT = BT > 0 ? BT : 1;  // divides only where BT > 0
  static_assert(kTile % kBT == 0, "a tile starts on a block boundary");
  const int32_t tile_page = static_cast<int32_t>(tok0 / kBT) - win.first;
#pragma unroll
  for (int i = 0; i < kTile * kLanes / kThreads; ++i) {
    const int c = static_cast<int>(threadIdx.x) + i * kThreads;
    const int r = c / kLanes;
    const int part = c % kLanes;
    const bool live = r < ntok;
    int64_t off = 0;
    if (live) {
      int32_t page, slot;
      if constexpr (BT > 0) {
        page = tile_page + r / kBT;
        slot = r % kBT;
      } else {
        const int64_t t = tok0 + r;
        page = static_cast<int32_t>(t / bt);
        slot = static_cast<int32_t>(t - int64_t{page} * bt);
        page -= win.first;
      }
      off = int64_t{win.ids[page]} * block_stride + slot * D + part * kVec;
    }
    const int dst = r * kRowStride<D> + part * kVec;
    cp_async16(sk + dst, kg + off, live);
    cp_async16(sv + dst, vg + off, live);
  }
}

// Streams the chunk's tokens through kStages stages: while tile j is computed, tiles j + 1 ..
// j + kStages - 1 are in flight. compute(sk, sv, ntok) sees tile j's K and V rows in shared
// memory (ntok valid, the rest zero) between two CTA barriers.
template <typename T, int D, int BT, int kTile, typename Compute>
__device__ void stream_chunk(const Params& p, const Work& w, int kv_head, T* stages,
                             int32_t* page_ids, Compute&& compute) {
  constexpr int kStageElems = 2 * kTile * kRowStride<D>;
  const int bt = BT > 0 ? BT : p.block_tokens;
  const int64_t block_stride = int64_t{p.num_kv_heads} * bt * D;
  const T* kg = static_cast<const T*>(p.k) + int64_t{kv_head} * bt * D;
  const T* vg = static_cast<const T*>(p.v) + int64_t{kv_head} * bt * D;
  const int32_t* seq_ids = p.indices + w.page0;
  const int ntiles = static_cast<int>((w.te - w.tb + kTile - 1) / kTile);
  PageWindow win{page_ids};

  const auto issue = [&](int j) {
    const int64_t tok0 = w.tb + int64_t{j} * kTile;
    const int ntok = static_cast<int>(min64(kTile, w.te - tok0));
    win.cover(static_cast<int32_t>(tok0 / bt), static_cast<int32_t>((tok0 + ntok - 1) / bt),
              seq_ids, w.pe);
    T* sk = stages + (j % kStages) * kStageElems;
    load_tile<T, D, BT, kTile>(sk, sk + kTile * kRowStride<D>, win, kg, vg, block_stride, bt, tok0,
                               ntok);
  };
  for (int j = 0; j < kStages - 1; ++j) {
    if (j < ntiles) issue(j);
    cp_async_commit();
  }
  for (int j = 0; j < ntiles; ++j) {
    if (j + kStages - 1 < ntiles) issue(j + kStages - 1);
    cp_async_commit();
    cp_async_wait<kStages - 1>();  // this thread's copies of tile j have landed
    __syncthreads();               // and everyone's
    const T* sk = stages + (j % kStages) * kStageElems;
    compute(sk, sk + kTile * kRowStride<D>,
            static_cast<int>(min64(kTile, w.te - w.tb - int64_t{j} * kTile)));
    __syncthreads();  // the stage is free for tile j + kStages
  }
  cp_async_wait<0>();
  __syncthreads();  // shared memory may be reused
}

// One output element of q head `head` (within the sequence): final when the sequence has one
// chunk, else chunk w.chunk's partial at partial row
// (item0 * num_q_heads + head * nchunks + chunk), so each row's chunks are contiguous.
template <typename T, int D>
__device__ __forceinline__ void store_result(const Params& p, const Work& w, int head, int d,
                                             float value, float lse2) {
  const int64_t row = int64_t{w.s} * p.num_q_heads + head;
  if (w.nchunks == 1) {
    static_cast<T*>(p.out)[row * D + d] = from_float<T>(value);
    if (p.lse && d == 0) p.lse[row] = lse2 * kLn2;
  } else {
    const int64_t prow = int64_t{w.item0} * p.num_q_heads + int64_t{head} * w.nchunks + w.chunk;
    p.partial_out[prow * D + d] = value;
    if (d == 0) p.partial_lse[prow] = lse2;
  }
}

// Combines kParts partial softmax states of kRows rows (s_o [kParts][kRows][D] unnormalised,
// s_m and s_l [kParts][kRows], log2 domain) and stores rows 0 .. rows - 1 as q heads head0 + j.
template <typename T, int D, int kParts, int kRows>
__device__ void combine_and_store(const float* s_o, const float* s_m, const float* s_l,
                                  const Params& p, const Work& w, int head0, int rows) {
  for (int i = static_cast<int>(threadIdx.x); i < rows * D; i += kThreads) {
    const int j = i / D;
    const int d = i % D;
    float mx = -INFINITY;
#pragma unroll
    for (int k = 0; k < kParts; ++k) mx = fmaxf(mx, s_m[k * kRows + j]);
    float sum = 0.f, o = 0.f;
    if (mx != -INFINITY) {
#pragma unroll
      for (int k = 0; k < kParts; ++k) {
        const float c = exp2f(s_m[k * kRows + j] - mx);
        sum += s_l[k * kRows + j] * c;
        o += s_o[(k * kRows + j) * D + d] * c;
      }
    }
    store_result<T, D>(p, w, head0 + j, d, sum > 0.f ? o / sum : 0.f,
                       sum > 0.f ? mx + log2f(sum) : -INFINITY);
  }
}

}  // namespace isim::kernels::cuda::decode
