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
// - Decode takes a DecodeChunkPlan (kernels/decode_split.h): every sequence's pages are cut into
//   chunks of plan.chunk_pages (flash-decoding with one chunk size for the whole batch), and the
//   chunks of a sequence are merged by log-sum-exp. decode_plan picks the size from the host copy
//   of the page table's indptr; a plan must describe the page table it is launched with (the
//   device rebuilds the chunk map from its indptr and trusts plan.work_items). A plan with
//   split() needs decode_workspace_bytes(shape, plan) bytes of workspace (256-byte aligned);
//   otherwise none.
// - Launches are asynchronous on `stream`; a returned error is a launch or argument error.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "kernels/decode_split.h"
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

// The chunk size that spreads the batch's pages (host_indptr[batch + 1], on the host) over
// `sm_count` SMs, each holding as many decode CTAs of this shape's instance as
// cudaOccupancyMaxActiveBlocksPerMultiprocessor says (the shared-memory bound of an sm_90 SM when
// it cannot say), with at least 256 tokens per chunk; sequences no longer than that are not split
// (decode_chunk_plan_auto in kernels/decode_split.h). Tests may build any plan with
// kernels::decode_chunk_plan.
DecodeChunkPlan decode_plan(const AttentionShape& shape, const int32_t* host_indptr, int32_t batch,
                            int sm_count);
size_t decode_workspace_bytes(const AttentionShape& shape, const DecodeChunkPlan& plan);

// q, out: [batch][num_q_heads][head_dim]; lse: [batch][num_q_heads] or null. plan.batch must be
// kv.table.batch.
cudaError_t launch_decode_attention(const DevicePagedKv& kv, const void* q, void* out, float* lse,
                                    float sm_scale, const DecodeChunkPlan& plan, void* workspace,
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
