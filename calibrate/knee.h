// Knee detection: where a measured cost curve turns linear in tokens (saturation_tokens).
//
// Definition. Given points (x_i, y_i), x strictly increasing, the marginal cost of segment i is
// m_i = (y_{i+1} - y_i) / (x_{i+1} - x_i). The asymptotic marginal cost m_inf is the
// least-squares slope through the last `tail_points` points (at least 2; all when fewer). The
// knee is the smallest x_i such that every segment from i on has |m_j - m_inf| <= tolerance *
// m_inf. A curve that is linear from the start has its knee at x_0; a flat-then-linear curve
// whose bend lies on a grid point has it there. The segment ending at the last point is always
// within tolerance by construction only when tail_points = 2, hence the fit over more points,
// which keeps one noisy last point from moving the answer.
//
// Contract: throws isim::InputError for fewer than 3 points, a non-increasing x, a tolerance
// outside (0, 1) or tail_points < 2. When m_inf <= 0 (the curve never turns linear-increasing)
// the knee is the last x.
#pragma once

#include <cstdint>
#include <vector>

namespace isim::calib {

struct KneeOptions {
  double tolerance = 0.25;  // relative band around the asymptotic marginal cost
  int tail_points = 3;      // points the asymptotic slope is fitted through
};

struct Knee {
  double x = 0;                // the knee
  double marginal = 0;         // m_inf, y units per x unit
  std::vector<double> slopes;  // m_i, one per segment
};

Knee find_knee(const std::vector<double>& x, const std::vector<double>& y,
               const KneeOptions& options = {});

}  // namespace isim::calib
