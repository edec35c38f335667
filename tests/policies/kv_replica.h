// One replica behind a single-replica cluster for the KV-manager tests: the round profile
// (tests/sim_fixtures.h: T(x) = 10 ms + 1 ms per batched token, 4-token blocks), vllm-v1
// (every full block hashed, cached when released), `preserve`, no CPU pool, every invariant
// checked after each iteration. `params` go to the manager (e.g. history_min_samples).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "cluster/simulation.h"
#include "policies/builtin.h"
#include "policies/kv_managers.h"
#include "tests/sim_fixtures.h"

namespace isim::test {

struct Replica {
  explicit Replica(const std::string& manager, int64_t gpu_blocks = 64,
                   std::map<std::string, std::string> params = {})
      : profile(round_profile()),
        ex(profile),
        policy(policy::policy_registry().create("preserve", "test", policy::PolicyParams{})),
        kv(policy::kv_manager_registry().create(manager, "test",
                                                Params(std::move(params), "kv"))) {
    cfg.scheduler = "vllm-v1";
    cfg.gpu_blocks = gpu_blocks;
    cfg.cpu_blocks = 0;
    cfg.max_num_batched_tokens = 256;
    cfg.check_invariants = true;
  }
  std::unique_ptr<cluster::Cluster> start(const trace::Trace& t) {
    auto c = std::make_unique<cluster::Cluster>(
        t, std::vector<cluster::ReplicaSpec>{{cfg, &ex, policy.get(), "", kv.get()}}, router,
        cluster::Checks(true));
    c->load();
    return c;
  }
  cluster::RunResult run(const trace::Trace& t) {
    auto c = start(t);
    c->run_until(sim::kForever);
    return c->result();
  }
  sim::Profile profile;
  sim::SimExecutor ex;
  std::unique_ptr<sim::Policy> policy;
  std::unique_ptr<sim::KvManager> kv;
  sim::EngineConfig cfg;
  cluster::SingleReplica router;
};

}  // namespace isim::test
