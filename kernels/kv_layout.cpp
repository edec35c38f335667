#include "kernels/kv_layout.h"

#include <fmt/format.h>

namespace isim::kernels {

std::string check_shape(const AttentionShape& shape) {
  if (shape.num_q_heads <= 0)
    return fmt::format("num_q_heads = {}: must be > 0", shape.num_q_heads);
  if (shape.num_kv_heads <= 0)
    return fmt::format("num_kv_heads = {}: must be > 0", shape.num_kv_heads);
  if (shape.num_q_heads % shape.num_kv_heads != 0)
    return fmt::format("num_q_heads = {}: must be a multiple of num_kv_heads = {} (GQA)",
                       shape.num_q_heads, shape.num_kv_heads);
  if (shape.head_dim <= 0) return fmt::format("head_dim = {}: must be > 0", shape.head_dim);
  if (shape.block_tokens <= 0)
    return fmt::format("block_tokens = {}: must be > 0", shape.block_tokens);
  return "";
}

std::string check_page_table(const AttentionShape& shape, const PageTable& t, int64_t num_blocks) {
  if (std::string e = check_shape(shape); !e.empty()) return e;
  if (t.batch < 0) return fmt::format("batch = {}: must be >= 0", t.batch);
  if (t.batch == 0) return "";
  if (!t.indptr || !t.indices || !t.last_page_len)
    return "page table: indptr, indices and last_page_len must all be set";
  if (t.indptr[0] < 0) return fmt::format("indptr[0] = {}: must be >= 0", t.indptr[0]);
  for (int32_t s = 0; s < t.batch; ++s) {
    const int32_t pages = t.indptr[s + 1] - t.indptr[s];
    if (pages < 1)
      return fmt::format("indptr[{}..{}] = {}..{}: a sequence needs at least one block", s, s + 1,
                         t.indptr[s], t.indptr[s + 1]);
    if (t.last_page_len[s] < 1 || t.last_page_len[s] > shape.block_tokens)
      return fmt::format("last_page_len[{}] = {}: must be in 1..{}", s, t.last_page_len[s],
                         shape.block_tokens);
    for (int32_t i = t.indptr[s]; i < t.indptr[s + 1]; ++i)
      if (t.indices[i] < 0 || t.indices[i] >= num_blocks)
        return fmt::format("indices[{}] = {}: block id out of range 0..{}", i, t.indices[i],
                           num_blocks - 1);
  }
  return "";
}

std::vector<CopyRun> copy_runs(const BlockCopy& c) {
  std::vector<CopyRun> runs;
  const auto src = [&](int64_t i) -> int64_t { return c.src_ids ? c.src_ids[i] : i; };
  const auto dst = [&](int64_t i) -> int64_t { return c.dst_ids ? c.dst_ids[i] : i; };
  for (int64_t i = 0; i < c.count; ++i) {
    if (!runs.empty()) {
      CopyRun& r = runs.back();
      if (src(i) == r.src_block + r.blocks && dst(i) == r.dst_block + r.blocks) {
        ++r.blocks;
        continue;
      }
    }
    runs.push_back(CopyRun{.first = i, .src_block = src(i), .dst_block = dst(i), .blocks = 1});
  }
  return runs;
}

}  // namespace isim::kernels
