// aggregate.csv over seeds (experiments/sweep/sweep_aggregate.h).
#include "experiments/sweep/sweep_aggregate.h"

#include <array>
#include <cmath>
#include <cstdlib>
#include <map>

#include <fmt/format.h>

#include "core/csv.h"

namespace isim::exp {

namespace {

// The cell as a finite number; false when it is not one (or empty).
bool number_of(const std::string& cell, double& out) {
  if (cell.empty()) return false;
  char* end = nullptr;
  out = std::strtod(cell.c_str(), &end);
  return end == cell.c_str() + cell.size() && std::isfinite(out);
}

std::string num_cell(double v) {
  return fmt::format("{}", v);
}

}  // namespace

double student_t95(size_t dof) {
  // Two-sided 95% quantiles of Student's t for 1..29 degrees of freedom (any statistics table,
  // e.g. NIST/SEMATECH e-Handbook of Statistical Methods, table 1.3.6.7.2).
  static constexpr std::array<double, 29> t = {
      12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
      2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
      2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045};
  return dof >= 1 && dof <= t.size() ? t[dof - 1] : 1.96;
}

double ci95_half_width(const std::vector<double>& v) {
  const size_t n = v.size();
  if (n <= 1) return -1;
  double sum = 0;
  for (double x : v) sum += x;
  const double mean = sum / static_cast<double>(n);
  double ss = 0;
  for (double x : v) ss += (x - mean) * (x - mean);
  const double sd = std::sqrt(ss / static_cast<double>(n - 1));
  return student_t95(n - 1) * sd / std::sqrt(static_cast<double>(n));
}

std::string aggregate_csv(const std::string& results_csv, const std::string& file) {
  const auto recs = read_csv(results_csv, file);
  if (recs.empty()) return "";
  const auto& head = recs.front().fields;
  size_t est = 0, seed = 0;
  for (size_t c = 2; c < head.size(); ++c) {
    if (head[c] == "estimator" && est == 0) est = c;
    if (head[c] == "seed" && est == 0) seed = c;
  }
  if (est == 0 || seed == 0) return "";
  // Numeric metric columns: every non-empty cell a number, at least one.
  std::vector<size_t> metrics;
  for (size_t c = est + 1; c < head.size(); ++c) {
    bool any = false, all = true;
    for (size_t r = 1; r < recs.size() && all; ++r) {
      const std::string& cell = c < recs[r].fields.size() ? recs[r].fields[c] : std::string();
      double x = 0;
      if (cell.empty()) continue;
      any = true;
      all = number_of(cell, x);
    }
    if (any && all) metrics.push_back(c);
  }
  // Points: the key columns (policy, swept keys but seed, estimator), first appearance order.
  std::vector<size_t> keys = {1};
  for (size_t c = 2; c <= est; ++c)
    if (c != seed) keys.push_back(c);
  std::map<std::vector<std::string>, size_t> point_of;
  std::vector<std::vector<std::string>> points;
  std::vector<std::vector<size_t>> rows_of;
  for (size_t r = 1; r < recs.size(); ++r) {
    std::vector<std::string> k;
    for (size_t c : keys) k.push_back(c < recs[r].fields.size() ? recs[r].fields[c] : "");
    auto [it, fresh] = point_of.try_emplace(k, points.size());
    if (fresh) {
      points.push_back(k);
      rows_of.emplace_back();
    }
    rows_of[it->second].push_back(r);
  }
  std::vector<std::string> out_head;
  for (size_t c : keys) out_head.push_back(head[c]);
  out_head.emplace_back("seeds");
  for (size_t c : metrics) {
    out_head.push_back(head[c]);
    out_head.push_back(head[c] + ".ci95");
  }
  std::string out = join_csv(out_head);
  for (size_t p = 0; p < points.size(); ++p) {
    std::vector<std::string> row = points[p];
    row.push_back(std::to_string(rows_of[p].size()));
    for (size_t c : metrics) {
      std::vector<double> v;
      for (size_t r : rows_of[p]) {
        double x = 0;
        if (c < recs[r].fields.size() && number_of(recs[r].fields[c], x)) v.push_back(x);
      }
      double sum = 0;
      for (double x : v) sum += x;
      row.push_back(v.empty() ? "" : num_cell(sum / static_cast<double>(v.size())));
      const double h = ci95_half_width(v);
      row.push_back(h < 0 ? "" : num_cell(h));
    }
    out += join_csv(row);
  }
  return out;
}

}  // namespace isim::exp
