// CUDA paged attention launchers (layer 1: raw pointers + stream in, cudaError_t out).
// Layout, page table and causal rule: kernels/kv_layout.h. All pointers are device pointers.
//
// Contract:
// - dtype is kBF16 or kF16 for q, K/V pools and out; lse is float. head_dim is 64 or 128
//   (supported_head_dim); group_size <= 64 for prefill. Anything else returns
//   cudaErrorInvalidValue without launching.
// - Rows and dimensions are read with 16-byte loads: q, out and the pools must be 16-byte
//   aligned (cudaMalloc memory is).
// - Softmax math is float32 with exp2 and running max; outputs are rounded once to dtype.
//   lse (may be null) is the natural-log softmax denominator, as in the CPU reference.
// - Decode splits each sequence's pages into num_splits equal page ranges (flash-decoding) and
//   merges them by log-sum-exp; num_splits > 1 needs workspace of
//   decode_workspace_bytes(...) bytes (256-byte aligned). decode_num_splits picks a value.
// - Launches are asynchronous on `stream`; a returned error is a launch or argument error.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "kernels/dtype.h"
#include "kernels/kv_layout.h"

namespace isim::kernels::cuda {

// One layer's paged KV on the device.
struct DevicePagedKv {
  AttentionShape shape;
  PageTable table;  // device pointers
  const void* k = nullptr;
  const void* v = nullptr;
  Dtype dtype = Dtype::kBF16;
};

constexpr bool supported_head_dim(int32_t head_dim) {
  return head_dim == 64 || head_dim == 128;
}

// Splits that let batch x kv_heads work items fill `sm_count` SMs, each holding as many decode
// CTAs as cudaOccupancyMaxActiveBlocksPerMultiprocessor says (4 when it cannot say), keeping
// each split at least 256 tokens of max_kv_len long; 1 when the batch already fills the GPU; at
// most 64 (kernels/decode_split.h).
int decode_num_splits(int32_t batch, const AttentionShape& shape, int64_t max_kv_len, int sm_count);
size_t decode_workspace_bytes(int32_t batch, const AttentionShape& shape, int num_splits);

// q, out: [batch][num_q_heads][head_dim]; lse: [batch][num_q_heads] or null.
cudaError_t launch_decode_attention(const DevicePagedKv& kv, const void* q, void* out, float* lse,
                                    float sm_scale, int num_splits, void* workspace,
                                    size_t workspace_bytes, cudaStream_t stream);

// qo_indptr: device [batch + 1]; max_q_len >= every q_len (sizes the grid). q, out:
// [qo_indptr[batch]][num_q_heads][head_dim]; lse: [tokens][num_q_heads] or null.
cudaError_t launch_prefill_attention(const DevicePagedKv& kv, const int32_t* qo_indptr,
                                     int32_t max_q_len, const void* q, void* out, float* lse,
                                     float sm_scale, cudaStream_t stream);

// Writes new tokens' K/V into their slots (the CPU append_kv contract): k_new, v_new are
// [total_tokens][num_kv_heads][head_dim] of kv.dtype, append_indptr is device [batch + 1].
cudaError_t launch_append_kv(const AttentionShape& shape, const PageTable& table,
                             const int32_t* append_indptr, int64_t total_tokens, const void* k_new,
                             const void* v_new, void* k_pool, void* v_pool, Dtype dtype,
                             cudaStream_t stream);

}  // namespace isim::kernels::cuda
