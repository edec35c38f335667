// isim profile show P --plot OUT.png: the summary, then T(x) against batched tokens (saturation
// marked), the decode attention cost by context for a few batch sizes, and the copy bandwidth
// curves by copy size (PCIe, or host memcpy for the CPU backend) as the cost model uses them,
// drawn by experiments/plots/plot_profile.py.
#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "core/input_error.h"
#include "core/out_path.h"
#include "experiments/cli/cli.h"
#include "experiments/run/run_script.h"
#include "experiments/sweep/sweep.h"
#include "sim/cost_model.h"
#include "sim/profile.h"

namespace isim::exp {

namespace {

std::string profile_plot_script() {
  if (const char* p = std::getenv("ISIM_PLOT_PROFILE_SCRIPT"); p && *p) return p;
  return ISIM_PLOT_PROFILE_SCRIPT_DEFAULT;
}

// `n` points from lo to hi, evenly spaced on a log scale, as integers (deduplicated).
std::vector<double> log_points(double lo, double hi, int n) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i) {
    const double x = std::round(lo * std::pow(hi / lo, static_cast<double>(i) / (n - 1)));
    if (v.empty() || x > v.back()) v.push_back(x);
  }
  return v;
}

// Decode attention, all layers, in ms, by the batch's total KV tokens, for up to 5 of the
// table's batch sizes (its grid rows, spread over the axis); null for a linear profile.
nlohmann::json decode_data(const sim::Profile& p) {
  if (p.form != sim::ForwardForm::kTables) return nullptr;
  const sim::Grid2D& g = p.tables.decode_attention_us;
  nlohmann::json lines = nlohmann::json::array();
  const size_t n = g.x.size(), shown = std::min<size_t>(n, 5);
  for (size_t k = 0; k < shown; ++k) {
    const double seqs = g.x[shown == 1 ? 0 : k * (n - 1) / (shown - 1)];
    std::vector<double> kv = log_points(std::max(1.0, g.y.front()), g.y.back(), 40), ms;
    for (double t : kv) ms.push_back(static_cast<double>(p.model.layers) * g.eval(seqs, t) / 1e3);
    lines.push_back({{"sequences", seqs}, {"kv_tokens", kv}, {"ms", ms}});
  }
  return lines;
}

nlohmann::json plot_data(const sim::Profile& p) {
  const sim::CostModel cm(p);
  const double s = static_cast<double>(p.saturation_tokens);
  const double hi =
      p.form == sim::ForwardForm::kTables ? std::max(p.tables.dense_us.x.back(), 2 * s) : 4 * s;
  std::vector<double> tokens = log_points(1, hi, 80);
  tokens.push_back(s);
  std::sort(tokens.begin(), tokens.end());
  tokens.erase(std::unique(tokens.begin(), tokens.end()), tokens.end());
  std::vector<double> t_ms;
  for (double x : tokens) t_ms.push_back(static_cast<double>(cm.T(static_cast<int64_t>(x))) / 1e6);

  nlohmann::json j;
  j["title"] = fmt::format("{} on {} (tp {}), source: {}", p.model.name, p.device.name, p.model.tp,
                           p.provenance_value("source"));
  j["copy_path"] = sim::copy_path_name(p);
  j["tokens"] = tokens;
  j["t_ms"] = t_ms;
  j["saturation_tokens"] = s;
  j["t_saturation_ms"] = static_cast<double>(cm.T(p.saturation_tokens)) / 1e6;
  // Bandwidth as CostModel::transfer uses it (clamped to the slowest measured point).
  const auto curve = [&](const sim::Curve1D& c, sim::Direction dir) {
    nlohmann::json out;
    const std::vector<double> x = log_points(c.x.front(), c.x.back(), 60);
    std::vector<double> y;
    for (double b : x) y.push_back(cm.copy_bandwidth(b, dir).gbps);
    out["bytes"] = x;
    out["gbps"] = y;
    out["grid_bytes"] = c.x;
    out["grid_gbps"] = c.y;
    return out;
  };
  j["h2d"] = curve(p.swap.h2d_gbps, sim::Direction::kHostToDevice);
  j["d2h"] = curve(p.swap.d2h_gbps, sim::Direction::kDeviceToHost);
  j["decode"] = decode_data(p);
  j["duplex_factor"] = p.swap.duplex_factor;
  return j;
}

}  // namespace

int cmd_profile_plot(const std::string& profile_path, const std::string& png) {
  check_out_file(png, "--plot");  // before the work: a bad destination used to end in a traceback
  const sim::Profile p = sim::load_profile(profile_path);
  std::cout << sim::describe_profile(p);
  std::string tried;
  const std::string py = find_plot_python(&tried);
  if (py.empty())
    throw InputError(
        fmt::format("--plot: no python3 with matplotlib (tried {}; install Debian's "
                    "python3-matplotlib or set ISIM_PYTHON)",
                    tried));
  namespace fs = std::filesystem;
  const fs::path data = fs::temp_directory_path() /
                        fmt::format("isim-profile-plot-{}.json", static_cast<long>(getpid()));
  {
    std::ofstream f(data);
    if (!f) throw InputError(fmt::format("{}: cannot write the plot data", data.string()));
    f << plot_data(p).dump();
  }
  const int rc = run_script({py, profile_plot_script(), data.string(), png}, /*quiet_stdout=*/true,
                            /*quiet_stderr=*/false);
  std::error_code ec;
  fs::remove(data, ec);
  if (rc != 0)
    throw InputError(fmt::format("{}: {} {} failed (exit {})", png, py, profile_plot_script(), rc));
  fmt::print("plot: {}\n", png);
  return 0;
}

}  // namespace isim::exp
