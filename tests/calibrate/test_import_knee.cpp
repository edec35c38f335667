// The knee rule that sets an imported profile's saturation_tokens (calibrate/import_common.h),
// on synthetic curves whose knee is known, and the decode-grid rectangle builder.
#include <doctest/doctest.h>

#include <algorithm>
#include <stdexcept>

#include "calibrate/import_common.h"
#include "core/input_error.h"

using isim::calib::knee_tokens;
using isim::sim::Curve1D;

namespace {

// T(x) = max(c, a x): flat until the knee k = c / a, then linear.
Curve1D flat_then_linear(const std::vector<double>& xs, double c, double a) {
  Curve1D t;
  for (const double x : xs) {
    t.x.push_back(x);
    t.y.push_back(std::max(c, a * x));
  }
  return t;
}

}  // namespace

TEST_CASE("knee: flat then linear on a doubling grid finds the knee exactly") {
  std::vector<double> xs;
  for (double x = 1; x <= 4096; x *= 2) xs.push_back(x);
  // k = 2560 / 10 = 256. m(256) = (5120 - 2560) / 256 = 10 = a; m(128) = (2560 - 2560) / 128 = 0.
  CHECK(knee_tokens(flat_then_linear(xs, 2560, 10)) == 256);
  // k = 64: the same rule one octave lower.
  CHECK(knee_tokens(flat_then_linear(xs, 640, 10)) == 64);
}

TEST_CASE("knee: on a fine grid the rule returns the smallest octave >= k / 1.15") {
  std::vector<double> xs;
  for (double x = 16; x <= 4096; x += 16) xs.push_back(x);
  // Ladder 2048, 1024, 512, ... For k/2 <= x < k, m(x) = (2 a x - c) / x = a (2 - k / x).
  // k = 1100: m(2048) = a (reference); m(1024) = a (2 - 1100/1024) = 0.926 a, within 15%;
  // m(512) = 0 (512 < k/2): the knee is 1024, just below k.
  CHECK(knee_tokens(flat_then_linear(xs, 2200, 2)) == 1024);
  // k = 1200: m(1024) = a (2 - 1200/1024) = 0.828 a, off by 17%: the knee is 2048.
  CHECK(knee_tokens(flat_then_linear(xs, 2400, 2)) == 2048);
  // A 20% tolerance accepts 1024 again.
  CHECK(knee_tokens(flat_then_linear(xs, 2400, 2), 0.20) == 1024);
  // One noisy point off the ladder does not move the knee: 1100 -> 1024 still.
  Curve1D noisy = flat_then_linear(xs, 2200, 2);
  noisy.y[static_cast<std::size_t>(1504 / 16 - 1)] *= 1.5;  // the point at 1504 tokens
  CHECK(knee_tokens(noisy) == 1024);
}

TEST_CASE("knee: a curve linear from the start saturates at its first point") {
  Curve1D t;
  for (double x = 1; x <= 1024; x *= 2) {
    t.x.push_back(x);
    t.y.push_back(5 + 2 * x);
  }
  CHECK(knee_tokens(t) == 1);
}

TEST_CASE("knee: curves it cannot use") {
  CHECK_THROWS_AS(knee_tokens(Curve1D{{1}, {5}}), std::invalid_argument);
  CHECK_THROWS_AS(knee_tokens(Curve1D{{10, 15}, {5, 6}}), std::invalid_argument);      // < 2x range
  CHECK_THROWS_AS(knee_tokens(Curve1D{{1, 2, 4}, {5, 6, 6}}), std::invalid_argument);  // flat top
  CHECK_THROWS_AS(isim::calib::saturation_from_dense(Curve1D{{1, 2, 4}, {5, 6, 6}}, "f.csv"),
                  isim::InputError);
}

TEST_CASE("decode grid: per-sequence rows become a (sequences, total KV) rectangle") {
  std::map<int64_t, Curve1D> rows;
  rows[1] = Curve1D{{10, 20}, {1, 2}};  // 0.1 us per KV token
  rows[2] = Curve1D{{10, 20}, {3, 5}};  // 0.2 us per KV token per sequence
  isim::calib::GridFill fill;
  const auto g = isim::calib::decode_grid(rows, &fill);
  // Totals: 1x10, 1x20, 2x10, 2x20 = {10, 20, 40}.
  CHECK(g.x == std::vector<double>{1, 2});
  CHECK(g.y == std::vector<double>{10, 20, 40});
  // n=1: 1, 2, kv 40 extrapolated: 2 + 20 * 0.1 = 4. n=2: kv 5 extrapolated: 3 - 5 * 0.2 = 2;
  // kv 10: 3; kv 20: 5.
  CHECK(g.z == std::vector<double>{1, 2, 4, 2, 3, 5});
  CHECK(fill.measured == 4);
  CHECK(fill.interpolated == 0);
  CHECK(fill.extrapolated == 2);
}
