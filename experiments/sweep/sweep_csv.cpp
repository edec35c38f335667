// results.csv as text (sweep.h): its rows, joining the shards' files, and the sweep's plot
// script. Quoting and reading CSV is core/csv.h.
#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/input_error.h"
#include "core/input_file.h"
#include "experiments/run/run_script.h"
#include "experiments/spec/sweep_variants.h"
#include "experiments/sweep/sweep.h"

namespace isim::exp {

namespace {

std::string slurp(const std::string& path) {
  return read_input_file(path, "a results CSV", kMaxWholeDataBytes);
}

}  // namespace

std::vector<std::string> results_row(const std::vector<std::string>& header, const RunRecord& r) {
  std::vector<std::string> row = {std::to_string(r.index), r.policy};
  row.insert(row.end(), r.point.begin(), r.point.end());
  row.push_back(r.estimator);
  // Metrics go under their header's columns: a run that is not disaggregated, or uses no
  // tiers, leaves the cluster.disagg.* or cluster.kv_tiers.* columns empty.
  const size_t fixed = row.size();
  row.resize(std::max(header.size(), fixed));
  std::map<std::string, const std::string*> metrics;
  for (const auto& [k, v] : r.metrics) metrics.emplace(k, &v);
  for (size_t c = fixed; c < header.size(); ++c)
    if (auto it = metrics.find(header[c]); it != metrics.end()) row[c] = *it->second;
  return row;
}

std::string merge_results(const std::vector<std::string>& paths, std::vector<size_t>* missing) {
  if (paths.empty()) throw InputError("sweep merge: no input files");
  std::vector<std::string> header;
  std::string header_from;
  // run index -> (file, line, fields)
  struct Row {
    std::string file;
    size_t line;
    std::vector<std::string> fields;
  };
  std::map<size_t, Row> rows;
  for (const auto& p : paths) {
    auto recs = read_csv(slurp(p), p);
    if (recs.empty() || recs.front().fields.empty() || recs.front().fields[0] != "run_index")
      throw InputError(p + ":1: expected a results.csv header starting with run_index");
    if (header_from.empty()) {
      header = recs.front().fields;
      header_from = p;
    } else if (recs.front().fields != header) {
      const auto& h = recs.front().fields;
      size_t c = 0;
      while (c < h.size() && c < header.size() && h[c] == header[c]) ++c;
      std::string mine = c < h.size() ? "'" + h[c] + "'" : std::string("(none)");
      std::string theirs = c < header.size() ? "'" + header[c] + "'" : std::string("(none)");
      throw InputError(fmt::format(
          "{}:1: header differs from {}'s at column {}: {} vs {} (shards of one sweep have "
          "identical headers)",
          p, header_from, c + 1, mine, theirs));
    }
    for (size_t r = 1; r < recs.size(); ++r) {
      auto& rec = recs[r];
      if (rec.fields.size() != header.size())
        throw InputError(fmt::format("{}:{}: expected {} fields, found {}", p, rec.line,
                                     header.size(), rec.fields.size()));
      const auto& ix = rec.fields[0];
      if (ix.empty() || ix.size() > 18 || ix.find_first_not_of("0123456789") != std::string::npos)
        throw InputError(fmt::format("{}:{}: run_index: expected a non-negative integer, got '{}'",
                                     p, rec.line, ix));
      size_t index = std::stoull(ix);
      // A sweep has at most kMaxSweepRuns runs (found by tests/fuzz: run_index 999999999999999999
      // made the list of missing indices take all memory).
      if (index >= kMaxSweepRuns)
        throw InputError(fmt::format("{}:{}: run_index {}: a sweep has at most {} runs (0..{})", p,
                                     rec.line, index, kMaxSweepRuns, kMaxSweepRuns - 1));
      auto [it, fresh] = rows.try_emplace(index, Row{p, rec.line, std::move(rec.fields)});
      if (!fresh)
        throw InputError(fmt::format("{}:{}: run_index {} is also at {}:{}", p, rec.line, index,
                                     it->second.file, it->second.line));
    }
  }
  if (missing) {
    missing->clear();
    size_t expect = 0;
    for (const auto& [index, row] : rows) {
      for (; expect < index; ++expect) missing->push_back(expect);
      expect = index + 1;
    }
  }
  std::string out = join_csv(header);
  for (const auto& [index, row] : rows) out += join_csv(row.fields);
  return out;
}

std::string plot_script_path() {
  if (const char* p = std::getenv("ISIM_PLOT_SCRIPT"); p && *p) return p;
  return ISIM_PLOT_SCRIPT_DEFAULT;
}

int run_plot(const std::string& python, const std::string& csv, const std::string& outdir,
             const PlotSpec& plot) {
  std::vector<std::string> args = {python, plot_script_path(), csv, outdir};
  if (plot.latency_target_s > 0) {
    args.emplace_back("--latency-target");
    args.push_back(fmt::format("{}", plot.latency_target_s));
  }
  if (plot.has_waste_rate) {
    args.emplace_back("--waste-rate");
    args.push_back(fmt::format("{}", plot.waste_rate));
  }
  return run_script(args, /*quiet_stdout=*/true, /*quiet_stderr=*/false);  // isim names the PNGs
}

}  // namespace isim::exp
