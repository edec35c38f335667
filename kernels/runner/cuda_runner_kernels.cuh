// The runner's small element-wise CUDA kernels (embedding, RMS norm, RoPE split, SwiGLU, argmax,
// weight init): device templates over bf16 and fp16, included by cuda_runner.cu only.
// Launch shape: kThreads threads per block; the row kernels take one block per row.
// UNVERIFIED: written and compiled without a GPU (see cuda_runner.cu).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "kernels/cuda/vec.cuh"
#include "kernels/runner/init.h"

namespace isim::kernels::runner::device {

__device__ __forceinline__ float to_f(__nv_bfloat16 v) {
  return __bfloat162float(v);
}
__device__ __forceinline__ float to_f(__half v) {
  return __half2float(v);
}
using cuda::from_float;  // float -> bf16/fp16, round to nearest (kernels/cuda/vec.cuh)

constexpr int kThreads = 256;
constexpr float kEps = 1e-5f;

inline unsigned grid_for(int64_t n) {
  return static_cast<unsigned>((n + kThreads - 1) / kThreads);
}

template <typename T>
__global__ void init_weights(T* w, int64_t n, uint64_t seed, uint32_t tensor, float scale) {
  const int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (i < n) w[i] = from_float<T>(scale * weight_value(seed, tensor, static_cast<uint64_t>(i)));
}

template <typename T>
__global__ void embed(const int32_t* tokens, const T* table, T* x, int32_t hidden) {
  const int64_t r = blockIdx.x;
  for (int32_t c = threadIdx.x; c < hidden; c += blockDim.x)
    x[r * hidden + c] = table[int64_t{tokens[r]} * hidden + c];
}

// One block per row; rows of `in` are picked by `row_ids` when given (lm_head's last tokens).
template <typename T>
__global__ void rms_norm(const T* in, const int32_t* row_ids, T* out, int32_t hidden) {
  __shared__ float partial[kThreads];
  const int64_t src = row_ids ? row_ids[blockIdx.x] : blockIdx.x;
  const T* row = in + src * hidden;
  float ss = 0;
  for (int32_t c = threadIdx.x; c < hidden; c += blockDim.x) ss += to_f(row[c]) * to_f(row[c]);
  partial[threadIdx.x] = ss;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (static_cast<int>(threadIdx.x) < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  const float inv = rsqrtf(partial[0] / hidden + kEps);
  for (int32_t c = threadIdx.x; c < hidden; c += blockDim.x)
    out[int64_t{blockIdx.x} * hidden + c] = from_float<T>(to_f(row[c]) * inv);
}

// Splits a fused QKV row into dense q, k, v and applies rotate-half RoPE to q and k.
template <typename T>
__global__ void rope_split(const T* qkv, const int32_t* positions, T* q, T* k, T* v, int32_t heads,
                           int32_t kv_heads, int32_t head_dim) {
  const int64_t r = blockIdx.x;
  const int32_t half = head_dim / 2;
  const int32_t qd = heads * head_dim, kvd = kv_heads * head_dim;
  const T* row = qkv + r * (qd + 2 * kvd);
  const float pos = static_cast<float>(positions[r]);
  for (int32_t e = threadIdx.x; e < (heads + kv_heads) * half; e += blockDim.x) {
    const int32_t h = e / half, i = e % half;
    const float angle = pos * powf(10000.0f, -2.0f * i / head_dim);
    float s, c;
    sincosf(angle, &s, &c);
    const T* src = row + h * head_dim;  // q heads, then k heads right after them
    T* dst = h < heads ? q + r * qd + h * head_dim : k + r * kvd + (h - heads) * head_dim;
    const float x1 = to_f(src[i]), x2 = to_f(src[i + half]);
    dst[i] = from_float<T>(x1 * c - x2 * s);
    dst[i + half] = from_float<T>(x1 * s + x2 * c);
  }
  for (int32_t e = threadIdx.x; e < kvd; e += blockDim.x) v[r * kvd + e] = row[qd + kvd + e];
}

template <typename T>
__global__ void swiglu(const T* gate_up, T* out, int64_t rows, int32_t ffn) {
  const int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (i >= rows * ffn) return;
  const int64_t r = i / ffn, c = i % ffn;
  const float g = to_f(gate_up[r * 2 * ffn + c]);
  out[i] = from_float<T>(g / (1.0f + __expf(-g)) * to_f(gate_up[r * 2 * ffn + ffn + c]));
}

// One block per row: the lowest index of the largest logit; logits also widened to float.
template <typename T>
__global__ void argmax_rows(const T* logits, int32_t vocab, int32_t* tokens, float* wide) {
  __shared__ float best_v[kThreads];
  __shared__ int32_t best_i[kThreads];
  const T* row = logits + int64_t{blockIdx.x} * vocab;
  float bv = -INFINITY;
  int32_t bi = vocab;
  for (int32_t c = threadIdx.x; c < vocab; c += blockDim.x) {
    const float v = to_f(row[c]);
    if (wide) wide[int64_t{blockIdx.x} * vocab + c] = v;
    if (v > bv || (v == bv && c < bi)) bv = v, bi = c;
  }
  best_v[threadIdx.x] = bv;
  best_i[threadIdx.x] = bi;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (static_cast<int>(threadIdx.x) < s) {
      const float ov = best_v[threadIdx.x + s];
      const int32_t oi = best_i[threadIdx.x + s];
      if (ov > best_v[threadIdx.x] || (ov == best_v[threadIdx.x] && oi < best_i[threadIdx.x]))
        best_v[threadIdx.x] = ov, best_i[threadIdx.x] = oi;
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) tokens[blockIdx.x] = best_i[0];
}

}  // namespace isim::kernels::runner::device
