// Random paged KV for kernel tests: sequences of given lengths stored in a pool under
// shuffled, non-contiguous block ids, with spare blocks of unrelated random data, plus the
// same K/V as contiguous per-sequence copies for the dense yardstick.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/cpu/attention.h"
#include "kernels/kv_layout.h"

namespace isim::test {

inline std::vector<float> random_floats(size_t n, std::mt19937_64& rng, float lo = -1.f,
                                        float hi = 1.f) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

struct PagedFixture {
  kernels::AttentionShape shape;
  std::vector<int64_t> kv_lens;
  int64_t num_blocks = 0;
  std::vector<float> k_pool, v_pool;
  std::vector<int32_t> indptr, indices, last_page_len;
  std::vector<std::vector<float>> k_dense, v_dense;  // per sequence [kv_len][hkv][dim]

  kernels::PageTable table() const {
    return {indptr.data(), indices.data(), last_page_len.data(),
            static_cast<int32_t>(kv_lens.size())};
  }
  kernels::cpu::PagedKv kv() const {
    return {shape, table(), k_pool.data(), v_pool.data(), num_blocks};
  }
};

inline PagedFixture make_paged(const kernels::AttentionShape& shape,
                               const std::vector<int64_t>& kv_lens, std::mt19937_64& rng,
                               int64_t spare_blocks = 5) {
  PagedFixture f;
  f.shape = shape;
  f.kv_lens = kv_lens;
  const int32_t bt = shape.block_tokens;
  int64_t pages = 0;
  for (int64_t len : kv_lens) pages += (len + bt - 1) / bt;
  f.num_blocks = pages + spare_blocks;
  std::vector<int32_t> ids(static_cast<size_t>(f.num_blocks));
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);
  const auto pool = static_cast<size_t>(f.num_blocks * shape.block_elems());
  f.k_pool = random_floats(pool, rng);
  f.v_pool = random_floats(pool, rng);
  f.indptr.push_back(0);
  size_t next = 0;
  for (int64_t len : kv_lens) {
    const int64_t n = (len + bt - 1) / bt;
    for (int64_t i = 0; i < n; ++i) f.indices.push_back(ids[next++]);
    f.indptr.push_back(static_cast<int32_t>(f.indices.size()));
    f.last_page_len.push_back(static_cast<int32_t>(len - (n - 1) * bt));
  }
  const kernels::PageTable t = f.table();
  const int64_t row = int64_t{shape.num_kv_heads} * shape.head_dim;
  for (int32_t s = 0; s < t.batch; ++s) {
    const int64_t len = kv_lens[static_cast<size_t>(s)];
    std::vector<float> k(static_cast<size_t>(len * row)), v(k.size());
    for (int64_t i = 0; i < len; ++i) {
      for (int32_t h = 0; h < shape.num_kv_heads; ++h) {
        const int64_t src = shape.offset(t.block_of(s, i, bt), h, static_cast<int32_t>(i % bt));
        std::copy_n(f.k_pool.begin() + src, shape.head_dim,
                    k.begin() + i * row + h * shape.head_dim);
        std::copy_n(f.v_pool.begin() + src, shape.head_dim,
                    v.begin() + i * row + h * shape.head_dim);
      }
    }
    f.k_dense.push_back(std::move(k));
    f.v_dense.push_back(std::move(v));
  }
  return f;
}

// Largest |a - b| - (atol + rtol |b|) over the arrays; <= 0 means within tolerance. NaN in
// either array counts as +inf.
inline double excess_error(const float* a, const float* b, size_t n, double atol, double rtol) {
  double worst = -INFINITY;
  for (size_t i = 0; i < n; ++i) {
    if (std::isnan(a[i]) || std::isnan(b[i])) return INFINITY;
    worst = std::max(
        worst, std::abs(double{a[i]} - double{b[i]}) - (atol + rtol * std::abs(double{b[i]})));
  }
  return worst;
}

}  // namespace isim::test
