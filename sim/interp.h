// Piecewise-linear interpolation over measured grids.
//
// Contract: axes are strictly increasing with at least two points (a one-point curve is a
// constant). Inside the grid, values are interpolated linearly (bilinearly for Grid2D).
// Outside, they are extrapolated linearly from the last two points on that axis, and the call
// reports it through `extrapolated` so the run can count warnings. Results are clamped at 0.
#pragma once

#include <vector>

namespace isim::sim {

struct Curve1D {
  std::vector<double> x;
  std::vector<double> y;

  double eval(double at, bool* extrapolated = nullptr) const;
  bool empty() const { return x.empty(); }
  bool operator==(const Curve1D&) const = default;
};

struct Grid2D {
  std::vector<double> x;
  std::vector<double> y;
  std::vector<double> z;  // row-major: z[i * y.size() + j] = f(x[i], y[j])

  double eval(double at_x, double at_y, bool* extrapolated = nullptr) const;
  bool empty() const { return x.empty(); }
  bool operator==(const Grid2D&) const = default;
};

}  // namespace isim::sim
