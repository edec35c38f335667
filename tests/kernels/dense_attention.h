// Naive dense attention in float64 on contiguous K/V: the yardstick the paged CPU reference is
// tested against (tests only). Same causal rule as kernels/kv_layout.h: query i of a q_len
// chunk sees kv positions [0, kv_len - q_len + i].
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace isim::test {

// q, out: [q_len][hq][dim]; k, v: [kv_len][hkv][dim]; lse: [q_len][hq] (may be null).
inline void dense_attention(int hq, int hkv, int dim, int64_t q_len, int64_t kv_len, const float* q,
                            const float* k, const float* v, double scale, float* out, float* lse) {
  const int group = hq / hkv;
  std::vector<double> p(static_cast<size_t>(kv_len));
  for (int64_t i = 0; i < q_len; ++i) {
    const int64_t n = kv_len - q_len + i + 1;
    for (int h = 0; h < hq; ++h) {
      const float* qr = q + (i * hq + h) * dim;
      const int g = h / group;
      double m = -INFINITY;
      for (int64_t j = 0; j < n; ++j) {
        const float* kr = k + (j * hkv + g) * dim;
        double dot = 0.0;
        for (int d = 0; d < dim; ++d) dot += double{qr[d]} * double{kr[d]};
        p[static_cast<size_t>(j)] = dot * scale;
        m = std::max(m, p[static_cast<size_t>(j)]);
      }
      double l = 0.0;
      for (int64_t j = 0; j < n; ++j)
        l += (p[static_cast<size_t>(j)] = std::exp(p[static_cast<size_t>(j)] - m));
      for (int d = 0; d < dim; ++d) {
        double acc = 0.0;
        for (int64_t j = 0; j < n; ++j)
          acc += p[static_cast<size_t>(j)] * double{v[(j * hkv + g) * dim + d]};
        out[(i * hq + h) * dim + d] = static_cast<float>(acc / l);
      }
      if (lse) lse[i * hq + h] = static_cast<float>(m + std::log(l));
    }
  }
}

}  // namespace isim::test
