// isim run --metrics (metrics_out.h).
#include "experiments/run/metrics_out.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/atomic_file.h"
#include "core/out_path.h"

namespace isim::exp {

void check_metrics_out(const MetricsOut& m) {
  if (!m.file.empty()) check_flag_file(m.file, "--metrics");
}

std::string metrics_path(const std::string& file, const std::string& policy, size_t policies) {
  return per_policy_file(file, ".om", policy, policies);
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
