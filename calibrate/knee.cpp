#include "calibrate/knee.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/input_error.h"

namespace isim::calib {

Knee find_knee(const std::vector<double>& x, const std::vector<double>& y,
               const KneeOptions& options) {
  if (x.size() != y.size() || x.size() < 3)
    throw InputError(fmt::format("knee: need at least 3 points with one y per x (got {} x, {} y)",
                                 x.size(), y.size()));
  if (!(options.tolerance > 0 && options.tolerance < 1))
    throw InputError(fmt::format("knee: tolerance = {}: must be in (0, 1)", options.tolerance));
  if (options.tail_points < 2)
    throw InputError(fmt::format("knee: tail_points = {}: must be >= 2", options.tail_points));
  for (size_t i = 1; i < x.size(); ++i)
    if (!(x[i] > x[i - 1]))
      throw InputError(fmt::format("knee: x[{}] = {} after {}: x must be strictly increasing", i,
                                   x[i], x[i - 1]));
  Knee k;
  for (size_t i = 0; i + 1 < x.size(); ++i)
    k.slopes.push_back((y[i + 1] - y[i]) / (x[i + 1] - x[i]));

  const size_t n = std::min(x.size(), static_cast<size_t>(options.tail_points));
  const size_t first = x.size() - n;
  double mx = 0, my = 0;
  for (size_t i = first; i < x.size(); ++i) mx += x[i], my += y[i];
  mx /= double(n);
  my /= double(n);
  double sxy = 0, sxx = 0;
  for (size_t i = first; i < x.size(); ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
  }
  k.marginal = sxy / sxx;
  if (!(k.marginal > 0)) {
    k.x = x.back();
    return k;
  }
  // Walk back from the last segment while the slopes stay inside the band.
  size_t knee = k.slopes.size();
  while (knee > 0 && std::abs(k.slopes[knee - 1] - k.marginal) <= options.tolerance * k.marginal)
    --knee;
  k.x = x[knee];
  return k;
}

}  // namespace isim::calib
