// Shared pieces of the profile importers (calibrate/import_llmservingsim, import_aiconfigurator):
// a strict CSV reader, the knee rule for saturation_tokens, the decode-grid rectangle builder,
// and the assumed PCIe swap curve.
//
// Contract:
// - `read_csv` reads a header line and comma-separated rows (no quoting; every row must have the
//   header's column count; a UTF-8 byte-order mark before the header is skipped). A missing
//   file, a missing column or a cell that is not a number throws InputError: "FILE: cannot
//   open", "FILE: column: missing (columns: ...)", "FILE:LINE: column: expected a number, got
//   '...'".
// - `knee_tokens(dense)`: the saturation knee of a time-by-tokens curve. The marginal cost of
//   the tokens added by doubling x is m(x) = (T(2x) - T(x)) / x (T interpolated piecewise
//   linearly). It is read on the octave ladder x_max / 2, x_max / 4, ... (down to x_min), so
//   that one noisy grid point cannot move the knee. The reference is m(x_max / 2), the doubling
//   that ends at the largest measured size. The knee is the smallest ladder point x such that
//   m stays within `tolerance` (relative) of the reference at x and at every ladder point above
//   it. For T = max(c, a*x) with knee k = c/a a ladder point x passes exactly when
//   x >= k / (1 + tolerance), so the rule returns the smallest ladder point >= 0.87 k (15%).
//   Needs at least two points with x_max >= 2 x_min; else std::invalid_argument.
// - `decode_grid`: per-sequence decode measurements (for each sequence count n, time by KV tokens
//   per sequence) become the profile's rectangle over (sequences, TOTAL KV tokens). The total
//   axis is the set of every measured n * kv. Cell (n, T) is row n evaluated at T / n: exact when
//   measured, piecewise-linear inside the row's measured range, and linearly extrapolated from
//   the row's two nearest points outside it. `fill` counts the three kinds.
// - `fill_grid4`: scattered 4-D measurements become a full Grid4D whose axes are the union of
//   the measured values on each axis. Missing cells are filled by 1-D linear interpolation along
//   one axis between the nearest two cells known before that step, in the axis order 3, 1, 0, 2
//   (for the mixed attention grid: kv per decode, kv_prefill, chunk, decodes), repeated until
//   nothing changes. Only then, one round along the same order extrapolates the cells beyond a
//   line's known ones linearly from its two nearest known cells (one known cell: copied),
//   clamped at 0, and interpolation starts over; until no cell is missing. `fill` counts the
//   three kinds.
// - Table values are rounded to 1 ns (`round_us`).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sim/interp.h"
#include "sim/profile.h"

namespace isim::calib {

struct CsvTable {
  std::string path;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::vector<int> lines;  // 1-based file line of each row

  // Index of a column; throws InputError("PATH: NAME: missing (columns: ...)").
  std::size_t column(const std::string& name) const;
  const std::string& text(std::size_t row, std::size_t col) const { return rows[row][col]; }
  // Cell as a number; throws InputError("PATH:LINE: NAME: expected a number, got '...'").
  double number(std::size_t row, std::size_t col) const;
  // Cell as an integer in [lo, hi] (a count, a shape, a token length: "16" or "16.0");
  // InputError("PATH:LINE: NAME: expected an integer from LO to HI, got '...'") otherwise, so no
  // cast of a cell to an integer type can overflow.
  int64_t integer(std::size_t row, std::size_t col, int64_t lo, int64_t hi) const;
  // "PATH:LINE" of a row, for messages.
  std::string where(std::size_t row) const;
};

CsvTable read_csv(const std::string& path);

struct GridFill {
  int64_t measured = 0;
  int64_t interpolated = 0;
  int64_t extrapolated = 0;
  std::string text() const;  // "N measured, N interpolated, N extrapolated"
};

int64_t knee_tokens(const sim::Curve1D& dense, double tolerance = 0.15);
// knee_tokens for an importer: a curve it cannot use throws InputError("ORIGIN: reason").
int64_t saturation_from_dense(const sim::Curve1D& dense, const std::string& origin);

// rows: sequence count -> (time by KV tokens per sequence).
sim::Grid2D decode_grid(const std::map<int64_t, sim::Curve1D>& rows, GridFill* fill);

// points: (axis 0, 1, 2, 3) -> value; at least one point.
sim::Grid4D fill_grid4(const std::map<std::array<double, 4>, double>& points, GridFill* fill);
// The most cells fill_grid4 may build: the largest measured table (LLMServingSim's RTX PRO 6000
// mixed attention) spans 57,760. InputError("WHAT: ... N cells, more than ...") for points whose
// axes span more, before any memory is taken: a few hundred scattered rows could otherwise ask
// for terabytes.
inline constexpr int64_t kMaxGrid4Cells = 2'000'000;
void check_grid4_cells(const std::map<std::array<double, 4>, double>& points,
                       const std::string& what);

// Evaluates a curve at x and classifies the point for `fill`.
double eval_counted(const sim::Curve1D& c, double x, GridFill* fill);

// Flat bandwidth curve (4 KiB .. 1 GiB) in both directions.
sim::SwapSpec assumed_pcie(double gbps, double duplex_factor, double per_copy_overhead_us);

double round_us(double us);

// "1, 2, 4" for messages.
std::string join_numbers(const std::vector<double>& v);

}  // namespace isim::calib
