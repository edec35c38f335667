#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "kernels/runner/plan.h"
#include "kernels/runner/runner.h"

namespace isim::kernels::runner {

void check_dims(const ModelDims& d) {
  const std::pair<const char*, int32_t> fields[] = {
      {"layers", d.layers},     {"hidden", d.hidden}, {"heads", d.heads}, {"kv_heads", d.kv_heads},
      {"head_dim", d.head_dim}, {"ffn", d.ffn},       {"vocab", d.vocab}};
  for (const auto& [name, v] : fields)
    if (v <= 0) throw std::invalid_argument(fmt::format("model: {} = {}: must be > 0", name, v));
  if (d.heads % d.kv_heads != 0)
    throw std::invalid_argument(
        fmt::format("model: heads = {}: must be a multiple of kv_heads = {}", d.heads, d.kv_heads));
  if (d.head_dim % 2 != 0)
    throw std::invalid_argument(
        fmt::format("model: head_dim = {}: must be even (RoPE rotates halves)", d.head_dim));
}

std::vector<int32_t> block_range(int32_t first, int64_t positions, int32_t block_tokens) {
  if (block_tokens <= 0 || positions < 0)
    throw std::invalid_argument(
        fmt::format("block_range: positions = {}, block_tokens = {}", positions, block_tokens));
  const int64_t n = (positions + block_tokens - 1) / block_tokens;
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) ids[static_cast<size_t>(i)] = first + static_cast<int32_t>(i);
  return ids;
}

namespace {

void add_sequence(TableArrays& t, const Step& s, int32_t block_tokens) {
  const int64_t kv_len = s.kv_before + static_cast<int64_t>(s.tokens.size());
  t.indices.insert(t.indices.end(), s.blocks.begin(), s.blocks.end());
  t.indptr.push_back(static_cast<int32_t>(t.indices.size()));
  t.last_page_len.push_back(
      static_cast<int32_t>(kv_len - (kv_len - 1) / block_tokens * block_tokens));
  const auto q_len = static_cast<int32_t>(s.tokens.size());
  t.qo_indptr.push_back(t.qo_indptr.back() + q_len);
  t.max_q_len = std::max(t.max_q_len, q_len);
}

}  // namespace

BatchPlan plan_batch(const std::vector<Step>& batch, const RunnerConfig& config) {
  const int32_t bt = config.block_tokens;
  BatchPlan plan;
  for (size_t i = 0; i < batch.size(); ++i) {
    const Step& s = batch[i];
    if (s.tokens.empty())
      throw std::invalid_argument(fmt::format("batch[{}].tokens: empty (need >= 1 token)", i));
    if (s.kv_before < 0)
      throw std::invalid_argument(
          fmt::format("batch[{}].kv_before = {}: must be >= 0", i, s.kv_before));
    const int64_t kv_len = s.kv_before + static_cast<int64_t>(s.tokens.size());
    const int64_t need = (kv_len + bt - 1) / bt;
    if (static_cast<int64_t>(s.blocks.size()) != need)
      throw std::invalid_argument(
          fmt::format("batch[{}].blocks: {} ids for {} positions of {}-token blocks (need {})", i,
                      s.blocks.size(), kv_len, bt, need));
    for (size_t b = 0; b < s.blocks.size(); ++b)
      if (s.blocks[b] < 0 || s.blocks[b] >= config.num_blocks)
        throw std::invalid_argument(fmt::format("batch[{}].blocks[{}] = {}: must be in 0..{}", i, b,
                                                s.blocks[b], config.num_blocks - 1));
    for (int32_t t : s.tokens)
      if (t < 0 || t >= config.dims.vocab)
        throw std::invalid_argument(fmt::format(
            "batch[{}].tokens: token {} outside the vocab 0..{}", i, t, config.dims.vocab - 1));
  }
  std::vector<int64_t> first_row(batch.size());
  for (int pass = 0; pass < 2; ++pass) {  // decode steps first, then chunks
    for (size_t i = 0; i < batch.size(); ++i) {
      const Step& s = batch[i];
      if ((s.tokens.size() == 1) != (pass == 0)) continue;
      first_row[i] = plan.rows;
      for (size_t t = 0; t < s.tokens.size(); ++t) {
        plan.token_ids.push_back(s.tokens[t]);
        plan.positions.push_back(static_cast<int32_t>(s.kv_before + static_cast<int64_t>(t)));
      }
      plan.rows += static_cast<int64_t>(s.tokens.size());
      add_sequence(pass == 0 ? plan.decode : plan.prefill, s, bt);
    }
    if (pass == 0) plan.decode_rows = plan.rows;
  }
  for (size_t i = 0; i < batch.size(); ++i)
    if (batch[i].logits)
      plan.logit_rows.push_back(first_row[i] + static_cast<int64_t>(batch[i].tokens.size()) - 1);
  return plan;
}

}  // namespace isim::kernels::runner
