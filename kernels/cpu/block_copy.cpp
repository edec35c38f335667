#include "kernels/cpu/block_copy.h"

#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

namespace isim::kernels::cpu {

void copy_blocks(const BlockCopy& c) {
  if (c.count < 0 || c.planes < 1 || c.block_bytes < 1)
    throw std::invalid_argument(fmt::format(
        "copy_blocks: count = {}, planes = {}, block_bytes = {}: need count >= 0, planes >= 1, "
        "block_bytes >= 1",
        c.count, c.planes, c.block_bytes));
  if (c.count == 0) return;
  if (!c.src || !c.dst) throw std::invalid_argument("copy_blocks: src and dst must be set");
  const auto* src = static_cast<const std::byte*>(c.src);
  auto* dst = static_cast<std::byte*>(c.dst);
  for (int64_t p = 0; p < c.planes; ++p) {
    for (int64_t i = 0; i < c.count; ++i) {
      const int64_t s = c.src_ids ? c.src_ids[i] : i;
      const int64_t d = c.dst_ids ? c.dst_ids[i] : i;
      if (s < 0 || d < 0)
        throw std::invalid_argument(
            fmt::format("copy_blocks: block {}: ids {} -> {} must be >= 0", i, s, d));
      std::memcpy(dst + p * c.dst_plane_stride + d * c.block_bytes,
                  src + p * c.src_plane_stride + s * c.block_bytes,
                  static_cast<size_t>(c.block_bytes));
    }
  }
}

void append_kv(const AttentionShape& shape, const PageTable& table, int64_t num_blocks,
               const int32_t* append_indptr, const float* k_new, const float* v_new, float* k_pool,
               float* v_pool) {
  if (std::string e = check_page_table(shape, table, num_blocks); !e.empty())
    throw std::invalid_argument("append_kv: " + e);
  if (table.batch == 0) return;
  if (!append_indptr || append_indptr[0] != 0)
    throw std::invalid_argument("append_kv: append_indptr must be set and start at 0");
  const int32_t bt = shape.block_tokens;
  const int64_t row = int64_t{shape.num_kv_heads} * shape.head_dim;
  for (int32_t s = 0; s < table.batch; ++s) {
    const int64_t n = append_indptr[s + 1] - append_indptr[s];
    const int64_t kv_len = table.kv_len(s, bt);
    if (n < 0 || n > kv_len)
      throw std::invalid_argument(fmt::format(
          "append_kv: append_indptr[{}..{}] = {}..{}: chunk {} must be in 0..kv_len = {}", s, s + 1,
          append_indptr[s], append_indptr[s + 1], n, kv_len));
    for (int64_t i = 0; i < n; ++i) {
      const int64_t pos = kv_len - n + i;
      const int32_t block = table.block_of(s, pos, bt);
      const int64_t tok = append_indptr[s] + i;
      for (int32_t h = 0; h < shape.num_kv_heads; ++h) {
        const int64_t dst = shape.offset(block, h, static_cast<int32_t>(pos % bt));
        const int64_t src = tok * row + int64_t{h} * shape.head_dim;
        std::memcpy(k_pool + dst, k_new + src, sizeof(float) * static_cast<size_t>(shape.head_dim));
        std::memcpy(v_pool + dst, v_new + src, sizeof(float) * static_cast<size_t>(shape.head_dim));
      }
    }
  }
}

}  // namespace isim::kernels::cpu
