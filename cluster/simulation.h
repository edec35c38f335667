// Simulation: runs a trace to its end on one replica or on a fleet.
//
// Contract:
// - `simulate(trace, config, executor, policy)` is a cluster of one: it gives exactly the
//   single-replica results (there is nothing to route).
// - `simulate(trace, replicas, router)` runs a fleet. Live executors run on a cluster of one
//   only (InputError otherwise): their measured clocks cannot be shared by several replicas.
// - Time-series samples are taken every `timeseries_interval_s` (replica 0's setting) of
//   simulated time, each showing the state in force at that instant; at most
//   `max_time_samples` of them (InputError naming metrics.timeseries_interval_s beyond).
// - Sessions that never fit are skipped and listed in `RunResult::skipped`.
#pragma once

#include <functional>
#include <vector>

#include "cluster/cluster.h"
#include "cluster/disagg.h"
#include "cluster/planner.h"
#include "cluster/run_result.h"

namespace isim::cluster {

// `observer`, when set, sees every iteration as it starts.
RunResult simulate(const trace::Trace& trace, const sim::EngineConfig& config,
                   sim::Executor& executor, sim::Policy& policy,
                   std::function<void(const sim::IterationRecord&)> observer = nullptr);

RunResult simulate(const trace::Trace& trace, std::vector<ReplicaSpec> replicas, Router& router,
                   Checks checks = false,
                   std::function<void(const sim::IterationRecord&)> observer = nullptr);

// A fleet with roles, links and a planner (`planner` may be null when disagg is not enabled),
// and the KV tiers of `disagg.tiers` for replicas whose KV manager uses them. `progress`, when
// set, is told how far the run is (Cluster::set_progress). `turn_gaps` false: the result keeps
// no per-turn gaps, only their tallies (cluster/ledger.h). The replicas advance on `threads`
// threads between the fleet's events (Cluster::set_threads: the results do not depend on it).
RunResult simulate(const trace::Trace& trace, std::vector<ReplicaSpec> replicas, Router& router,
                   const DisaggConfig& disagg, Planner* planner, Checks checks = false,
                   std::function<void(const sim::IterationRecord&)> observer = nullptr,
                   ProgressFn progress = nullptr, bool turn_gaps = true, int32_t threads = 1);

// The router of a cluster of one: everything goes to replica 0.
class SingleReplica final : public Router {
 public:
  std::string name() const override { return "single"; }
  int32_t route(const RouteRequest&, const ClusterView&) override { return 0; }
};

}  // namespace isim::cluster
