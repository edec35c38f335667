#include "calibrate/import_common.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "core/input_error.h"
#include "core/input_file.h"

namespace isim::calib {

namespace {

std::vector<std::string> split_commas(const std::string& line) {
  std::vector<std::string> out;
  std::string cell;
  for (const char c : line) {
    if (c == ',') {
      out.push_back(cell);
      cell.clear();
    } else if (c != '\r') {
      cell += c;
    }
  }
  out.push_back(cell);
  return out;
}

}  // namespace

std::size_t CsvTable::column(const std::string& name) const {
  for (std::size_t i = 0; i < header.size(); ++i) {
    if (header[i] == name) return i;
  }
  std::string list;
  for (const auto& h : header) {
    if (!list.empty()) list += ", ";
    list += h;
  }
  std::string msg = path;
  msg += ": ";
  msg += name;
  msg += ": missing (columns: ";
  msg += list;
  msg += ")";
  throw InputError(msg);
}

double CsvTable::number(std::size_t row, std::size_t col) const {
  const std::string& s = rows[row][col];
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (s.empty() || used != s.size() || !std::isfinite(v)) {
    throw InputError(
        fmt::format("{}: {}: expected a number, got '{}'", where(row), header[col], s));
  }
  return v;
}

int64_t CsvTable::integer(std::size_t row, std::size_t col, int64_t lo, int64_t hi) const {
  const double v = number(row, col);
  if (v != std::floor(v) || v < static_cast<double>(lo) || v > static_cast<double>(hi)) {
    throw InputError(fmt::format("{}: {}: expected an integer from {} to {}, got '{}'", where(row),
                                 header[col], lo, hi, rows[row][col]));
  }
  return static_cast<int64_t>(v);
}

std::string CsvTable::where(std::size_t row) const {
  return fmt::format("{}:{}", path, lines[row]);
}

CsvTable read_csv(const std::string& path) {
  std::ifstream in = open_input_file(path, "a CSV table", std::ios::in);
  CsvTable t;
  t.path = path;
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (n == 1 && line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);  // a UTF-8 byte-order mark
    if (line.empty() || line == "\r") continue;
    std::vector<std::string> cells = split_commas(line);
    if (t.header.empty()) {
      t.header = std::move(cells);
      continue;
    }
    if (cells.size() != t.header.size()) {
      throw InputError(fmt::format("{}:{}: expected {} columns (as the header), got {}", path, n,
                                   t.header.size(), cells.size()));
    }
    t.rows.push_back(std::move(cells));
    t.lines.push_back(n);
  }
  if (t.header.empty()) throw InputError(path + ": empty file (expected a header line)");
  check_read(in, path, n + 1);
  return t;
}

std::string GridFill::text() const {
  return fmt::format("{} measured, {} interpolated, {} extrapolated", measured, interpolated,
                     extrapolated);
}

double eval_counted(const sim::Curve1D& c, double x, GridFill* fill) {
  const double v = c.eval(x);
  if (fill != nullptr) {
    const bool exact = std::any_of(c.x.begin(), c.x.end(), [&](double p) {
      return std::abs(p - x) <= 1e-9 * std::max(1.0, std::abs(p));
    });
    if (exact) {
      ++fill->measured;
    } else if (x > c.x.front() && x < c.x.back()) {
      ++fill->interpolated;
    } else {
      ++fill->extrapolated;
    }
  }
  return v;
}

int64_t knee_tokens(const sim::Curve1D& dense, double tolerance) {
  if (dense.x.size() < 2 || dense.x.back() < 2 * dense.x.front()) {
    throw std::invalid_argument("knee_tokens: needs at least two points with x_max >= 2 x_min");
  }
  const double xmax = dense.x.back();
  auto marginal = [&](double x) { return (dense.eval(2 * x) - dense.eval(x)) / x; };
  const double ref = marginal(xmax / 2);
  if (!(ref > 0)) {
    throw std::invalid_argument(
        fmt::format("knee_tokens: time does not grow near the largest size ({})", xmax));
  }
  double knee = xmax / 2;
  for (double x = xmax / 4; x >= dense.x.front(); x /= 2) {
    if (std::abs(marginal(x) / ref - 1) > tolerance) break;
    knee = x;
  }
  return static_cast<int64_t>(std::llround(knee));
}

int64_t saturation_from_dense(const sim::Curve1D& dense, const std::string& origin) {
  try {
    return knee_tokens(dense);
  } catch (const std::invalid_argument& e) {
    throw InputError(fmt::format("{}: cannot derive saturation_tokens from the dense curve: {}",
                                 origin, e.what()));
  }
}

sim::Grid2D decode_grid(const std::map<int64_t, sim::Curve1D>& rows, GridFill* fill) {
  sim::Grid2D g;
  std::set<double> totals;
  for (const auto& [n, row] : rows) {
    g.x.push_back(static_cast<double>(n));
    for (const double kv : row.x) totals.insert(static_cast<double>(n) * kv);
  }
  g.y.assign(totals.begin(), totals.end());
  for (const auto& [n, row] : rows) {
    for (const double total : g.y) {
      g.z.push_back(round_us(eval_counted(row, total / static_cast<double>(n), fill)));
    }
  }
  return g;
}

namespace {

// One fill step along axis d: every line of cells along d, filled from the cells known before the
// step. `extrapolate` false: only cells between two known ones; true: the cells beyond them.
int64_t fill_along(sim::Grid4D& g, std::vector<char>& known, std::size_t d, bool extrapolate) {
  std::array<std::size_t, 4> n{}, stride{};
  for (std::size_t i = 0; i < 4; ++i) n[i] = g.axes[i].size();
  stride[3] = 1;
  for (std::size_t i = 3; i-- > 0;) stride[i] = stride[i + 1] * n[i + 1];
  const std::vector<double>& axis = g.axes[d];
  int64_t filled = 0;
  for (std::size_t base = 0; base < g.z.size(); ++base) {
    if ((base / stride[d]) % n[d] != 0) continue;  // one visit per line: its first cell
    std::vector<std::size_t> have;
    for (std::size_t k = 0; k < n[d]; ++k)
      if (known[base + k * stride[d]]) have.push_back(k);
    if (have.empty() || have.size() == n[d]) continue;
    for (std::size_t k = 0; k < n[d]; ++k) {
      const std::size_t cell = base + k * stride[d];
      if (known[cell]) continue;
      const auto hi = std::upper_bound(have.begin(), have.end(), k);
      const bool inside = hi != have.begin() && hi != have.end();
      if (inside == extrapolate) continue;
      std::size_t a = 0, b = 0;
      if (inside) {
        a = *(hi - 1);
        b = *hi;
      } else if (have.size() == 1) {
        a = b = have.front();
      } else if (hi == have.begin()) {
        a = have[0];
        b = have[1];
      } else {
        a = have[have.size() - 2];
        b = have.back();
      }
      const double za = g.z[base + a * stride[d]], zb = g.z[base + b * stride[d]];
      const double t = a == b ? 0 : (axis[k] - axis[a]) / (axis[b] - axis[a]);
      g.z[cell] = std::max(0.0, round_us((1 - t) * za + t * zb));
      known[cell] = 2;  // filled in this step; counts as known from the next step on
      ++filled;
    }
  }
  for (char& k : known)
    if (k == 2) k = 1;
  return filled;
}

}  // namespace

void check_grid4_cells(const std::map<std::array<double, 4>, double>& points,
                       const std::string& what) {
  std::array<std::set<double>, 4> values;
  for (const auto& [at, v] : points)
    for (std::size_t d = 0; d < 4; ++d) values[d].insert(at[d]);
  double cells = 1;
  for (const auto& v : values) cells *= static_cast<double>(v.size());
  if (cells <= static_cast<double>(kMaxGrid4Cells)) return;
  throw InputError(fmt::format(
      "{}: their axes span a grid of {} x {} x {} x {} = {:.0f} cells, more than {} (the largest "
      "measured table spans 57760); expected fewer distinct values per axis",
      what, values[0].size(), values[1].size(), values[2].size(), values[3].size(), cells,
      kMaxGrid4Cells));
}

sim::Grid4D fill_grid4(const std::map<std::array<double, 4>, double>& points, GridFill* fill) {
  if (points.empty()) throw std::invalid_argument("fill_grid4: no points");
  sim::Grid4D g;
  std::array<std::set<double>, 4> values;
  for (const auto& [at, v] : points)
    for (std::size_t d = 0; d < 4; ++d) values[d].insert(at[d]);
  for (std::size_t d = 0; d < 4; ++d) g.axes[d].assign(values[d].begin(), values[d].end());
  g.z.assign(g.cells(), 0);
  std::vector<char> known(g.z.size(), 0);
  for (const auto& [at, v] : points) {
    std::size_t flat = 0;
    for (std::size_t d = 0; d < 4; ++d) {
      const auto& a = g.axes[d];
      flat = flat * a.size() +
             static_cast<std::size_t>(std::lower_bound(a.begin(), a.end(), at[d]) - a.begin());
    }
    g.z[flat] = round_us(v);
    known[flat] = 1;
  }
  GridFill counts;
  counts.measured = static_cast<int64_t>(points.size());
  constexpr std::array<std::size_t, 4> kOrder = {3, 1, 0, 2};
  // Interpolate until nothing changes; only then extrapolate one round, and start over.
  while (true) {
    int64_t got = 0;
    for (const std::size_t d : kOrder) got += fill_along(g, known, d, false);
    counts.interpolated += got;
    if (got > 0) continue;
    for (const std::size_t d : kOrder) got += fill_along(g, known, d, true);
    counts.extrapolated += got;
    if (got == 0) break;
  }
  if (fill != nullptr) {
    fill->measured += counts.measured;
    fill->interpolated += counts.interpolated;
    fill->extrapolated += counts.extrapolated;
  }
  return g;
}

sim::SwapSpec assumed_pcie(double gbps, double duplex_factor, double per_copy_overhead_us) {
  sim::SwapSpec s;
  const std::vector<double> bytes = {4096, 1073741824};
  s.h2d_gbps = {bytes, {gbps, gbps}};
  s.d2h_gbps = {bytes, {gbps, gbps}};
  s.duplex_factor = duplex_factor;
  s.per_copy_overhead_us = per_copy_overhead_us;
  return s;
}

double round_us(double us) {
  return std::round(us * 1000.0) / 1000.0;
}

std::string join_numbers(const std::vector<double>& v) {
  std::string out;
  for (const double x : v) {
    if (!out.empty()) out += ", ";
    out += fmt::format("{}", x);
  }
  return out;
}

}  // namespace isim::calib
