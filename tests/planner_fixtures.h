// A hand-set fleet for the planner tests: roles and per-replica metrics the test writes, turned
// into the FleetSnapshot and PlannerContext a cluster would hand a planner.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cluster/planner.h"
#include "policies/planners.h"

namespace isim::test {

inline std::unique_ptr<cluster::Planner> make_planner(
    const std::string& name, std::map<std::string, std::string> params = {}) {
  return policy::planner_registry().create(name, "test",
                                           Params(std::move(params), "cluster.planner"));
}

struct PlannerFleet {
  cluster::PlannerContext c;
  std::vector<cluster::ReplicaMetrics> m;  // by replica; role and switching follow `c`
  cluster::FleetSnapshot s;                // fleet-wide fields of every pull

  explicit PlannerFleet(const std::vector<cluster::Role>& roles) {
    const size_t n = roles.size();
    c.roles = roles;
    c.switching.assign(n, 0);
    c.cost_models.assign(n, nullptr);
    c.max_num_seqs.assign(n, 100);
    c.max_num_batched_tokens.assign(n, 640);
    m.resize(n);
    s.dt_s = 1;
  }
  cluster::FleetSnapshot snapshot() {
    cluster::FleetSnapshot out = s;
    out.t += sim::kNanosPerSecond;
    s.t = out.t;
    for (size_t r = 0; r < m.size(); ++r) {
      m[r].role = c.roles[r];
      m[r].switching = c.switching[r] != 0;
    }
    out.replicas = m;
    return out;
  }
  void pull(cluster::Planner& p, int times = 1) {
    for (int i = 0; i < times; ++i) p.observe(snapshot());
  }
  // Decides, applies the changes to the roles, and returns them.
  std::vector<cluster::RoleChange> decide(cluster::Planner& p) {
    const auto ch = p.decide(c);
    for (const cluster::RoleChange& x : ch) c.roles[static_cast<size_t>(x.replica)] = x.to;
    return ch;
  }
  std::vector<int32_t> of(cluster::Role r) const {
    std::vector<int32_t> v;
    for (size_t i = 0; i < c.roles.size(); ++i)
      if (c.roles[i] == r) v.push_back(static_cast<int32_t>(i));
    return v;
  }
};

// Short names for the planner tests' role lists and expected changes.
namespace planner_names {
constexpr cluster::Role P = cluster::Role::kPrefill, D = cluster::Role::kDecode,
                        M = cluster::Role::kMixed;
using Changes = std::vector<cluster::RoleChange>;
}  // namespace planner_names

}  // namespace isim::test
