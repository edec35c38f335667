#include <doctest/doctest.h>

#include <stdexcept>

#include "sim/interp.h"

using isim::sim::Curve1D;
using isim::sim::Grid2D;

TEST_CASE("Curve1D interpolates inside the grid and returns grid points exactly") {
  const Curve1D c{{1, 3, 7}, {2, 6, 4}};
  bool outside = true;
  CHECK(c.eval(1, &outside) == 2.0);
  CHECK_FALSE(outside);
  CHECK(c.eval(3) == 6.0);
  CHECK(c.eval(7, &outside) == 4.0);
  CHECK_FALSE(outside);
  CHECK(c.eval(2, &outside) == 4.0);  // halfway between (1, 2) and (3, 6)
  CHECK_FALSE(outside);
  CHECK(c.eval(5) == 5.0);  // halfway between (3, 6) and (7, 4)
}

TEST_CASE("Curve1D extrapolates from the last two points and clamps at zero") {
  const Curve1D c{{1, 3, 7}, {2, 6, 4}};
  bool outside = false;
  CHECK(c.eval(0.5, &outside) == 1.0);  // slope 2 from (1, 2)
  CHECK(outside);
  CHECK(c.eval(-1, &outside) == 0.0);  // 2 - 2 * 2 = -2, clamped
  CHECK(outside);
  CHECK(c.eval(9, &outside) == 3.0);  // slope -0.5 from (7, 4)
  CHECK(outside);
  CHECK(c.eval(20, &outside) == 0.0);  // 4 - 6.5, clamped
  CHECK(outside);
  CHECK(c.eval(6, &outside) == 4.5);
  CHECK_FALSE(outside);
}

TEST_CASE("Curve1D with one point is a constant, extrapolated away from the point") {
  const Curve1D c{{10}, {7}};
  bool outside = true;
  CHECK(c.eval(10, &outside) == 7.0);
  CHECK_FALSE(outside);
  CHECK(c.eval(1e9, &outside) == 7.0);
  CHECK(outside);
  CHECK(c.eval(0, &outside) == 7.0);
  CHECK(outside);
}

TEST_CASE("Curve1D and Grid2D reject empty or mis-sized data") {
  CHECK_THROWS_AS((void)Curve1D{}.eval(1), std::logic_error);
  CHECK_THROWS_AS((void)(Curve1D{{1, 2}, {1}}.eval(1)), std::logic_error);
  CHECK_THROWS_AS((void)Grid2D{}.eval(1, 1), std::logic_error);
  CHECK_THROWS_AS((void)(Grid2D{{1, 2}, {1}, {1}}.eval(1, 1)), std::logic_error);
  CHECK(Curve1D{}.empty());
  CHECK(Grid2D{}.empty());
}

TEST_CASE("Grid2D is bilinear: corners exactly, cell centre is the mean of the corners") {
  const Grid2D g{{0, 2}, {0, 4}, {1, 3, 5, 11}};
  bool outside = true;
  CHECK(g.eval(0, 0, &outside) == 1.0);
  CHECK_FALSE(outside);
  CHECK(g.eval(0, 4) == 3.0);
  CHECK(g.eval(2, 0) == 5.0);
  CHECK(g.eval(2, 4) == 11.0);
  CHECK(g.eval(1, 2, &outside) == 5.0);  // (1 + 3 + 5 + 11) / 4
  CHECK_FALSE(outside);
  CHECK(g.eval(1, 0) == 3.0);  // edge midpoint
  CHECK(g.eval(2, 1) == 6.5);  // 5 + (11 - 5) / 4
}

TEST_CASE("Grid2D extrapolates each axis linearly and reports it") {
  const Grid2D g{{0, 2}, {0, 4}, {1, 3, 5, 11}};
  bool outside = false;
  CHECK(g.eval(4, 0, &outside) == 9.0);  // x slope 2 along y = 0
  CHECK(outside);
  CHECK(g.eval(0, 8, &outside) == 5.0);  // y slope 0.5 along x = 0
  CHECK(outside);
  CHECK(g.eval(4, 8, &outside) == 29.0);  // both: rows at x=4 are 9 and 19 -> y=8 gives 29
  CHECK(outside);
  CHECK(g.eval(-4, 0, &outside) == 0.0);  // 1 - 4 = -3, clamped
  CHECK(outside);
}

TEST_CASE("Grid2D with a one-point axis is constant along that axis") {
  const Grid2D g{{5}, {0, 10}, {2, 4}};
  bool outside = true;
  CHECK(g.eval(5, 5, &outside) == 3.0);
  CHECK_FALSE(outside);
  CHECK(g.eval(100, 5, &outside) == 3.0);
  CHECK(outside);
  const Grid2D single{{1}, {1}, {8}};
  CHECK(single.eval(3, 9, &outside) == 8.0);
  CHECK(outside);
}
