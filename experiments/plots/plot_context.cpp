#include "experiments/plots/plot_context.h"

#include <algorithm>
#include <filesystem>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "sim/profile.h"

namespace isim::exp {

namespace {

void add_once(std::vector<std::string>& v, const std::string& s) {
  if (!s.empty() && std::find(v.begin(), v.end(), s) == v.end()) v.push_back(s);
}

std::string span(std::vector<double> v, const std::string& prefix, const std::string& unit) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  if (v.empty()) return "";
  if (v.size() == 1) return fmt::format("{}{}{}", prefix, v.front(), unit);
  return fmt::format("{}{}-{}{}", prefix, v.front(), v.back(), unit);
}

}  // namespace

std::string workload_name(const TraceSpec& t) {
  if (t.path.empty()) return t.from;
  return fmt::format("{} ({})", t.from, std::filesystem::path(t.path).stem().string());
}

std::string rate_text(const std::vector<const Experiment*>& experiments) {
  std::vector<double> poisson, scales;
  std::vector<int64_t> users;
  bool replay = false;
  std::vector<std::string> others;
  for (const Experiment* e : experiments) {
    const auto& a = e->arrival;
    if (a.process == "poisson")
      poisson.push_back(a.rate);
    else if (a.process == "users")
      users.push_back(a.users);
    else if (a.process == "replay")
      replay = true;
    else
      add_once(others, a.process);
    if (e->trace.rate_scale != 1) scales.push_back(e->trace.rate_scale);
  }
  std::vector<std::string> parts;
  if (!poisson.empty()) parts.push_back(span(poisson, "", " sessions/s"));
  if (!users.empty())
    parts.push_back(span(std::vector<double>(users.begin(), users.end()), "", " users"));
  if (replay) parts.emplace_back("the trace's arrival times");
  for (const auto& o : others) parts.push_back(o + " arrivals");
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : ", ") + p;
  if (!scales.empty()) out += span(scales, " x ", "");
  return out;
}

PlotContext plot_context(const std::vector<const Experiment*>& experiments) {
  PlotContext c;
  std::map<std::string, std::pair<std::string, std::string>> seen;  // path -> gpu, model
  auto profile = [&](const std::string& path) {
    if (path.empty()) return;
    auto it = seen.find(path);
    if (it == seen.end()) {
      std::pair<std::string, std::string> names;
      try {
        const sim::Profile p = sim::load_profile(path);
        names = {p.device.name, p.model.name};
      } catch (const std::exception&) {  // the run itself reports a bad profile
      }
      it = seen.emplace(path, names).first;
    }
    add_once(c.gpu, it->second.first);
    add_once(c.model, it->second.second);
  };
  for (const Experiment* e : experiments) {
    profile(e->profile);
    for (const auto& g : e->cluster.groups) profile(g.profile);
    add_once(c.workload, workload_name(e->trace));
  }
  add_once(c.rate, rate_text(experiments));
  return c;
}

std::string plot_context_json(const PlotContext& c) {
  nlohmann::ordered_json j;
  j["gpu"] = c.gpu;
  j["model"] = c.model;
  j["workload"] = c.workload;
  j["rate"] = c.rate;
  return j.dump() + "\n";
}

void write_plot_context(const std::string& dir, const PlotContext& c) {
  write_file_atomic((std::filesystem::path(dir) / "plot_context.json").string(),
                    plot_context_json(c));
}

}  // namespace isim::exp
