// Merging the partial results of split-KV decode attention (kernels/cuda/decode_attention.cu's
// merge step), as host-and-device functions so that the CPU suite tests the same arithmetic.
//
// Split k of a (sequence, q head) row produced a normalised output o_k[d] and a log2-domain
// log-sum-exp lse_k; an empty split has lse_k = -inf (and any o_k). With mx = max_k lse_k and
// weights w_k = 2^(lse_k - mx) (0 for an empty split), the row's output is
// sum_k w_k o_k[d] / sum_k w_k and its log2 lse is mx + log2(sum_k w_k). A row whose splits are
// all empty (no key attended) has output 0 and lse -inf, not 0/0.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/kv_layout.h"  // ISIM_HD

namespace isim::kernels {

ISIM_HD inline float split_merge_max(const float* lse2, int n) {
  float mx = -INFINITY;
  for (int k = 0; k < n; ++k) mx = fmaxf(mx, lse2[k]);
  return mx;
}

ISIM_HD inline float split_merge_weight(float lse2, float mx) {
  return lse2 == -INFINITY ? 0.f : exp2f(lse2 - mx);
}

ISIM_HD inline float split_merge_sum(const float* lse2, int n, float mx) {
  float sum = 0.f;
  for (int k = 0; k < n; ++k) sum += split_merge_weight(lse2[k], mx);
  return sum;
}

// One output element: part[k * stride] is split k's value of it.
ISIM_HD inline float split_merge_value(const float* lse2, const float* part, int64_t stride, int n,
                                       float mx, float sum) {
  if (!(sum > 0.f)) return 0.f;
  float o = 0.f;
  for (int k = 0; k < n; ++k) {
    const float w = split_merge_weight(lse2[k], mx);
    if (w > 0.f) o += w * part[k * stride];
  }
  return o / sum;
}

ISIM_HD inline float split_merge_lse2(float mx, float sum) {
  return sum > 0.f ? mx + log2f(sum) : -INFINITY;
}

}  // namespace isim::kernels
