// A small prefill/decode fleet for hand-computed disaggregation tests: one replica per role,
// each a SimExecutor on `profile` (default the round profile of tests/sim_fixtures.h: T(x) =
// 10 ms + 1 ms per batched token, 1000 KV bytes per token, 4-token blocks) under `preserve`,
// vllm-v0 (or `scheduler`) with 400 GPU blocks and `cpu_blocks` CPU blocks (default 0), behind
// least-loaded (or `router`) and an optional planner, with every invariant and the global check
// after each instant. two_layer_profile() is the round profile as two layers of 125-dim heads:
// still 1000 KV bytes per token, half of them per layer (for layer-by-layer transfers). Links:
// NVLink 0.001 GB/s (1000 B per ms), inter-node 0.0005 GB/s, both 2 ms latency; a test edits `cfg`
// before run().
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "cluster/cluster.h"
#include "cluster/simulation.h"
#include "policies/builtin.h"
#include "policies/routers.h"
#include "tests/sim_fixtures.h"

namespace isim::test {

inline sim::Profile two_layer_profile() {
  sim::Profile p = round_profile();
  p.model.layers = 2;
  p.model.head_dim = 125;
  return p;
}

struct PdFleet {
  explicit PdFleet(std::vector<cluster::Role> roles, sim::Profile p = round_profile())
      : profile(std::move(p)) {
    cfg.enabled = true;
    cfg.roles = std::move(roles);
    cfg.links.intra_node = {"nvlink", 0.001, 2e-3};
    cfg.links.inter_node = {"infiniband", 0.0005, 2e-3};
    for (size_t i = 0; i < cfg.roles.size(); ++i) {
      executors.push_back(std::make_unique<sim::SimExecutor>(profile));
      policies.push_back(
          policy::policy_registry().create("preserve", "test", policy::PolicyParams{}));
    }
  }
  std::vector<cluster::ReplicaSpec> specs(const std::string& scheduler) {
    std::vector<cluster::ReplicaSpec> v;
    for (size_t i = 0; i < executors.size(); ++i) {
      sim::EngineConfig c;
      c.scheduler = scheduler;
      c.gpu_blocks = 400;
      c.cpu_blocks = cpu_blocks;
      v.push_back({c, executors[i].get(), policies[i].get(), ""});
    }
    return v;
  }
  cluster::RunResult run(const trace::Trace& t, cluster::Planner* planner = nullptr,
                         const std::string& router = "least-loaded",
                         const std::string& scheduler = "vllm-v0") {
    auto r = policy::router_registry().create(router, "test", Params({}, "router"));
    return cluster::simulate(t, specs(scheduler), *r, cfg, planner, /*check_invariants=*/true);
  }
  sim::Profile profile;
  cluster::DisaggConfig cfg;
  int64_t cpu_blocks = 0;
  std::vector<std::unique_ptr<sim::Executor>> executors;
  std::vector<std::unique_ptr<sim::Policy>> policies;
};

}  // namespace isim::test
