#include "policies/planners/common.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace isim::policy::planners {

using cluster::Role;
using cluster::RoleChange;

namespace {

bool pooled(Role r) {
  return r == Role::kPrefill || r == Role::kDecode;
}

int64_t work(const std::vector<cluster::ReplicaMetrics>& latest, int32_t r, Role from) {
  if (r < 0 || static_cast<size_t>(r) >= latest.size()) return 0;
  const cluster::ReplicaMetrics& m = latest[static_cast<size_t>(r)];
  return from == Role::kPrefill ? m.queued_prefill_tokens : m.running_sessions;
}

}  // namespace

Pools count_pools(const cluster::PlannerContext& c) {
  Pools p;
  for (const Role r : c.roles) {
    if (r == Role::kPrefill) ++p.prefill;
    if (r == Role::kDecode) ++p.decode;
  }
  return p;
}

bool any_switching(const cluster::PlannerContext& c) {
  for (size_t r = 0; r < c.roles.size(); ++r)
    if (pooled(c.roles[r]) && r < c.switching.size() && c.switching[r]) return true;
  return false;
}

std::vector<RoleChange> move_out(const cluster::PlannerContext& c,
                                 const std::vector<cluster::ReplicaMetrics>& latest, Role from,
                                 int32_t count) {
  if (!pooled(from) || count <= 0) return {};
  std::vector<int32_t> free;  // non-switching replicas of `from`
  for (size_t r = 0; r < c.roles.size(); ++r)
    if (c.roles[r] == from && !(r < c.switching.size() && c.switching[r]))
      free.push_back(static_cast<int32_t>(r));
  std::stable_sort(free.begin(), free.end(), [&](int32_t a, int32_t b) {
    return work(latest, a, from) < work(latest, b, from);
  });
  const auto n = std::min<size_t>(static_cast<size_t>(count), free.empty() ? 0 : free.size() - 1);
  const Role to = from == Role::kPrefill ? Role::kDecode : Role::kPrefill;
  std::vector<RoleChange> out;
  for (size_t i = 0; i < n; ++i) out.push_back({free[i], to});
  std::sort(out.begin(), out.end(),
            [](const RoleChange& a, const RoleChange& b) { return a.replica < b.replica; });
  return out;
}

std::vector<RoleChange> step_toward(const cluster::PlannerContext& c,
                                    const std::vector<cluster::ReplicaMetrics>& latest,
                                    int32_t target_prefill, int32_t step) {
  const int32_t now = count_pools(c).prefill;
  if (target_prefill == now || target_prefill < 0) return {};
  const int32_t k = std::min(step, std::abs(target_prefill - now));
  return move_out(c, latest, target_prefill > now ? Role::kDecode : Role::kPrefill, k);
}

int32_t split_of(double prefill_need, double decode_need, int32_t n) {
  const double sum = prefill_need + decode_need;
  if (n < 2 || !(sum > 0)) return -1;
  const auto p = static_cast<int32_t>(std::floor(static_cast<double>(n) * prefill_need / sum));
  return std::clamp(p, 1, n - 1);
}

double interval_param(const Params& p, const std::string& key, double def, const char* help) {
  return p.get<double>(key, def,
                       in(0.001, 86400)
                           .because("a day between decisions; below 1 ms "
                                    "a run is all planner ticks"),
                       help);
}

double seconds_param(const Params& p, const std::string& key, double def, const char* help) {
  return p.get<double>(key, def, above_upto(0, 3600).because("an hour: no latency target"), help);
}

double fraction_param(const Params& p, const std::string& key, double def, const char* help) {
  return p.get<double>(key, def, in(0, 1), help);
}

double non_negative_param(const Params& p, const std::string& key, double def, const char* help) {
  return p.get<double>(key, def, in(0, 1e6).because("10^6 requests per replica"), help);
}

int32_t step_param(const Params& p) {
  return p.get<int32_t>("step", 1, in(1, 65536).because("the fleet's replica cap"),
                        "most replicas switched per decision");
}

std::string num(double x) {
  return fmt::format("{}", x);
}

}  // namespace isim::policy::planners
