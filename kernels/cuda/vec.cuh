// Device helpers shared by the .cu files (layer 2): dtype dispatch and 16-byte vectors of
// eight 16-bit elements converted to and from float.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "kernels/dtype.h"

namespace isim::kernels::cuda {

constexpr int kVec = 8;  // 16-bit elements per 16-byte load

template <typename T>
__device__ __forceinline__ float2 pair_to_float2(uint32_t w);
template <>
__device__ __forceinline__ float2 pair_to_float2<__nv_bfloat16>(uint32_t w) {
  __nv_bfloat162 h;
  *reinterpret_cast<uint32_t*>(&h) = w;
  return __bfloat1622float2(h);
}
template <>
__device__ __forceinline__ float2 pair_to_float2<__half>(uint32_t w) {
  __half2 h;
  *reinterpret_cast<uint32_t*>(&h) = w;
  return __half22float2(h);
}

template <typename T>
__device__ __forceinline__ uint32_t float2_to_pair(float a, float b);
template <>
__device__ __forceinline__ uint32_t float2_to_pair<__nv_bfloat16>(float a, float b) {
  __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
  return *reinterpret_cast<uint32_t*>(&h);
}
template <>
__device__ __forceinline__ uint32_t float2_to_pair<__half>(float a, float b) {
  __half2 h = __floats2half2_rn(a, b);
  return *reinterpret_cast<uint32_t*>(&h);
}

template <typename T>
__device__ __forceinline__ void unpack8(const uint4& v, float (&f)[kVec]) {
  const float2 a = pair_to_float2<T>(v.x), b = pair_to_float2<T>(v.y);
  const float2 c = pair_to_float2<T>(v.z), d = pair_to_float2<T>(v.w);
  f[0] = a.x, f[1] = a.y, f[2] = b.x, f[3] = b.y, f[4] = c.x, f[5] = c.y, f[6] = d.x, f[7] = d.y;
}

template <typename T>
__device__ __forceinline__ uint4 pack8(const float (&f)[kVec]) {
  return make_uint4(float2_to_pair<T>(f[0], f[1]), float2_to_pair<T>(f[2], f[3]),
                    float2_to_pair<T>(f[4], f[5]), float2_to_pair<T>(f[6], f[7]));
}

template <typename T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}
template <>
__device__ __forceinline__ __half from_float<__half>(float x) {
  return __float2half_rn(x);
}

// Calls fn(std::type_identity<T>{}) with T the device type of a 16-bit Dtype; returns
// cudaErrorInvalidValue for anything else.
template <typename Fn>
cudaError_t dispatch_half_dtype(Dtype dtype, Fn&& fn) {
  switch (dtype) {
    case Dtype::kBF16:
      return fn(std::type_identity<__nv_bfloat16>{});
    case Dtype::kF16:
      return fn(std::type_identity<__half>{});
    default:
      return cudaErrorInvalidValue;
  }
}

// Calls fn(std::integral_constant<int, D>{}) for a supported head_dim.
template <typename Fn>
cudaError_t dispatch_head_dim(int32_t head_dim, Fn&& fn) {
  switch (head_dim) {
    case 64:
      return fn(std::integral_constant<int, 64>{});
    case 128:
      return fn(std::integral_constant<int, 128>{});
    default:
      return cudaErrorInvalidValue;
  }
}

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

inline bool aligned16(const void* p) {
  return (reinterpret_cast<uintptr_t>(p) & 15u) == 0;
}

// Fills the fields the decode and prefill kernels' parameter blocks share: the operands, the
// page table and the head layout of `kv`, and the softmax scale in the log2 domain.
template <typename Params, typename Kv>
void set_paged_params(Params& prm, const Kv& kv, const void* q, void* out, float* lse,
                      float sm_scale) {
  prm.q = q;
  prm.k = kv.k;
  prm.v = kv.v;
  prm.out = out;
  prm.lse = lse;
  prm.indptr = kv.table.indptr;
  prm.indices = kv.table.indices;
  prm.last_page_len = kv.table.last_page_len;
  prm.num_q_heads = kv.shape.num_q_heads;
  prm.num_kv_heads = kv.shape.num_kv_heads;
  prm.block_tokens = kv.shape.block_tokens;
  prm.group = kv.shape.group_size();
  prm.scale_log2 = sm_scale * kLog2e;
}

}  // namespace isim::kernels::cuda
