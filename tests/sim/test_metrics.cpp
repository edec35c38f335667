// Percentiles are nearest-rank: the ceil(p/100 x n)-th smallest value.
#include <doctest/doctest.h>

#include "sim/metrics.h"

TEST_CASE("make_stat: nearest-rank percentiles over 1..20") {
  std::vector<double> v;
  for (int i = 20; i >= 1; --i) v.push_back(i);  // order does not matter
  const isim::sim::Stat s = isim::sim::make_stat(v);
  CHECK(s.n == 20);
  CHECK(s.mean == doctest::Approx(10.5));
  CHECK(s.p50 == 10);  // ceil(10) = 10th
  CHECK(s.p90 == 18);  // ceil(18) = 18th
  CHECK(s.p95 == 19);  // ceil(19) = 19th
  CHECK(s.p99 == 20);  // ceil(19.8) = 20th
  CHECK(s.max == 20);
}
