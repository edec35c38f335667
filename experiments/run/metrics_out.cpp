// isim run --metrics (metrics_out.h).
#include "experiments/run/metrics_out.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "core/atomic_file.h"
#include "core/input_error.h"
#include "core/out_path.h"

namespace isim::exp {

namespace fs = std::filesystem;

void check_metrics_out(const MetricsOut& m) {
  if (m.file.empty()) return;
  const fs::path dir = fs::path(m.file).parent_path();
  std::error_code ec;
  if (!dir.empty() && !fs::is_directory(dir, ec))
    throw InputError(
        fmt::format("--metrics {}: the folder {} does not exist", m.file, dir.string()));
  check_out_file(m.file, "--metrics");
}

std::string metrics_path(const std::string& file, const std::string& policy, size_t policies) {
  if (policies <= 1) return file;
  const std::string ext = ".om";
  if (file.size() > ext.size() && file.compare(file.size() - ext.size(), ext.size(), ext) == 0)
    return file.substr(0, file.size() - ext.size()) + "." + policy + ext;
  return file + "." + policy;
}

std::vector<OmReplica> om_replicas(const Experiment& e, const Inputs& in) {
  if (!e.cluster.given) return {{in.profile.model.name, 0}};
  std::vector<OmReplica> out;
  for (size_t g = 0; g < e.cluster.groups.size(); ++g) {
    const auto& grp = e.cluster.groups[g];
    for (int32_t k = 0; k < grp.count; ++k)
      for (int32_t core = 0; core < grp.par.dp; ++core)
        out.push_back({in.group_profiles.at(g).model.name, core});
  }
  return out;
}

void write_metrics_out(const MetricsOut& m, const Experiment& e, const Inputs& in,
                       const PolicySpec& p, const cluster::RunResult& r) {
  if (m.file.empty()) return;
  OmOptions o;
  o.replicas = om_replicas(e, in);
  o.epoch_s = m.epoch_s;
  for (const auto& s : in.trace) o.max_model_len = std::max(o.max_model_len, s.max_context());
  const std::string path = metrics_path(m.file, p.name, e.policies.size());
  size_t bytes = 0;
  write_file_atomic(path, [&](const PutText& write) {
    write_openmetrics(r, o, [&](std::string_view piece) {
      bytes += piece.size();
      write(piece);
    });
  });
  fmt::print(stderr, "{}: OpenMetrics, {} samples per series, {:.1f} MB -> {}\n", p.name,
             r.timeseries.size(), static_cast<double>(bytes) / 1e6, path);
}

}  // namespace isim::exp
