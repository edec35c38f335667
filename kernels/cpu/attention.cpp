#include "kernels/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kernels/cpu/parallel.h"

namespace isim::kernels::cpu {
namespace {

void check_kv(const PagedKv& kv, const char* fn) {
  std::string e = check_page_table(kv.shape, kv.table, kv.num_blocks);
  if (e.empty() && kv.table.batch > 0 && (!kv.k || !kv.v)) e = "k and v pools must be set";
  if (!e.empty()) throw std::invalid_argument(fmt::format("{}: {}", fn, e));
}

struct Scratch {
  std::vector<double> p;    // [group][n] scores, then softmax weights
  std::vector<double> acc;  // [group][head_dim]
  std::vector<double> max;  // [group]
  std::vector<double> sum;  // [group]
};

// Attends the `group` q heads that share kv head g, for one query token of sequence s, over
// kv positions [0, n). q_tok / out_tok / lse_tok point at the token's row (all q heads).
void attend(const PagedKv& kv, int32_t s, int64_t n, int32_t g, const float* q_tok, float* out_tok,
            float* lse_tok, double scale, Scratch& w) {
  const AttentionShape& sh = kv.shape;
  const int32_t group = sh.group_size();
  const int32_t dim = sh.head_dim;
  const int32_t bt = sh.block_tokens;
  const float* q0 = q_tok + int64_t{g} * group * dim;
  w.p.assign(static_cast<size_t>(group * n), 0.0);
  w.acc.assign(static_cast<size_t>(group * dim), 0.0);

  for (int64_t i = 0; i < n; ++i) {
    const float* k = kv.k + sh.offset(kv.table.block_of(s, i, bt), g, static_cast<int32_t>(i % bt));
    for (int32_t j = 0; j < group; ++j) {
      const float* q = q0 + int64_t{j} * dim;
      double dot = 0.0;
      for (int32_t d = 0; d < dim; ++d) dot += double{q[d]} * double{k[d]};
      w.p[static_cast<size_t>(j * n + i)] = dot * scale;
    }
  }
  w.max.resize(static_cast<size_t>(group));
  w.sum.resize(static_cast<size_t>(group));
  for (int32_t j = 0; j < group; ++j) {
    double* p = w.p.data() + j * n;
    const double m = *std::max_element(p, p + n);
    double l = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      p[i] = std::exp(p[i] - m);
      l += p[i];
    }
    w.max[static_cast<size_t>(j)] = m;
    w.sum[static_cast<size_t>(j)] = l;
  }
  for (int64_t i = 0; i < n; ++i) {
    const float* v = kv.v + sh.offset(kv.table.block_of(s, i, bt), g, static_cast<int32_t>(i % bt));
    for (int32_t j = 0; j < group; ++j) {
      const double p = w.p[static_cast<size_t>(j * n + i)];
      double* acc = w.acc.data() + j * dim;
      for (int32_t d = 0; d < dim; ++d) acc[d] += p * double{v[d]};
    }
  }
  for (int32_t j = 0; j < group; ++j) {
    const double l = w.sum[static_cast<size_t>(j)];
    float* out = out_tok + (int64_t{g} * group + j) * dim;
    for (int32_t d = 0; d < dim; ++d)
      out[d] = static_cast<float>(w.acc[static_cast<size_t>(j * dim + d)] / l);
    if (lse_tok)
      lse_tok[g * group + j] = static_cast<float>(w.max[static_cast<size_t>(j)] + std::log(l));
  }
}

}  // namespace

void decode_attention(const PagedKv& kv, const float* q, float* out, float* lse, float sm_scale,
                      int threads) {
  check_kv(kv, "decode_attention");
  const AttentionShape& sh = kv.shape;
  const int64_t row = int64_t{sh.num_q_heads} * sh.head_dim;
  const int64_t items = int64_t{kv.table.batch} * sh.num_kv_heads;
  parallel_for(items, threads, [&](int64_t begin, int64_t end) {
    Scratch w;
    for (int64_t it = begin; it < end; ++it) {
      const auto s = static_cast<int32_t>(it / sh.num_kv_heads);
      const auto g = static_cast<int32_t>(it % sh.num_kv_heads);
      attend(kv, s, kv.table.kv_len(s, sh.block_tokens), g, q + s * row, out + s * row,
             lse ? lse + int64_t{s} * sh.num_q_heads : nullptr, sm_scale, w);
    }
  });
}

void prefill_attention(const PagedKv& kv, const int32_t* qo_indptr, const float* q, float* out,
                       float* lse, float sm_scale, int threads) {
  check_kv(kv, "prefill_attention");
  const AttentionShape& sh = kv.shape;
  const PageTable& t = kv.table;
  if (t.batch == 0) return;
  if (!qo_indptr) throw std::invalid_argument("prefill_attention: qo_indptr must be set");
  if (qo_indptr[0] != 0)
    throw std::invalid_argument(
        fmt::format("prefill_attention: qo_indptr[0] = {}: must be 0", qo_indptr[0]));
  for (int32_t s = 0; s < t.batch; ++s) {
    const int64_t q_len = qo_indptr[s + 1] - qo_indptr[s];
    const int64_t kv_len = t.kv_len(s, sh.block_tokens);
    if (q_len < 0 || q_len > kv_len)
      throw std::invalid_argument(fmt::format(
          "prefill_attention: qo_indptr[{}..{}] = {}..{}: q_len {} must be in 0..kv_len = {}", s,
          s + 1, qo_indptr[s], qo_indptr[s + 1], q_len, kv_len));
  }
  const int64_t row = int64_t{sh.num_q_heads} * sh.head_dim;
  const int64_t tokens = qo_indptr[t.batch];
  parallel_for(tokens * sh.num_kv_heads, threads, [&](int64_t begin, int64_t end) {
    Scratch w;
    for (int64_t it = begin; it < end; ++it) {
      const int64_t tok = it / sh.num_kv_heads;
      const auto g = static_cast<int32_t>(it % sh.num_kv_heads);
      const auto s = static_cast<int32_t>(
          std::upper_bound(qo_indptr, qo_indptr + t.batch + 1, tok) - qo_indptr - 1);
      const int64_t q_len = qo_indptr[s + 1] - qo_indptr[s];
      const int64_t n = t.kv_len(s, sh.block_tokens) - q_len + (tok - qo_indptr[s]) + 1;
      attend(kv, s, n, g, q + tok * row, out + tok * row,
             lse ? lse + tok * sh.num_q_heads : nullptr, sm_scale, w);
    }
  });
}

}  // namespace isim::kernels::cpu
