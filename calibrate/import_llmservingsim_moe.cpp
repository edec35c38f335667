// The LLMServingSim importer's MoE table (moe.csv) and ragged-decode fit (skew_fit.csv).
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include <fmt/format.h>

#include "calibrate/import_llmservingsim_parts.h"
#include "core/input_error.h"
#include "core/strict_yaml.h"
#include "traces/limits.h"

namespace isim::calib::lss {

sim::Grid2D read_moe_csv(const std::string& file, const sim::MoeShape& moe, std::string* rule) {
  const CsvTable t = read_csv(file);
  const std::size_t ct = t.column("tokens"), ce = t.column("activated_experts"),
                    cu = t.column("time_us");
  std::map<double, std::map<double, double>> by_experts;  // experts -> tokens -> us
  std::set<double> tokens_axis, experts_axis;
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    const auto tokens = static_cast<double>(t.integer(r, ct, 1, trace::kMaxTokens));
    const auto experts = static_cast<double>(t.integer(r, ce, 1, moe.experts));
    const double us = t.number(r, cu);
    if (!(us >= 0) || !std::isfinite(us))
      throw InputError(fmt::format("{}: time_us: expected a time >= 0, got {}", t.where(r), us));
    if (!by_experts[experts].emplace(tokens, us).second)
      throw InputError(fmt::format("{}: duplicate row for tokens {} and activated_experts {}",
                                   t.where(r), tokens, experts));
    tokens_axis.insert(tokens);
    experts_axis.insert(experts);
  }
  if (t.rows.empty()) throw InputError(file + ": no rows (expected tokens, activated_experts)");
  // The profiler measures only activated_experts <= tokens x experts_per_token: a missing cell
  // (few tokens, many experts) takes the time of the same experts at the nearest measured token
  // count above (below when none is above). MoE time barely moves with tokens there (it reads
  // the experts' weights), and the cost model never reads such a cell's own point.
  sim::Grid2D g;
  g.x.assign(tokens_axis.begin(), tokens_axis.end());
  g.y.assign(experts_axis.begin(), experts_axis.end());
  int64_t measured = 0, filled = 0;
  for (const double tokens : g.x) {
    for (const double experts : g.y) {
      const std::map<double, double>& col = by_experts[experts];
      auto it = col.lower_bound(tokens);
      if (it != col.end() && it->first == tokens) {
        ++measured;
      } else {
        ++filled;
        if (it == col.end()) --it;
      }
      g.z.push_back(round_us(it->second));
    }
  }
  *rule = fmt::format(
      "moe.csv: one MoE layer (router and routed experts, Qwen3MoeSparseMoeBlock as LLMServingSim "
      "hooks it) by (tokens, activated_experts) as a grid; {} cells measured, {} filled (a count "
      "of experts more than those tokens can activate) with the same experts' time at the nearest "
      "measured token count above; the cost model reads it at the expected distinct experts "
      "E(1 - (1 - k/E)^T) of T tokens, E = {}, k = {}, assuming uniform routing",
      measured, filled, moe.experts, moe.experts_per_token);
  return g;
}

namespace {

// meta.yaml's skew_fit.bucket_axes.<axis>_bins and <axis>_labels: label -> the bin's upper edge.
std::map<std::string, double> bucket_axis(const YAML::Node& axes, const std::string& file,
                                          const std::string& axis, std::vector<double>* bins) {
  const std::string bpath = "skew_fit.bucket_axes." + axis + "_bins";
  const std::string lpath = "skew_fit.bucket_axes." + axis + "_labels";
  const YAML::Node b = axes[axis + "_bins"], l = axes[axis + "_labels"];
  if (!b || !b.IsSequence() || b.size() < 2)
    throw InputError(yaml_where(file, b ? b : axes, bpath) +
                     ": expected a list of at least two bin edges");
  if (!l || !l.IsSequence() || l.size() != b.size() - 1)
    throw InputError(yaml_where(file, l ? l : axes, lpath) +
                     fmt::format(": expected {} labels (one per bin of {})", b.size() - 1, bpath));
  std::map<std::string, double> out;
  for (std::size_t i = 0; i < b.size(); ++i) {
    bins->push_back(read_as<double>(b[i], file, bpath, "a number"));
    if (i > 0 && !(bins->back() > (*bins)[i - 1]))
      throw InputError(yaml_where(file, b[i], bpath) + ": bin edges must be strictly increasing");
    if (i > 0) out[read_as<std::string>(l[i - 1], file, lpath, "a label")] = bins->back();
  }
  return out;
}

double label_edge(const CsvTable& t, std::size_t r, std::size_t c,
                  const std::map<std::string, double>& labels) {
  const auto it = labels.find(t.text(r, c));
  if (it != labels.end()) return it->second;
  std::string list;
  for (const auto& [label, edge] : labels) list += (list.empty() ? "" : ", ") + label;
  throw InputError(fmt::format("{}: {}: unknown label '{}' (meta.yaml bucket_axes: {})", t.where(r),
                               t.header[c], t.text(r, c), list));
}

}  // namespace

sim::DecodeSkew read_skew_fit(const std::string& csv, const YAML::Node& meta,
                              const std::string& meta_file, int tp, std::string* rule) {
  const YAML::Node fit = meta["skew_fit"];
  if (!fit || !fit.IsMap())
    throw InputError(yaml_where(meta_file, fit ? fit : meta, "skew_fit") +
                     ": missing (skew_fit.csv needs its bucket axes and alpha_default)");
  const YAML::Node axes = fit["bucket_axes"];
  if (!axes || !axes.IsMap())
    throw InputError(yaml_where(meta_file, axes ? axes : fit, "skew_fit.bucket_axes") +
                     ": expected a map of *_bins and *_labels");
  const YAML::Node per_tp = fit["per_tp"];
  const YAML::Node entry = per_tp && per_tp.IsMap() ? per_tp[std::to_string(tp)] : YAML::Node();
  const std::string epath = fmt::format("skew_fit.per_tp.{}.alpha_default", tp);
  if (!entry || !entry.IsMap() || !entry["alpha_default"])
    throw InputError(yaml_where(meta_file, fit, epath) +
                     fmt::format(": missing (no fitted alpha for tp {})", tp));
  sim::DecodeSkew s;
  s.alpha_default = read_as<double>(entry["alpha_default"], meta_file, epath, "a number");
  const auto n = bucket_axis(axes, meta_file, "n", &s.n_bins);
  const auto sr = bucket_axis(axes, meta_file, "skew_rate", &s.skew_rate_bins);
  const auto kvb = bucket_axis(axes, meta_file, "kv_big", &s.kv_big_bins);
  const auto kp = bucket_axis(axes, meta_file, "kp", &s.kp_bins);

  const CsvTable t = read_csv(csv);
  const std::size_t cpc = t.column("pc"), cn = t.column("n_label"),
                    csr = t.column("skew_rate_label"), ckv = t.column("kv_big_label"),
                    ckp = t.column("kp_label"), ca = t.column("alpha");
  std::set<std::vector<double>> seen;
  // A ragged batch cannot take longer than every decode at the largest KV (alpha <= 1), and
  // it is no more than a little faster than all at the mean; the published cells are fits of
  // at most 8 rows, and some reach -735. alpha is clipped to [kAlphaLow, 1].
  constexpr double kAlphaLow = -0.2;
  int64_t wild = 0;  // cells clipped
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    sim::DecodeSkew::Cell c;
    c.pc = static_cast<double>(t.integer(r, cpc, 0, trace::kMaxTokens));
    c.n = label_edge(t, r, cn, n);
    c.skew_rate = label_edge(t, r, csr, sr);
    c.kv_big = label_edge(t, r, ckv, kvb);
    c.kp = label_edge(t, r, ckp, kp);
    c.alpha = t.number(r, ca);
    if (!std::isfinite(c.alpha))
      throw InputError(
          fmt::format("{}: alpha: expected a finite number, got {}", t.where(r), c.alpha));
    if (c.alpha < kAlphaLow || c.alpha > 1) {
      ++wild;
      c.alpha = std::clamp(c.alpha, kAlphaLow, 1.0);
    }
    if (!seen.insert({c.pc, c.n, c.skew_rate, c.kv_big, c.kp}).second)
      throw InputError(t.where(r) +
                       ": duplicate bucket (the same pc and labels as an earlier row)");
    s.cells.push_back(c);
  }
  *rule = fmt::format(
      "skew_fit.csv ({} cells) with meta.yaml skew_fit.bucket_axes and per_tp.{}.alpha_default "
      "{}: decode attention over decodes of unequal KV is t_mean + alpha (t_max - t_mean), t_mean "
      "at the mean KV and t_max with every decode at the largest; alpha by (pc: the batch's "
      "prefill chunk, raw; n; skew rate (mean - min) / (max - min) KV; largest KV; kp: the "
      "chunk's cached KV), else alpha_default (a chunk off the profiled pc grid always reads it); "
      "{} cells outside [{}, 1] clipped to it (fits of at most a few rows; a ragged batch is "
      "not slower than all its decodes at the largest KV); the corrected time is clamped at 0",
      s.cells.size(), tp, s.alpha_default, wild, kAlphaLow);
  return s;
}

}  // namespace isim::calib::lss
