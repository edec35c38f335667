// Device side of paged decode attention, part 2: the CUDA-core kernel for head tiles of GT = 1,
// 2, 4 or 8 q heads (GQA groups below 8; kernels/decode_split.h). Included by
// decode_attention.cu only.
//
// - The K/V tiles arrive through decode_pipeline.cuh's cp.async stages: kTile = 4096 / D tokens
//   (8 KiB of K per stage), three stages.
// - head_dim / 8 lanes share one token row (16-byte shared-memory reads of 8 elements), so 128
//   threads cover 128 / (D / 8) tokens at once and each thread 4 tokens of a tile; the running
//   max is rescaled once per kU of them.
// - Rows of the tile past the group (group 3 in a tile of 4, 5 or 7 in a tile of 8) compute on
//   zero queries and are never stored.
// - Per-thread running max / sum / accumulator are merged across a warp's token groups
//   (shuffles), then across warps in shared memory (combine_and_store).
#pragma once

#include "kernels/cuda/decode_pipeline.cuh"

namespace isim::kernels::cuda::decode {

template <int D>
constexpr int kSimtTile = 4096 / D;

template <int D>
constexpr int simt_smem_bytes() {
  return pipeline_smem_bytes<D, kSimtTile<D>>();
}

template <typename T, int D, int BT, int GT>
__global__ void __launch_bounds__(kThreads) decode_simt_kernel(const Params p) {
  constexpr int kLanes = D / kVec;
  constexpr int kTokPar = kThreads / kLanes;
  constexpr int kTile = kSimtTile<D>;
  constexpr int kU = GT >= 8 ? 2 : 4;  // keeps registers low at GT = 8
  constexpr int kSteps = kTile / (kTokPar * kU);
  static_assert(kSteps * kTokPar * kU == kTile, "a tile is whole steps");
  constexpr float kNegInf = -INFINITY;
  extern __shared__ uint4 smem[];
  T* stages = reinterpret_cast<T*>(smem);
  int32_t* page_ids = reinterpret_cast<int32_t*>(stages + kStages * 2 * kTile * kRowStride<D>);

  const Work w = decode_work(p);
  const int g = static_cast<int>(blockIdx.y) / p.head_tiles;
  const int tile = static_cast<int>(blockIdx.y) % p.head_tiles;
  const int head0 = g * p.group + tile * GT;
  const int rows = min(GT, p.group - tile * GT);
  const int lane = static_cast<int>(threadIdx.x) % kLanes;
  const int tg = static_cast<int>(threadIdx.x) / kLanes;

  float qf[GT][kVec];
  const T* q = static_cast<const T*>(p.q) + (int64_t{w.s} * p.num_q_heads + head0) * D;
#pragma unroll
  for (int j = 0; j < GT; ++j) {
    if (j < rows) {
      unpack8<T>(*reinterpret_cast<const uint4*>(q + j * D + lane * kVec), qf[j]);
    } else {
#pragma unroll
      for (int e = 0; e < kVec; ++e) qf[j][e] = 0.f;
    }
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

  stream_chunk<T, D, BT, kTile>(p, w, g, stages, page_ids, [&](const T* sk, const T* sv, int ntok) {
  // The trip count is uniform across the CTA so that every lane reaches the shuffles.
#pragma unroll
    for (int step = 0; step < kSteps; ++step) {
      float x[kU][GT];
      bool valid[kU];
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        const int r = (step * kU + u) * kTokPar + tg;
        valid[u] = r < ntok;
        float kf[kVec];
        unpack8<T>(*reinterpret_cast<const uint4*>(sk + r * kRowStride<D> + lane * kVec), kf);
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
        for (int u = 0; u < kU; ++u) {
#pragma unroll
          for (int j = 0; j < GT; ++j) x[u][j] += __shfl_xor_sync(0xffffffffu, x[u][j], off);
        }
      }
      // One rescale per kU tokens: new max first, then the tokens' weights.
#pragma unroll
      for (int j = 0; j < GT; ++j) {
        float mx = m[j];
#pragma unroll
        for (int u = 0; u < kU; ++u) {
          if (valid[u]) mx = fmaxf(mx, x[u][j]);
        }
        const float corr = mx == kNegInf ? 1.f : exp2f(m[j] - mx);
        l[j] *= corr;
#pragma unroll
        for (int e = 0; e < kVec; ++e) acc[j][e] *= corr;
        m[j] = mx;
      }
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        if (!valid[u]) continue;
        float vf[kVec];
        const int r = (step * kU + u) * kTokPar + tg;
        unpack8<T>(*reinterpret_cast<const uint4*>(sv + r * kRowStride<D> + lane * kVec), vf);
#pragma unroll
        for (int j = 0; j < GT; ++j) {
          const float wt = exp2f(x[u][j] - m[j]);
          l[j] += wt;
#pragma unroll
          for (int e = 0; e < kVec; ++e) acc[j][e] = fmaf(wt, vf[e], acc[j][e]);
        }
      }
    }
  });

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

  // Merge the warps through shared memory (the stages are free now), then store.
  float* s_o = reinterpret_cast<float*>(smem);  // [kWarps][GT][D]
  float* s_m = s_o + kWarps * GT * D;           // [kWarps][GT]
  float* s_l = s_m + kWarps * GT;
  static_assert((kWarps * GT * (D + 2)) * 4 <= kStages * 2 * kTile * kRowStride<D> * 2,
                "the merge fits in the stages");
  const int warp = static_cast<int>(threadIdx.x) / 32;
  if (static_cast<int>(threadIdx.x) % 32 < kLanes) {
#pragma unroll
    for (int j = 0; j < GT; ++j) {
#pragma unroll
      for (int e = 0; e < kVec; ++e) s_o[(warp * GT + j) * D + lane * kVec + e] = acc[j][e];
      if (lane == 0) {
        s_m[warp * GT + j] = m[j];
        s_l[warp * GT + j] = l[j];
      }
    }
  }
  __syncthreads();
  combine_and_store<T, D, kWarps, GT>(s_o, s_m, s_l, p, w, head0, rows);
}

}  // namespace isim::kernels::cuda::decode
