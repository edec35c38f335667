#include "cluster/simulation.h"

#include <stdexcept>

#include <fmt/format.h>

#include "core/input_error.h"

namespace isim::cluster {

namespace {

std::string threads_note(const Cluster& c, int32_t threads) {
  if (!c.serial_reason().empty())
    return fmt::format("{} threads asked; this run takes one ({})", threads, c.serial_reason());
  const WindowStats& w = c.window_stats();
  return fmt::format(
      "{} threads: {} windows, {:.1f} iteration ends each; {} instants one at a time", threads,
      w.windows, w.windows > 0 ? static_cast<double>(w.window_ends) / w.windows : 0.0, w.instants);
}

}  // namespace

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
                   bool turn_gaps, int32_t threads) {
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
  RunResult r = c.result();
  if (threads > 1) r.threads_note = threads_note(c, threads);
  return r;
}

}  // namespace isim::cluster
