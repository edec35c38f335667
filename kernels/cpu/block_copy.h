// CPU reference for KV block movement: block copies (gather, scatter, pool to pool) and
// appending new tokens' K/V into their paged slots. Layouts: kernels/kv_layout.h.
//
// Contract:
// - copy_blocks moves bytes exactly as BlockCopy describes (memcpy per block and plane), so
//   a gather followed by a scatter round-trips byte-identical. It works on any element type.
// - append_kv writes token i of sequence s's appended chunk into kv position
//   kv_len(s) - n(s) + i, where n(s) = append_indptr[s+1] - append_indptr[s] and the page
//   table already counts the new tokens. Slots outside the appended positions are untouched.
// - Both throw std::invalid_argument, naming the field, on bad arguments.
#pragma once

#include <cstdint>

#include "kernels/kv_layout.h"

namespace isim::kernels::cpu {

void copy_blocks(const BlockCopy& copy);

// k_new, v_new: [append_indptr[batch]][num_kv_heads][head_dim] float; pools as in PagedKv.
void append_kv(const AttentionShape& shape, const PageTable& table, int64_t num_blocks,
               const int32_t* append_indptr, const float* k_new, const float* v_new, float* k_pool,
               float* v_pool);

}  // namespace isim::kernels::cpu
