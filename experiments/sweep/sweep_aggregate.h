// aggregate.csv: a sweep's results over seeds, as mean and 95% confidence interval.
//
// Contract:
// - aggregate_csv(text) reads a results.csv (sweep.h: run_index, policy, the swept keys'
//   columns, estimator, the metrics). Without a `seed` column among the swept keys it returns
//   "" (no aggregate). Otherwise one row per point of the other swept keys, policy and
//   estimator (rows with equal cells there; in order of first appearance, so in run-index
//   order): policy, the other swept columns, estimator, `seeds` (the point's rows), then for
//   every numeric metric column M (each non-empty cell in the file a finite number; booleans
//   are 1/0): `M`, the mean of its non-empty cells, and `M.ci95`, the half-width of the 95%
//   Student t interval t(n-1) * sd / sqrt(n) with the sample sd (n - 1 in the denominator),
//   t from the two-sided table for n <= 30 and 1.96 above; empty cells for n = 0 (mean) and
//   n <= 1 (half-width).
// - Two `policies:` entries with one name that differ only by parameters other than the
//   estimator share a policy column, so their rows share a point: give them separate sweeps.
// - The text depends only on results.csv's, so it is byte-identical for any --jobs and for a
//   merged sweep. ci95_half_width and student_t95 are the pieces, for tests.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace isim::exp {

// The two-sided 95% t quantile for `dof` degrees of freedom (1..29 from the table, else 1.96).
double student_t95(size_t dof);
// t(n-1) * sd / sqrt(n) of `v`; < 0 when n <= 1.
double ci95_half_width(const std::vector<double>& v);
std::string aggregate_csv(const std::string& results_csv, const std::string& file);

}  // namespace isim::exp
