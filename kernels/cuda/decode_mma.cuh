// Device side of paged decode attention, part 3: the tensor-core kernel for GQA groups of 8 and
// more (kernels/decode_split.h), with mma.sync m16n8k16 (bf16 or f16 in, float accumulators).
// Included by decode_attention.cu only.
//
// - A CTA serves kRows = 16 x kWarpsM q heads (16 for groups 8-16, 64 above), padded with zero
//   query rows that are never stored. Warp (wm, wn) owns rows 16 wm .. 16 wm + 15 and a slice of
//   kTile / kWarpsN tokens of each 64-token stage: with 16-row tiles the four warps split the
//   tokens, with 64-row tiles each warp sees every token.
// - Per 16 tokens: S = Q K^T (D / 16 k-steps, two n-tiles), masked past the chunk's end, the
//   online softmax on the accumulators (rows g and g + 8 of a quad, reduced by two shuffles),
//   then P, rounded to the 16-bit type, feeds O += P V straight from registers: the C layout of
//   two adjacent n-tiles is the A layout of one k16 slice. The softmax sum adds the rounded P,
//   so numerator and denominator see the same weights.
// - Fragment layouts (PTX ISA, mma.m16n8k16; g = lane / 4, t = lane % 4): A regs {row g, cols
//   2t..2t+1}, {row g+8, same}, {row g, cols 8+2t..}, {row g+8, cols 8+2t..}; B regs {k 2t..2t+1,
//   col g}, {k 8+2t.., col g}; C c0, c1 at row g, cols 2t, 2t+1 and c2, c3 at row g + 8. Q and K
//   come in through ldmatrix, V through ldmatrix.trans.
#pragma once

#include "kernels/cuda/decode_pipeline.cuh"

namespace isim::kernels::cuda::decode {

constexpr int kMmaTile = 64;

template <int D>
constexpr int mma_smem_bytes() {
  return pipeline_smem_bytes<D, kMmaTile>();
}

// Rounds two weights to T, packs them as one A register and returns their rounded sum.
template <typename T>
__device__ __forceinline__ float pack_weights(float a, float b, uint32_t& reg) {
  reg = float2_to_pair<T>(a, b);
  const float2 r = pair_to_float2<T>(reg);
  return r.x + r.y;
}

// The Q tile (kRows rows, zero past `rows`) into shared memory, then each warp's 16 rows into
// A fragments.
template <typename T, int D, int kRows>
__device__ __forceinline__ void load_q_fragments(const T* q, int rows, T* sq, int wm,
                                                 uint32_t (&qa)[D / 16][4]) {
  constexpr int kParts = D / kVec;
  for (int i = static_cast<int>(threadIdx.x); i < kRows * kParts; i += kThreads) {
    const int j = i / kParts;
    const int part = i % kParts;
    uint4 v = make_uint4(0, 0, 0, 0);
    if (j < rows) v = *reinterpret_cast<const uint4*>(q + j * D + part * kVec);
    *reinterpret_cast<uint4*>(sq + j * kRowStride<D> + part * kVec) = v;
  }
  __syncthreads();
  const int lane = static_cast<int>(threadIdx.x) % 32;
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk)
    ldmatrix_x4(sq + (wm * 16 + lane % 16) * kRowStride<D> + kk * 16 + (lane / 16) * 8, qa[kk]);
  __syncthreads();  // the stages may be overwritten
}

template <typename T, int D, int BT, int kWarpsM>
__global__ void __launch_bounds__(kThreads) decode_mma_kernel(const Params p) {
  constexpr int kRows = 16 * kWarpsM;
  constexpr int kWarpsN = kWarps / kWarpsM;
  constexpr int kWarpTok = kMmaTile / kWarpsN;
  constexpr int kS = kRowStride<D>;
  constexpr float kNegInf = -INFINITY;
  extern __shared__ uint4 smem[];
  T* stages = reinterpret_cast<T*>(smem);
  int32_t* page_ids = reinterpret_cast<int32_t*>(stages + kStages * 2 * kMmaTile * kS);

  const Work w = decode_work(p);
  const int g = static_cast<int>(blockIdx.y) / p.head_tiles;
  const int tile = static_cast<int>(blockIdx.y) % p.head_tiles;
  const int head0 = g * p.group + tile * kRows;
  const int rows = min(kRows, p.group - tile * kRows);
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int wm = warp / kWarpsN;
  const int wn = warp % kWarpsN;
  const int t2 = 2 * (lane % 4);

  uint32_t qa[D / 16][4];
  static_assert(kRows * kS <= kStages * 2 * kMmaTile * kS, "Q fits in the stages");
  load_q_fragments<T, D, kRows>(
      static_cast<const T*>(p.q) + (int64_t{w.s} * p.num_q_heads + head0) * D, rows, stages, wm,
      qa);

  float o[D / 8][4] = {};
  float m[2] = {kNegInf, kNegInf}, l[2] = {0.f, 0.f};  // rows g and g + 8 of the warp's 16
  const float scale = p.scale_log2;

  stream_chunk<T, D, BT, kMmaTile>(
      p, w, g, stages, page_ids, [&](const T* sk, const T* sv, int ntok) {
#pragma unroll
        for (int step = 0; step < kWarpTok / 16; ++step) {
          const int n0 = wn * kWarpTok + step * 16;
          if (n0 >= ntok) break;  // warp-uniform
          float s[2][4] = {};
#pragma unroll
          for (int kk = 0; kk < D / 16; ++kk) {
            uint32_t b[4];
            ldmatrix_x4(
                sk + (n0 + (lane / 16) * 8 + lane % 8) * kS + kk * 16 + ((lane / 8) % 2) * 8, b);
            mma_16816<T>(s[0], qa[kk], b[0], b[1]);
            mma_16816<T>(s[1], qa[kk], b[2], b[3]);
          }
          float mx[2] = {kNegInf, kNegInf};
#pragma unroll
          for (int nt = 0; nt < 2; ++nt) {
#pragma unroll
            for (int e = 0; e < 4; ++e) {
              const int tok = n0 + nt * 8 + t2 + e % 2;
              s[nt][e] = tok < ntok ? s[nt][e] * scale : kNegInf;
              mx[e / 2] = fmaxf(mx[e / 2], s[nt][e]);
            }
          }
          float corr[2];
#pragma unroll
          for (int r = 0; r < 2; ++r) {
            mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
            mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
            const float mn = fmaxf(m[r], mx[r]);
            corr[r] = mn == kNegInf ? 1.f : exp2f(m[r] - mn);
            m[r] = mn;
            l[r] *= corr[r];
          }
#pragma unroll
          for (int dn = 0; dn < D / 8; ++dn) {
#pragma unroll
            for (int e = 0; e < 4; ++e) o[dn][e] *= corr[e / 2];
          }
          uint32_t pa[4];
#pragma unroll
          for (int nt = 0; nt < 2; ++nt) {
#pragma unroll
            for (int r = 0; r < 2; ++r) {
              const float w0 = m[r] == kNegInf ? 0.f : exp2f(s[nt][2 * r] - m[r]);
              const float w1 = m[r] == kNegInf ? 0.f : exp2f(s[nt][2 * r + 1] - m[r]);
              l[r] += pack_weights<T>(w0, w1, pa[2 * nt + r]);
            }
          }
#pragma unroll
          for (int dp = 0; dp < D / 16; ++dp) {
            uint32_t b[4];
            ldmatrix_x4_trans(
                sv + (n0 + ((lane / 8) % 2) * 8 + lane % 8) * kS + (dp * 2 + lane / 16) * 8, b);
            mma_16816<T>(o[2 * dp], pa, b[0], b[1]);
            mma_16816<T>(o[2 * dp + 1], pa, b[2], b[3]);
          }
        }
      });

  // The quad's partial sums, then the warps' states through shared memory.
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
  }
  float* s_o = reinterpret_cast<float*>(smem);  // [kWarpsN][kRows][D]
  float* s_m = s_o + kWarpsN * kRows * D;       // [kWarpsN][kRows]
  float* s_l = s_m + kWarpsN * kRows;
  static_assert(kWarpsN * kRows * (D + 2) * 4 <= kStages * 2 * kMmaTile * kS * 2,
                "the merge fits in the stages");
  const int row0 = wm * 16 + lane / 4;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int row = wn * kRows + row0 + 8 * r;
#pragma unroll
    for (int dn = 0; dn < D / 8; ++dn) {
      s_o[row * D + dn * 8 + t2] = o[dn][2 * r];
      s_o[row * D + dn * 8 + t2 + 1] = o[dn][2 * r + 1];
    }
    if (lane % 4 == 0) {
      s_m[row] = m[r];
      s_l[row] = l[r];
    }
  }
  __syncthreads();
  combine_and_store<T, D, kWarpsN, kRows>(s_o, s_m, s_l, p, w, head0, rows);
}

}  // namespace isim::kernels::cuda::decode
