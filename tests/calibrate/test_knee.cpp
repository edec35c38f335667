// The knee detector on synthetic curves whose knee is known.
#include <doctest/doctest.h>

#include "calibrate/knee.h"
#include "core/input_error.h"
#include "kernels/runner/init.h"

using isim::calib::find_knee;

namespace {

std::vector<double> grid() {  // 1, 2, 4, ..., 8192
  std::vector<double> x;
  for (double v = 1; v <= 8192; v *= 2) x.push_back(v);
  return x;
}

// Flat at c up to s tokens, then c + a (x - s).
std::vector<double> flat_then_linear(const std::vector<double>& x, double c, double a, double s) {
  std::vector<double> y;
  for (double v : x) y.push_back(v <= s ? c : c + a * (v - s));
  return y;
}

}  // namespace

TEST_CASE("knee: flat then linear turns at the bend") {
  const auto x = grid();
  for (double s : {64.0, 256.0, 1024.0}) {
    CAPTURE(s);
    const auto k = find_knee(x, flat_then_linear(x, 500, 0.25, s));
    CHECK(k.x == s);
    CHECK(k.marginal == doctest::Approx(0.25));
  }
}

TEST_CASE("knee: a pure linear curve is linear from its first point") {
  const auto x = grid();
  std::vector<double> y;
  for (double v : x) y.push_back(3 + 0.5 * v);
  const auto k = find_knee(x, y);
  CHECK(k.x == 1);
  CHECK(k.marginal == doctest::Approx(0.5));
}

TEST_CASE("knee: a smooth roofline bend max(c, a x) lands on its grid point") {
  // max(800, 0.5 x): the bend is at 1600, between grid points 1024 and 2048; segments from 2048
  // on have slope exactly 0.5, the one across the bend has (1024 - 800) / 1024 = 0.22.
  const auto x = grid();
  std::vector<double> y;
  for (double v : x) y.push_back(std::max(800.0, 0.5 * v));
  CHECK(find_knee(x, y).x == 2048);
}

TEST_CASE("knee: noise of +-3% moves the knee by at most one grid point") {
  const auto x = grid();
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    CAPTURE(seed);
    auto y = flat_then_linear(x, 1000, 0.5, 512);
    for (size_t i = 0; i < y.size(); ++i)
      y[i] *= 1 + 0.03 * isim::kernels::runner::weight_value(seed, 0, i);
    const double k = find_knee(x, y).x;
    CHECK(k >= 256);
    CHECK(k <= 1024);
  }
}

TEST_CASE("knee: a curve that never rises has its knee at the end; bad input is rejected") {
  const std::vector<double> x = {1, 2, 4, 8};
  CHECK(find_knee(x, {5, 5, 5, 5}).x == 8);
  CHECK_THROWS_AS(find_knee({1, 2}, {1, 2}), isim::InputError);
  CHECK_THROWS_WITH_AS(find_knee({1, 4, 2}, {1, 2, 3}), doctest::Contains("strictly increasing"),
                       isim::InputError);
  CHECK_THROWS_AS(find_knee(x, {1, 2, 3, 4}, {.tolerance = 0}), isim::InputError);
}
