#include <doctest/doctest.h>

#include <stdexcept>

#include "sim/interp.h"

using isim::sim::Curve1D;
using isim::sim::Grid2D;
using isim::sim::Grid4D;

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

TEST_CASE("Grid4D is multilinear: grid points exactly, inside by hand, extrapolation reported") {
  // Axes a0 [0, 10], a1 [5] (one point), a2 [1, 3], a3 [0, 4]; z row-major, a3 fastest.
  Grid4D g;
  g.axes = {std::vector<double>{0, 10}, {5}, {1, 3}, {0, 4}};
  g.z = {1, 3,  2, 6,    // a0 = 0: (a2 = 1: a3 0, 4), (a2 = 3: a3 0, 4)
         5, 11, 9, 21};  // a0 = 10
  bool outside = true;
  CHECK(g.eval({10, 5, 3, 4}, &outside) == 21.0);
  CHECK_FALSE(outside);
  CHECK(g.eval({0, 5, 3, 0}) == 2.0);
  // (5, 5, 2, 1): along a3 (t = 1/4): a0 = 0: 1.5 and 3, a0 = 10: 6.5 and 12; along a2 (t = 1/2):
  // 2.25 and 9.25; along a0 (t = 1/2): 5.75.
  CHECK(g.eval({5, 5, 2, 1}, &outside) == 5.75);
  CHECK_FALSE(outside);
  // Off the one-point axis: constant along it, but reported.
  CHECK(g.eval({5, 6, 2, 1}, &outside) == 5.75);
  CHECK(outside);
  // a0 = 20 extrapolates from 0 and 10: at (., 5, 1, 0) 1 -> 5 -> 9.
  CHECK(g.eval({20, 5, 1, 0}, &outside) == 9.0);
  CHECK(outside);
  // Clamped at zero: a0 = -10 at (., 5, 3, 4): 6 - 15 = -9 -> 0.
  CHECK(g.eval({-10, 5, 3, 4}) == 0.0);
  // The product x0 x1 x2 x3 on the unit hypercube is multilinear: exact at the centre.
  Grid4D p;
  p.axes = {std::vector<double>{0, 1}, {0, 1}, {0, 1}, {0, 1}};
  p.z.assign(16, 0);
  p.z[15] = 1;
  CHECK(p.eval({0.5, 0.5, 0.5, 0.5}) == 0.0625);
  CHECK(p.cells() == 16);
  Grid4D bad = p;
  bad.z.pop_back();
  CHECK_THROWS_AS((void)bad.eval({0, 0, 0, 0}), std::logic_error);
  CHECK_THROWS_AS((void)Grid4D{}.eval({0, 0, 0, 0}), std::logic_error);
}

TEST_CASE("eval_rising: a time table past a dipping edge stays at the edge, inside unchanged") {
  // Tokens 1, 2, 4 -> 10, 20, 16 us: the last pair dips 20% (noise or a kernel switch).
  Curve1D c{{1, 2, 4}, {10, 20, 16}};
  bool outside = false;
  // eval extrapolates the dip: 16 + (8 - 4) x (16 - 20) / 2 = 8; eval_rising keeps the edge 16.
  CHECK(c.eval(8) == 8.0);
  CHECK(c.eval_rising(8, &outside) == 16.0);
  CHECK(outside);
  // Rising past the edge is left as extrapolated: a curve 10, 20 at 1, 2 gives 40 at 4.
  CHECK(Curve1D{{1, 2}, {10, 20}}.eval_rising(4) == 40.0);
  // Inside: the same as eval (3 -> 18), not reported.
  CHECK(c.eval_rising(3, &outside) == 18.0);
  CHECK_FALSE(outside);
  // Before a first pair that dips (12 at 1, 10 at 2): eval gives 14 at 0, eval_rising 12.
  Curve1D d{{1, 2}, {12, 10}};
  CHECK(d.eval(0) == 14.0);
  CHECK(d.eval_rising(0) == 12.0);

  // Grid: x 1, 2 by y 0, 10; at x = 2 the time dips along y (4 -> 3).
  Grid2D g{{1, 2}, {0, 10}, {1, 2, 4, 3}};
  // (2, 20): along y from 4, 3: 3 - 1 = 2; with y rising, the edge (2, 10) = 3 holds.
  CHECK(g.eval(2, 20) == 2.0);
  CHECK(g.eval_rising(2, 20, true, true, &outside) == 3.0);
  CHECK(outside);
  // y not marked rising (e.g. decode attention's sequences axis): as eval.
  CHECK(g.eval_rising(2, 20, true, false) == 2.0);
}
