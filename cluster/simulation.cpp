#include "cluster/simulation.h"

#include <stdexcept>

#include "core/input_error.h"

namespace isim::cluster {

RunResult simulate(const trace::Trace& trace, const sim::EngineConfig& config,
                   sim::Executor& executor, sim::Policy& policy,
                   std::function<void(const sim::IterationRecord&)> observer) {
  SingleReplica router;
  return simulate(trace, {ReplicaSpec{config, &executor, &policy, ""}}, router,
                  Checks(config.check_invariants), std::move(observer));
}

RunResult simulate(const trace::Trace& trace, std::vector<ReplicaSpec> replicas, Router& router,
                   Checks checks, std::function<void(const sim::IterationRecord&)> observer) {
  return simulate(trace, std::move(replicas), router, DisaggConfig{}, nullptr, checks,
                  std::move(observer));
}

RunResult simulate(const trace::Trace& trace, std::vector<ReplicaSpec> replicas, Router& router,
                   const DisaggConfig& disagg, Planner* planner, Checks checks,
                   std::function<void(const sim::IterationRecord&)> observer, ProgressFn progress,
                   bool turn_gaps) {
  for (const auto& r : replicas) {
    if (r.executor && r.executor->live() && replicas.size() > 1)
      throw InputError("cluster.replicas: live executors run on one replica only");
    if (r.executor && r.executor->live() && disagg.enabled)
      throw InputError("cluster.roles: live executors do not run disaggregated fleets");
  }
  Cluster c(trace, std::move(replicas), router, checks, disagg, planner);
  if (observer) c.set_observer(std::move(observer));
  if (progress) c.set_progress(std::move(progress));
  if (!turn_gaps) c.drop_turn_gaps();
  c.load();
  c.run_until(sim::kForever);
  return c.result();
}

}  // namespace isim::cluster
