// The split-KV merge arithmetic (kernels/split_merge.h) that decode attention's merge kernel
// runs, on the CPU, with hand-computed values.
#include <doctest/doctest.h>

#include <cmath>

#include "kernels/split_merge.h"

using namespace isim::kernels;

TEST_CASE("split merge: two splits weigh by 2^(lse - max)") {
  // lse2 = {1, 2}: mx = 2, weights 2^-1 = 0.5 and 1, sum 1.5.
  // Element values {3, 6} (stride 4: the other elements sit between them).
  const float lse2[2] = {1.f, 2.f};
  const float part[8] = {3.f, 0.f, 0.f, 0.f, 6.f, 0.f, 0.f, 0.f};
  const float mx = split_merge_max(lse2, 2);
  const float sum = split_merge_sum(lse2, 2, mx);
  CHECK(mx == 2.f);
  CHECK(sum == doctest::Approx(1.5f));
  // (0.5 * 3 + 1 * 6) / 1.5 = 5
  CHECK(split_merge_value(lse2, part, 4, 2, mx, sum) == doctest::Approx(5.f));
  // 2 + log2(1.5) = 2.5849625
  CHECK(split_merge_lse2(mx, sum) == doctest::Approx(2.5849625f));
}

TEST_CASE("split merge: an empty split counts for nothing, whatever its output holds") {
  const float lse2[3] = {-INFINITY, 0.f, -INFINITY};
  const float part[3] = {NAN, 7.f, 1e30f};
  const float mx = split_merge_max(lse2, 3);
  const float sum = split_merge_sum(lse2, 3, mx);
  CHECK(mx == 0.f);
  CHECK(sum == 1.f);
  CHECK(split_merge_value(lse2, part, 1, 3, mx, sum) == 7.f);
  CHECK(split_merge_lse2(mx, sum) == 0.f);
}

TEST_CASE("split merge: a row whose splits are all empty is 0 with lse -inf, not 0/0") {
  const float lse2[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
  const float part[4] = {NAN, NAN, 2.f, 3.f};
  const float mx = split_merge_max(lse2, 4);
  const float sum = split_merge_sum(lse2, 4, mx);
  CHECK(sum == 0.f);
  const float v = split_merge_value(lse2, part, 1, 4, mx, sum);
  CHECK_FALSE(std::isnan(v));
  CHECK(v == 0.f);
  CHECK(std::isinf(split_merge_lse2(mx, sum)));
  CHECK(split_merge_lse2(mx, sum) < 0.f);
}
