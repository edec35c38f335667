#include "sim/interp.h"

#include <algorithm>
#include <cstddef>
#include <stdexcept>

namespace isim::sim {
namespace {

// Where `at` falls on one axis: the segment [lo, hi] to interpolate on and the weight of `hi`.
// Outside the axis, the first or last segment is used, so the weight leaves [0, 1] and the
// result is a linear extrapolation. A one-point axis gives lo == hi and weight 0 (a constant).
struct AxisPos {
  std::size_t lo = 0;
  std::size_t hi = 0;
  double t = 0;
  bool outside = false;
};

AxisPos locate(const std::vector<double>& axis, double at) {
  AxisPos p;
  const std::size_t n = axis.size();
  if (n == 1) {
    p.outside = at != axis[0];
    return p;
  }
  p.outside = at < axis.front() || at > axis.back();
  const auto it = std::upper_bound(axis.begin(), axis.end(), at);
  const auto after = static_cast<std::size_t>(it - axis.begin());
  p.lo = std::clamp<std::size_t>(after == 0 ? 0 : after - 1, 0, n - 2);
  p.hi = p.lo + 1;
  p.t = (at - axis[p.lo]) / (axis[p.hi] - axis[p.lo]);
  return p;
}

// (1 - t) * a + t * b is exact at both ends (t = 0 and t = 1), so grid points come back exactly.
double lerp(double a, double b, double t) {
  return (1.0 - t) * a + t * b;
}

}  // namespace

double Curve1D::eval(double at, bool* extrapolated) const {
  if (x.empty() || x.size() != y.size()) {
    throw std::logic_error("Curve1D::eval: empty curve or x/y sizes differ");
  }
  const AxisPos p = locate(x, at);
  if (extrapolated != nullptr) *extrapolated = p.outside;
  return std::max(0.0, lerp(y[p.lo], y[p.hi], p.t));
}

double Curve1D::eval_rising(double at, bool* extrapolated) const {
  const double v = eval(at, extrapolated);
  return keep_rising(v, x, at, [&](double edge) { return eval(edge); });
}

double Grid2D::eval_rising(double at_x, double at_y, bool rising_x, bool rising_y,
                           bool* extrapolated) const {
  double v = eval(at_x, at_y, extrapolated);
  if (rising_x) v = keep_rising(v, x, at_x, [&](double edge) { return eval(edge, at_y); });
  if (rising_y) v = keep_rising(v, y, at_y, [&](double edge) { return eval(at_x, edge); });
  return v;
}

double Grid2D::eval(double at_x, double at_y, bool* extrapolated) const {
  if (x.empty() || y.empty() || z.size() != x.size() * y.size()) {
    throw std::logic_error("Grid2D::eval: empty grid or z size is not x size * y size");
  }
  const AxisPos px = locate(x, at_x);
  const AxisPos py = locate(y, at_y);
  if (extrapolated != nullptr) *extrapolated = px.outside || py.outside;
  const std::size_t cols = y.size();
  const auto at = [&](std::size_t i, std::size_t j) { return z[i * cols + j]; };
  const double low = lerp(at(px.lo, py.lo), at(px.lo, py.hi), py.t);
  const double high = lerp(at(px.hi, py.lo), at(px.hi, py.hi), py.t);
  return std::max(0.0, lerp(low, high, px.t));
}

double Grid4D::eval(const std::array<double, 4>& at, bool* extrapolated) const {
  if (empty() || z.size() != cells()) {
    throw std::logic_error("Grid4D::eval: empty grid or z size is not the product of the axes");
  }
  std::array<AxisPos, 4> p;
  bool outside = false;
  for (std::size_t d = 0; d < 4; ++d) {
    p[d] = locate(axes[d], at[d]);
    outside = outside || p[d].outside;
  }
  if (extrapolated != nullptr) *extrapolated = outside;
  // Corner c (bit d set: the hi side of axis d) of the cell's 16; reduce the last axis first.
  std::array<double, 16> v{};
  for (std::size_t c = 0; c < 16; ++c) {
    std::size_t flat = 0;
    for (std::size_t d = 0; d < 4; ++d) {
      const bool hi = ((c >> (3 - d)) & 1U) != 0;
      flat = flat * axes[d].size() + (hi ? p[d].hi : p[d].lo);
    }
    v[c] = z[flat];
  }
  for (std::size_t d = 4; d-- > 0;) {
    const std::size_t half = std::size_t{1} << d;
    for (std::size_t c = 0; c < half; ++c) v[c] = lerp(v[2 * c], v[2 * c + 1], p[d].t);
  }
  return std::max(0.0, v[0]);
}

}  // namespace isim::sim
