// Cluster: N replica engines on one event queue, with the arrivals, the intercept timers, a
// router and the session ledger.
//
// Contract:
// - `load` checks the trace (every segment decodes >= 1 token; prefix hashes fit every block
//   size), skips sessions that fit no replica (each listed with why), and orders the other
//   arrivals by (time, trace index). All bad input surfaces there, before any event runs. Only
//   the next arrival is on the queue at any time (a million pending arrivals would make every
//   queue operation pay for them); the order is the one scheduling them all would give.
// - Events dispatch by target: kClusterTarget (arrivals, intercept ends) or a replica's index
//   (its iteration ends). At each instant every event is handled, then every idle replica may
//   start an iteration, in replica order. Equal inputs give identical runs.
// - An arriving session goes where the router says. When an intercept ends the router is
//   asked again: the holder resumes it, or exports it (its KV dropped and counted as lost
//   reuse by migration) and the chosen replica admits it.
// - `run_until(h)` handles every event at times <= h and returns whether the queue drained;
//   calling it again continues. `result()` closes the run at the last event handled.
// - With check_invariants, every replica checks itself after each iteration, and after each
//   instant the cluster checks globally: every session is on exactly one replica or in the
//   cluster (never arrived, skipped, finished) as the ledger says, and no KV block has two
//   owners.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cluster/ledger.h"
#include "cluster/router.h"
#include "cluster/run_result.h"
#include "sim/engine.h"

namespace isim::cluster {

// One replica's parts. The executor and policy are not owned and serve this replica only.
struct ReplicaSpec {
  sim::EngineConfig config;
  sim::Executor* executor = nullptr;
  sim::Policy* policy = nullptr;
  std::string group;  // the fleet group it belongs to ("" for a cluster of one)
};

enum ClusterEvent : int32_t { kEvArrival = 0, kEvInterceptEnd = 1 };

class Cluster final : public sim::EngineListener {
 public:
  Cluster(const trace::Trace& trace, std::vector<ReplicaSpec> replicas, Router& router,
          bool check_invariants = false);
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  void set_observer(std::function<void(const sim::IterationRecord&)> f);
  void load();
  bool run_until(sim::Nanos horizon);
  RunResult result();

  int32_t size() const { return static_cast<int32_t>(engines_.size()); }
  sim::Engine& replica(int32_t r) { return *engines_[static_cast<size_t>(r)]; }
  const Ledger& ledger() const { return ledger_; }
  sim::Nanos now() const { return queue_.now(); }
  void check_global() const;

  // EngineListener.
  void paused(int32_t replica, int32_t handle, const sim::SessionState& s,
              sim::Nanos duration) override;
  void finished(int32_t replica, const sim::SessionState& s) override;
  void turn_first_token(int32_t replica, const sim::SessionState& s, sim::Nanos ttft) override;

 private:
  class View;
  void dispatch(const sim::Event& ev);
  void on_arrival(int32_t i);
  void on_intercept_end(int32_t i);
  int32_t route(const RouteRequest& q);
  void sample(sim::Nanos t);
  void touch(int32_t r);
  void schedule_next_arrival();  // replica r had an event at this instant: it may start an iteration

  const trace::Trace& trace_;
  std::vector<ReplicaSpec> specs_;
  Router& router_;
  bool check_;
  sim::EventQueue queue_;
  std::vector<std::unique_ptr<sim::Engine>> engines_;
  Ledger ledger_;
  std::vector<std::string> skipped_;
  // Arrivals in (time, trace index) order; only the next one is on the queue at a time.
  std::vector<int32_t> arrivals_;
  size_t next_arrival_ = 0;
  std::vector<char> fits_all_;  // the session fits every replica (no eligibility to check)
  bool opened_ = false;
  sim::Nanos dt_ = 0, next_sample_ = 0, end_ = 0;
  std::vector<sim::TimeSample> fleet_ts_;
  std::vector<ReplicaSample> replica_ts_;
  std::vector<int64_t> admitted_, resumed_;
  std::vector<int32_t> touched_;     // replicas with an event at the current instant
  std::vector<char> is_touched_;
  int64_t migrations_ = 0;
};

}  // namespace isim::cluster
