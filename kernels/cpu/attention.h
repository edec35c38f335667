// CPU reference for paged attention: decode (one query token per sequence) and multi-token
// ragged causal attention over the paged KV. Layout and causal rule: kernels/kv_layout.h.
//
// Contract:
// - float32 in and out; dot products, softmax sums and the weighted sum of V accumulate in
//   float64, so this is the accuracy yardstick for the CUDA kernels and the backend of
//   live-cpu.
// - Exact softmax (max-subtracted, two passes), no approximations. Deterministic: every output
//   row is computed by one thread in a fixed order, so results are bit-identical for any
//   `threads` (<= 0: all hardware threads).
// - Throws std::invalid_argument, naming the field, for a bad shape or page table, a block id
//   outside [0, num_blocks), or a chunk longer than its sequence's kv_len.
// - lse (optional, may be null) receives ln(sum_j exp(sm_scale * q.k_j)) per (token, q head).
#pragma once

#include <cstdint>

#include "kernels/kv_layout.h"

namespace isim::kernels::cpu {

// One layer's paged KV as the attention functions read it (host pointers).
struct PagedKv {
  AttentionShape shape;
  PageTable table;
  const float* k = nullptr;  // [num_blocks][num_kv_heads][block_tokens][head_dim]
  const float* v = nullptr;
  int64_t num_blocks = 0;
};

// q, out: [batch][num_q_heads][head_dim]; lse: [batch][num_q_heads] or null.
void decode_attention(const PagedKv& kv, const float* q, float* out, float* lse, float sm_scale,
                      int threads = 0);

// qo_indptr[batch + 1] (qo_indptr[0] = 0): sequence s has queries qo_indptr[s] .. [s+1] - 1,
// q_len(s) <= kv_len(s). q, out: [qo_indptr[batch]][num_q_heads][head_dim]; lse likewise
// [tokens][num_q_heads] or null. A sequence with q_len 0 is allowed and produces nothing.
void prefill_attention(const PagedKv& kv, const int32_t* qo_indptr, const float* q, float* out,
                       float* lse, float sm_scale, int threads = 0);

}  // namespace isim::kernels::cpu
