// The profile's `forward:` section: the linear form, or the tables form with its optional mixed
// attention grid and all-reduce curve.
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>
#include <span>
#include <vector>

#include "sim/profile_consistency.h"
#include "sim/profile_reader.h"

namespace isim::sim::profile_io {
namespace {

const Names kForwardKeys = {"linear", "tables"};
const Names kLinearKeys = {"base_ms", "slope_ms_per_token"};
const Names kTablesKeys = {"dense_us",           "decode_attention_us", "prefill_attention_us",
                           "lm_head_us",         "overhead_us",         "prefill_interpolation",
                           "mixed_attention_us", "allreduce_us",        "moe_us",
                           "moe_roofline",       "decode_skew"};
const Names kMixedKeys = {"chunk", "kv_prefill", "decodes", "kv_per_decode", "us"};

// {chunk, kv_prefill, decodes, kv_per_decode: axes; us: one row per (chunk, kv_prefill,
// decodes), chunk slowest, each row one value per kv_per_decode}.
Grid4D mixed_grid(const Reader& r, const MapNode& parent) {
  const std::string expected = fmt::format("a table with {}", join(kMixedKeys));
  const MapNode t = r.map(*Reader::find(parent, "mixed_attention_us"),
                          child(parent.path, "mixed_attention_us"), expected);
  r.only(t, kMixedKeys);
  Grid4D g;
  g.axes[0] = r.axis(t, "chunk", Bound::kPositive);
  g.axes[1] = r.axis(t, "kv_prefill", Bound::kNonNegative);
  g.axes[2] = r.axis(t, "decodes", Bound::kPositive);
  g.axes[3] = r.axis(t, "kv_per_decode", Bound::kNonNegative);
  const std::size_t rows_expected = g.axes[0].size() * g.axes[1].size() * g.axes[2].size();
  const std::string zpath = child(t.path, "us");
  const YAML::Node rows = r.need(t, "us", "a list of rows, one per (chunk, kv_prefill, decodes)");
  if (!rows.IsSequence()) {
    r.fail(rows, zpath, fmt::format("expected a list of rows, got {}", kind(rows)));
  }
  if (rows.size() != rows_expected) {
    r.fail(rows, zpath,
           fmt::format("expected {} rows (one per chunk x kv_prefill x decodes = {} x {} x {}), "
                       "got {}",
                       rows_expected, g.axes[0].size(), g.axes[1].size(), g.axes[2].size(),
                       rows.size()));
  }
  std::size_t i = 0;
  for (const YAML::Node& row : rows) {
    const std::string rpath = element(zpath, i++);
    const std::vector<double> v = r.numbers(row, rpath, Bound::kNonNegative, "a time");
    if (v.size() != g.axes[3].size()) {
      r.fail(row, rpath,
             fmt::format("expected {} values (one per kv_per_decode value), got {}",
                         g.axes[3].size(), v.size()));
    }
    g.z.insert(g.z.end(), v.begin(), v.end());
  }
  return g;
}

// A time table must rise with tokens (sim/profile_consistency.h); the message names the row
// (`us[i]`, a row along the y axis at x[i]) or the column (`us` at y[j], along the x axis).
void check_rising(const Reader& r, const MapNode& m, std::string_view key, std::string_view axis,
                  const Curve1D& c) {
  const std::string why = rising_problem(c.x, c.y, axis);
  if (why.empty()) return;
  const YAML::Node t = *Reader::find(m, key);
  r.fail(t["us"], child(child(m.path, key), "us"), why);
}

void check_rising(const Reader& r, const MapNode& m, std::string_view key, const Grid2D& g,
                  std::string_view xaxis, std::string_view yaxis, bool rows, bool columns) {
  const YAML::Node us = (*Reader::find(m, key))["us"];
  const std::string path = child(child(m.path, key), "us");
  const std::size_t nx = g.x.size(), ny = g.y.size();
  for (std::size_t i = 0; rows && i < nx; ++i) {
    const std::span<const double> row(g.z.data() + i * ny, ny);
    const std::string why = rising_problem(g.y, row, yaxis);
    if (!why.empty())
      r.fail(us[i], element(path, i), fmt::format("at {} {}: {}", xaxis, g.x[i], why));
  }
  std::vector<double> column(nx);
  for (std::size_t j = 0; columns && j < ny; ++j) {
    for (std::size_t i = 0; i < nx; ++i) column[i] = g.z[i * ny + j];
    const std::string why = rising_problem(g.x, column, xaxis);
    if (!why.empty()) r.fail(us, path, fmt::format("at {} {}: {}", yaxis, g.y[j], why));
  }
}

void check_tables_rise(const Reader& r, const MapNode& m, const TablesForward& t) {
  check_rising(r, m, "dense_us", "tokens", t.dense_us);
  check_rising(r, m, "lm_head_us", "sequences", t.lm_head_us);
  if (!t.allreduce_us.empty()) check_rising(r, m, "allreduce_us", "bytes", t.allreduce_us);
  // Not decode attention: the same KV over more sequences may run faster, and a measured decode
  // of one sequence gets faster past a split-KV switch (sim/profile_consistency.h).
  check_rising(r, m, "prefill_attention_us", t.prefill_attention_us, "chunk", "kv_tokens", true,
               true);
  if (!t.moe_us.empty()) check_rising(r, m, "moe_us", t.moe_us, "tokens", "experts", false, true);
}

void read_tables(const Reader& r, const MapNode& f, Profile& p) {
  const MapNode m = r.section(f, "tables", kTablesKeys);
  TablesForward& t = p.tables;
  t.dense_us =
      r.curve(m, "dense_us", "tokens", Bound::kPositive, "us", Bound::kNonNegative, "a time");
  t.decode_attention_us = r.grid(m, "decode_attention_us", "sequences", Bound::kPositive,
                                 "kv_tokens", Bound::kNonNegative);
  t.prefill_attention_us = r.grid(m, "prefill_attention_us", "chunk", Bound::kPositive, "kv_tokens",
                                  Bound::kNonNegative);
  t.lm_head_us =
      r.curve(m, "lm_head_us", "sequences", Bound::kPositive, "us", Bound::kNonNegative, "a time");
  t.overhead_us = r.number(m, "overhead_us", Bound::kNonNegative, "a time");
  if (const auto v = Reader::find(m, "prefill_interpolation")) {
    const std::string path = m.path + ".prefill_interpolation";
    t.prefill_interpolation = r.text(*v, path);
    if (t.prefill_interpolation != "time" && t.prefill_interpolation != "per_pair")
      r.fail(*v, path, fmt::format("'{}': expected time or per_pair", t.prefill_interpolation));
  }
  if (Reader::find(m, "mixed_attention_us")) t.mixed_attention_us = mixed_grid(r, m);
  if (const auto v = Reader::find(m, "allreduce_us")) {
    if (p.model.tp == 1) {
      r.fail(*v, m.path + ".allreduce_us",
             "given for model.tp 1 (a single GPU runs no all-reduce; remove it or set model.tp)");
    }
    t.allreduce_us =
        r.curve(m, "allreduce_us", "bytes", Bound::kPositive, "us", Bound::kNonNegative, "a time");
  }
  read_moe_skew(r, m, t);
  check_tables_rise(r, m, t);
  if (p.model.moe.given() && t.moe_us.empty() && !t.moe_roofline.given())
    r.fail(
        m.node, m.path,
        fmt::format("model has {} experts: expected moe_us (measured) or moe_roofline (analytic) "
                    "to price its MoE layers",
                    p.model.moe.experts));
}

}  // namespace

void read_forward(const Reader& r, const MapNode& top, Profile& p) {
  const MapNode f = r.section(top, "forward", kForwardKeys);
  const auto linear = Reader::find(f, "linear");
  const auto tables = Reader::find(f, "tables");
  if (linear.has_value() == tables.has_value()) {
    r.fail(
        f.node, "forward",
        fmt::format("expected exactly one of linear, tables, got {}", linear ? "both" : "neither"));
  }
  if (linear) {
    p.form = ForwardForm::kLinear;
    const MapNode m = r.section(f, "linear", kLinearKeys);
    p.linear.base_ms = r.number(m, "base_ms", Bound::kNonNegative, "a time");
    p.linear.slope_ms_per_token = r.number(m, "slope_ms_per_token", Bound::kNonNegative, "a time");
    return;
  }
  p.form = ForwardForm::kTables;
  read_tables(r, f, p);
}

}  // namespace isim::sim::profile_io
