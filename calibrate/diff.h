// Profile diff: compares two profiles of the same model shape point by point, for the CI
// regression check (`isim profile diff BASE NEW --max-regression 5%`).
//
// Contract:
// - Both profiles must have the same forward form and the same model shape (every field but the
//   name); otherwise InputError naming the difference.
// - Compared entries: in `tables` form, every grid point present in both profiles of dense_us,
//   decode_attention_us, prefill_attention_us, lm_head_us (exact axis values; 2-D points need
//   both coordinates shared), plus overhead_us; in `linear` form base_ms and slope_ms_per_token;
//   in both, every shared byte size of the h2d and d2h curves and duplex_factor. A copy's
//   bandwidth is compared as the cost model prices one copy of that size: bytes /
//   (per_copy_overhead + bytes / gbps(bytes)), so a per-copy cost moved between the overhead
//   and the curve is no change. Optional terms where both profiles have them: the shared cells
//   of mixed_attention_us and points of allreduce_us and moe_us (moe_roofline and decode_skew
//   are not times, and are not compared); step_overhead's three terms and
//   swap.compute_slowdown (as 1 + s) where either has them.
// - `slowdown` is the relative change in time: new/base - 1 for times, base/new - 1 for
//   bandwidths and the duplex factor (lower bandwidth is a regression). Positive means slower.
//   A base time of 0 gives 0 when the new one is 0 too, and +inf otherwise.
// - Tables that share no grid point at all are an InputError (nothing to compare).
// - Entries are sorted worst first (largest slowdown), ties by table then point.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "sim/profile.h"

namespace isim::calib {

struct DiffEntry {
  std::string table;  // "dense_us", "swap.h2d_gbps", "linear.base_ms", ...
  std::string point;  // "tokens=512", "sequences=8 kv_tokens=4096", "bytes=1048576", or ""
  double base = 0;
  double next = 0;
  bool bandwidth = false;  // higher is better
  double slowdown = 0;     // relative time change; > 0 is slower
};

struct DiffReport {
  std::vector<DiffEntry> entries;              // worst first
  size_t regressions(double threshold) const;  // entries with slowdown > threshold
};

DiffReport diff_profiles(const sim::Profile& base, const sim::Profile& next);

// "5%" -> 0.05. InputError unless a non-negative number followed by '%'.
double parse_percent(const std::string& text, const std::string& what);

// The report: a summary line, then up to `rows` entries worst first (0: all), one per line with
// table, point, base, new and change in percent.
std::string format_diff(const DiffReport& r, double threshold, size_t rows,
                        const std::string& base_name, const std::string& next_name);

}  // namespace isim::calib
