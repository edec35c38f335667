// The end of `isim sweep`: its per-policy table and the goodput plot (sweep_report.h).
#include "experiments/sweep/sweep_report.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "experiments/run/run_script.h"
#include "sim/profile.h"

namespace isim::exp {

namespace {

// Column index by name (npos when absent).
size_t column(const std::vector<std::string>& header, const std::string& name) {
  const auto it = std::find(header.begin(), header.end(), name);
  return it == header.end() ? std::string::npos : static_cast<size_t>(it - header.begin());
}

const std::string& field(const std::vector<std::string>& row, size_t c) {
  static const std::string none;
  return c < row.size() ? row[c] : none;
}

// A number cell with `decimals` (x `scale`), or "-" when results.csv left it empty.
std::string number(const std::string& text, int decimals, double scale = 1) {
  if (text.empty()) return "-";
  return fmt::format("{:.{}f}", std::stod(text) * scale, decimals);
}

}  // namespace

bool has_goodput(const SweepResults& res) {
  const size_t c = column(res.header, "goodput.share");
  for (const auto& row : res.rows)
    if (!field(row, c).empty()) return true;
  return false;
}

std::string sweep_table(const SweepResults& res) {
  if (res.rows.empty()) return "";
  const auto& h = res.header;
  const size_t c_policy = column(h, "policy"), c_est = column(h, "estimator");
  const size_t c_norm = column(h, "normalized_latency_s.p99");
  const size_t c_share = column(h, "goodput.share"), c_good = column(h, "goodput.per_s");
  const size_t c_tput = column(h, "throughput_sessions_per_s");
  const size_t c_over = column(h, "overloaded");
  // The swept columns lie between policy and estimator.
  std::vector<size_t> swept;
  for (size_t c = c_policy + 1; c < c_est; ++c) swept.push_back(c);
  const bool slo = has_goodput(res);

  std::vector<std::vector<std::string>> cells;
  std::vector<std::string> head = {"policy"};
  for (size_t c : swept) head.push_back(h[c]);
  head.emplace_back("norm.p99");
  if (slo) {
    head.emplace_back("slo.met%");
    head.emplace_back("goodput/s");
  }
  head.emplace_back("sess/s");
  head.emplace_back("overloaded");
  cells.push_back(head);
  for (const auto& row : res.rows) {
    std::string policy = field(row, c_policy);
    if (!field(row, c_est).empty()) policy += " (" + field(row, c_est) + ")";
    std::vector<std::string> line = {policy};
    for (size_t c : swept) line.push_back(field(row, c));
    line.push_back(number(field(row, c_norm), 4));
    if (slo) {
      line.push_back(number(field(row, c_share), 1, 100));
      line.push_back(number(field(row, c_good), 3));
    }
    line.push_back(number(field(row, c_tput), 3));
    line.push_back(field(row, c_over) == "1" ? "yes" : "");
    cells.push_back(std::move(line));
  }
  std::vector<size_t> width(head.size(), 0);
  for (const auto& line : cells)
    for (size_t i = 0; i < line.size(); ++i) width[i] = std::max(width[i], line[i].size());
  std::string out;
  for (const auto& line : cells) {
    std::string text;
    for (size_t i = 0; i < line.size(); ++i) {
      if (i == 0) {
        text += fmt::format("{:<{}}", line[i], width[i]);
      } else {
        text += fmt::format("  {:>{}}", line[i], width[i]);
      }
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out += text + "\n";
  }
  return out;
}

std::string plot_context(const Experiment& e) {
  const sim::Profile p = sim::load_profile(e.profile);
  std::string gpu = p.device.name.empty() ? "unknown GPU" : p.device.name;
  std::string model = p.model.name.empty() ? "unknown model" : p.model.name;
  return fmt::format("{} · {} · workload {} ({} trace)", gpu, model, e.name, e.trace.from);
}

std::string goodput_script_path() {
  if (const char* p = std::getenv("ISIM_PLOT_GOODPUT_SCRIPT"); p && *p) return p;
  return ISIM_PLOT_GOODPUT_SCRIPT_DEFAULT;
}

int run_goodput_plot(const std::string& python, const std::string& csv, const std::string& png,
                     const std::string& context) {
  return run_script({python, goodput_script_path(), csv, png, "--context", context},
                    /*quiet_stdout=*/true, /*quiet_stderr=*/false);
}

}  // namespace isim::exp
