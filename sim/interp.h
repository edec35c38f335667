// Piecewise-linear interpolation over measured grids.
//
// Contract: axes are strictly increasing with at least two points (a one-point curve is a
// constant). Inside the grid, values are interpolated linearly (bilinearly for Grid2D).
// Outside, they are extrapolated linearly from the last two points on that axis, and the call
// reports it through `extrapolated` so the run can count warnings. Results are clamped at 0.
// eval_rising is for time tables, whose value cannot fall as the work on an axis grows: on an
// axis marked rising, a point past the last grid point is never below the value at that point
// (with the other coordinates as given), and one before the first never above the value at the
// first; so a table whose last pair of points dips (measurement noise, a kernel switch) does not
// extrapolate toward 0, and a first pair that dips does not extrapolate upward. Inside the grid
// it is eval.
// Grid4D interpolates along its last axis first, then the third, second and first (each step a
// linear interpolation, so grid points come back exactly).
#pragma once

#include <array>
#include <cstddef>
#include <vector>

namespace isim::sim {

struct Curve1D {
  std::vector<double> x;
  std::vector<double> y;

  double eval(double at, bool* extrapolated = nullptr) const;
  double eval_rising(double at, bool* extrapolated = nullptr) const;
  bool empty() const { return x.empty(); }
  bool operator==(const Curve1D&) const = default;
};

struct Grid2D {
  std::vector<double> x;
  std::vector<double> y;
  std::vector<double> z;  // row-major: z[i * y.size() + j] = f(x[i], y[j])

  double eval(double at_x, double at_y, bool* extrapolated = nullptr) const;
  double eval_rising(double at_x, double at_y, bool rising_x, bool rising_y,
                     bool* extrapolated = nullptr) const;
  bool empty() const { return x.empty(); }
  bool operator==(const Grid2D&) const = default;
};

// `v`, evaluated at `at` on `axis`, kept on the physical side of the axis's edge value
// `edge(point)` (see eval_rising); unchanged inside the axis.
template <class Edge>
double keep_rising(double v, const std::vector<double>& axis, double at, Edge edge) {
  if (at > axis.back()) return v < edge(axis.back()) ? edge(axis.back()) : v;
  if (at < axis.front()) return v > edge(axis.front()) ? edge(axis.front()) : v;
  return v;
}

// A 4-D grid, multilinear inside (16 corners) and linearly extrapolated per axis outside.
struct Grid4D {
  std::array<std::vector<double>, 4> axes;
  // Row-major, the last axis fastest: z[((i * n1 + j) * n2 + k) * n3 + l] = f(a0[i], a1[j], ...).
  std::vector<double> z;

  double eval(const std::array<double, 4>& at, bool* extrapolated = nullptr) const;
  bool empty() const { return axes[0].empty(); }
  std::size_t cells() const {
    return axes[0].size() * axes[1].size() * axes[2].size() * axes[3].size();
  }
  bool operator==(const Grid4D&) const = default;
};

}  // namespace isim::sim
