// The optional tables of `forward.tables` that price MoE layers and ragged decode batches:
//   moe_us:        {tokens: axis, experts: axis, us: one row per tokens value}
//   moe_roofline:  {peak_tflops, hbm_gbps, compute_efficiency, memory_efficiency}
//   decode_skew:   {alpha_default, n_bins, skew_rate_bins, kv_big_bins, kp_bins,
//                   cells: [[pc, n, skew_rate, kv_big, kp, alpha], ...]}
// A cell names each binned axis by its bin's upper edge, which must be one of the bin edges
// after the first; pc is a raw chunk size. Absent tables are not written (older profiles keep
// their bytes).
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <array>
#include <iterator>
#include <set>

#include "sim/profile_reader.h"

namespace isim::sim::profile_io {

namespace {

const Names kRooflineKeys = {"peak_tflops", "hbm_gbps", "compute_efficiency", "memory_efficiency"};
const Names kSkewKeys = {"alpha_default", "n_bins",  "skew_rate_bins",
                         "kv_big_bins",   "kp_bins", "cells"};

double efficiency(const Reader& r, const MapNode& m, std::string_view key) {
  const double v = r.number(m, key, Bound::kPositive, "a fraction of the peak");
  if (v > 1)
    r.fail(*Reader::find(m, key), child(m.path, key),
           fmt::format("must be at most 1 (a fraction of the spec's peak), got {}", v));
  return v;
}

// An upper edge of `bins` (one of bins[1..]); `what` names the axis.
void check_edge(const Reader& r, const YAML::Node& at, const std::string& path,
                const std::vector<double>& bins, double v, std::string_view what) {
  for (std::size_t i = 1; i < bins.size(); ++i)
    if (bins[i] == v) return;
  std::vector<double> upper(bins.begin() + 1, bins.end());
  std::string list;
  for (const double e : upper) list += (list.empty() ? "" : ", ") + fmt::format("{}", e);
  r.fail(at, path,
         fmt::format("{} {}: expected an upper bin edge of {}_bins ({})", what, v, what, list));
}

void read_skew(const Reader& r, const MapNode& tables, DecodeSkew& s) {
  const MapNode m = r.section(tables, "decode_skew", kSkewKeys);
  const YAML::Node ad = r.need(m, "alpha_default", "a number");
  s.alpha_default = r.number(ad, child(m.path, "alpha_default"));
  s.n_bins = r.axis(m, "n_bins", Bound::kNonNegative);
  s.skew_rate_bins = r.axis(m, "skew_rate_bins", Bound::kAny);
  s.kv_big_bins = r.axis(m, "kv_big_bins", Bound::kNonNegative);
  s.kp_bins = r.axis(m, "kp_bins", Bound::kAny);
  for (const auto* b : {&s.n_bins, &s.skew_rate_bins, &s.kv_big_bins, &s.kp_bins})
    if (b->size() < 2) r.fail(m.node, m.path, "every *_bins needs at least two edges (one bin)");
  const std::string cpath = child(m.path, "cells");
  const YAML::Node cells = r.need(m, "cells", "a list of [pc, n, skew_rate, kv_big, kp, alpha]");
  if (!cells.IsSequence())
    r.fail(cells, cpath, fmt::format("expected a list of rows, got {}", kind(cells)));
  std::set<std::array<double, 5>> seen;
  std::size_t i = 0;
  for (const YAML::Node& row : cells) {
    const std::string rpath = element(cpath, i++);
    const std::vector<double> v = r.numbers(row, rpath, Bound::kAny, "a cell value");
    if (v.size() != 6)
      r.fail(
          row, rpath,
          fmt::format("expected 6 values [pc, n, skew_rate, kv_big, kp, alpha], got {}", v.size()));
    if (v[0] < 0) r.fail(row, rpath, fmt::format("pc {}: expected a chunk size >= 0", v[0]));
    check_edge(r, row, rpath, s.n_bins, v[1], "n");
    check_edge(r, row, rpath, s.skew_rate_bins, v[2], "skew_rate");
    check_edge(r, row, rpath, s.kv_big_bins, v[3], "kv_big");
    check_edge(r, row, rpath, s.kp_bins, v[4], "kp");
    if (!seen.insert({v[0], v[1], v[2], v[3], v[4]}).second)
      r.fail(row, rpath, "duplicate cell (the same pc, n, skew_rate, kv_big and kp as before)");
    s.cells.push_back({v[0], v[1], v[2], v[3], v[4], v[5]});
  }
}

std::string list(const std::vector<double>& v) {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) out += fmt::format("{}{}", i > 0 ? ", " : "", v[i]);
  return out + "]";
}

}  // namespace

void read_moe_skew(const Reader& r, const MapNode& tables, TablesForward& t) {
  if (Reader::find(tables, "moe_us"))
    t.moe_us = r.grid(tables, "moe_us", "tokens", Bound::kPositive, "experts", Bound::kPositive);
  if (Reader::find(tables, "moe_roofline")) {
    const MapNode m = r.section(tables, "moe_roofline", kRooflineKeys);
    MoeRoofline& f = t.moe_roofline;
    f.peak_tflops = r.number(m, "peak_tflops", Bound::kPositive, "a peak");
    f.hbm_gbps = r.number(m, "hbm_gbps", Bound::kPositive, "a bandwidth");
    f.compute_efficiency = efficiency(r, m, "compute_efficiency");
    f.memory_efficiency = efficiency(r, m, "memory_efficiency");
  }
  if (Reader::find(tables, "decode_skew")) read_skew(r, tables, t.decode_skew);
}

std::string write_moe_skew(const TablesForward& t, std::string_view indent) {
  std::string out;
  auto w = std::back_inserter(out);
  if (!t.moe_us.empty()) {
    const Grid2D& g = t.moe_us;
    fmt::format_to(w, "{0}moe_us:\n{0}  tokens: {1}\n{0}  experts: {2}\n{0}  us:\n", indent,
                   list(g.x), list(g.y));
    for (std::size_t i = 0; i < g.x.size(); ++i) {
      const auto begin = g.z.begin() + static_cast<std::ptrdiff_t>(i * g.y.size());
      fmt::format_to(w, "{}    - {}\n", indent,
                     list({begin, begin + static_cast<std::ptrdiff_t>(g.y.size())}));
    }
  }
  if (t.moe_roofline.given()) {
    const MoeRoofline& f = t.moe_roofline;
    fmt::format_to(w,
                   "{0}moe_roofline:\n{0}  peak_tflops: {1}\n{0}  hbm_gbps: {2}\n"
                   "{0}  compute_efficiency: {3}\n{0}  memory_efficiency: {4}\n",
                   indent, f.peak_tflops, f.hbm_gbps, f.compute_efficiency, f.memory_efficiency);
  }
  if (t.decode_skew.given()) {
    const DecodeSkew& s = t.decode_skew;
    fmt::format_to(w,
                   "{0}decode_skew:\n{0}  alpha_default: {1}\n{0}  n_bins: {2}\n"
                   "{0}  skew_rate_bins: {3}\n{0}  kv_big_bins: {4}\n{0}  kp_bins: {5}\n"
                   "{0}  cells:\n",
                   indent, s.alpha_default, list(s.n_bins), list(s.skew_rate_bins),
                   list(s.kv_big_bins), list(s.kp_bins));
    for (const DecodeSkew::Cell& c : s.cells)
      fmt::format_to(w, "{}    - {}\n", indent,
                     list({c.pc, c.n, c.skew_rate, c.kv_big, c.kp, c.alpha}));
  }
  return out;
}

}  // namespace isim::sim::profile_io
