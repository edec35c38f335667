// Cluster: N replica engines on one event queue, built from components that own their events
// (cluster/fleet.h): arrivals (cluster/arrivals.h), intercept timers (cluster/intercepts.h),
// roles and the planner loop for a disaggregated fleet (cluster/roles.h, cluster/planning.h),
// KV tiers (cluster/tiers.h), one transfer component over the links that serves both
// (cluster/transfers.h), the time series (cluster/sampler.h) and the checks
// (cluster/checks.h); a router places sessions and the ledger (cluster/ledger.h) says where
// each one is.
//
// Contract:
// - `load` checks the trace and puts the first arrival on the queue (Arrivals::load); all bad
//   input surfaces there, before any event runs.
// - Events dispatch by target: a replica's index (its iteration ends) or a component's own
//   target. At each instant every event is handled, then the components settle (the import
//   queues and switches of Roles, then the fetches waiting in Tiers), then every idle replica
//   that had an event may start an iteration, in replica order. Equal inputs give identical
//   runs.
// - The engines' listener calls go to the components: a pause to the intercept timers, a
//   finish to the ledger and the start dependencies, a prefilled session to the roles, turn
//   observations to the planner loop, an idle eviction to the tiers.
// - Each replica's iteration end waits on its own clock (cluster/window.h). Between the fleet's
//   events the replicas advance apart, in windows, on `set_threads(n)` threads (default 1; the
//   same algorithm on any n, so the same results): what their listener calls do to the fleet is
//   held and applied after each window in the order one queue would have handled it. A lone
//   replica, and a fleet with roles, tiers, lockstep groups, a live executor, an iteration or
//   run observer, or Checks::each_event, runs every instant one at a time (`serial_reason()`
//   says why).
// - `run_until(h)` handles every event at times <= h and returns whether the queue drained;
//   calling it again continues. A disaggregated or tiered run that drains with sessions
//   unfinished has stalled (std::logic_error). `result()` closes the run at the last event
//   handled (the planner's own events excluded). A progress reporter (`set_progress`) only
//   reads the counts; it changes nothing of the run.
// - With `Checks`, the invariants are checked as cluster/checks.h says; `replica(r)` marks the
//   replica for the next each_event check, `engine(r)` only reads.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cluster/checks.h"
#include "cluster/disagg.h"
#include "cluster/fleet.h"
#include "cluster/ledger.h"
#include "cluster/planner.h"
#include "cluster/replica_port.h"
#include "cluster/router.h"
#include "cluster/run_result.h"
#include "cluster/sampler.h"
#include "cluster/window.h"
#include "sim/engine.h"

namespace isim::cluster {

class RunLimit;  // cluster/run_limit.h

// How far a run is, as a progress reporter (experiments/run/progress.h) is told it: every
// `every` instants of simulated time and once more when the queue drains. `total` is the
// trace's size, known before the first event, so nothing here reads the trace's future.
struct Progress {
  sim::Nanos now = 0;  // the instant just handled
  int64_t done = 0;    // sessions finished or skipped
  int64_t total = 0;   // sessions in the trace
  bool last = false;   // the queue drained: the run is over
};
using ProgressFn = std::function<void(const Progress&)>;

class Cluster final : public sim::EngineListener {
 public:
  Cluster(const trace::Trace& trace, std::vector<ReplicaSpec> replicas, Router& router,
          Checks checks = false, const DisaggConfig& disagg = {}, Planner* planner = nullptr);
  ~Cluster() override;
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  void set_observer(std::function<void(const sim::IterationRecord&)> f);
  // Tells `f` the run's progress every `every` (> 0) instants and when the queue drains.
  void set_progress(ProgressFn f, int64_t every = 4096);
  // Without, result() has no replica time series (cluster/sampler.h keep_replicas).
  void drop_replica_series() { sampler_.keep_replicas(false); }
  // Without, result() has no per-turn gaps, only their tallies (cluster/ledger.h keep_gaps).
  void drop_turn_gaps() { fleet_.ledger().keep_gaps(false); }
  // Replicas advance between the fleet's events on n >= 1 threads (std::logic_error below 1).
  void set_threads(int32_t n);
  // Why this fleet runs its instants one at a time ("" when it windows).
  const std::string& serial_reason() const { return serial_reason_; }
  const WindowStats& window_stats() const { return windows_->stats(); }
  void load();
  bool run_until(sim::Nanos horizon);
  RunResult result();

  int32_t size() const { return fleet_.size(); }
  // Non-const access marks the replica as possibly changed: with Checks::each_event it is
  // checked again after the event (check_now checks every replica).
  sim::Engine& replica(int32_t r) { return fleet_.replica(r); }
  const sim::Engine& engine(int32_t r) const { return fleet_.engine(r); }
  const Ledger& ledger() const { return fleet_.ledger(); }
  sim::Nanos now() const { return fleet_.now(); }
  void check_global() const { checker_.check_global(); }
  // Every replica's check_invariants, then check_global.
  void check_now() const { checker_.check_now(); }

  // EngineListener.
  void paused(int32_t replica, int32_t handle, const sim::SessionState& s,
              sim::Nanos duration) override;
  void finished(int32_t replica, const sim::SessionState& s) override;
  void turn_first_token(int32_t replica, const sim::SessionState& s, sim::Nanos ttft) override;
  void prefilled(int32_t replica, int32_t handle, const sim::SessionState& s,
                 sim::Nanos iteration_start) override;
  void first_token(int32_t replica, const sim::SessionState& s, sim::Nanos ttft) override;
  void segment_done(int32_t replica, const sim::SessionState& s, int64_t outputs,
                    double decode_s) override;
  void evicting(int32_t replica, const sim::SessionState& s) override;

  // Disaggregation, for tests and outputs.
  Role role(int32_t r) const;
  bool switching(int32_t r) const;
  // Applies a planner's changes now (std::logic_error for an invalid one).
  void apply_roles(const std::vector<RoleChange>& changes);

 private:
  void dispatch(const sim::Event& ev);
  void start_iterations();  // every idle replica that had an event at this instant
  void run_instant(sim::Nanos t);
  void run_window(sim::Nanos h);
  void apply(Effect& e);
  void count_instants(sim::Nanos t, int64_t n);

  Fleet fleet_;
  std::unique_ptr<Arrivals> arrivals_;
  std::unique_ptr<Intercepts> intercepts_;
  std::unique_ptr<Transfers> transfers_;
  std::unique_ptr<Roles> roles_;
  std::unique_ptr<Planning> planning_;
  std::unique_ptr<Tiers> tiers_;
  std::unique_ptr<Lockstep> lockstep_;
  Sampler sampler_;
  Checker checker_;
  std::vector<std::unique_ptr<ReplicaPort>> ports_;  // each replica's listener
  std::unique_ptr<Windows> windows_;
  std::string serial_reason_;
  bool observed_ = false;
  ProgressFn progress_;
  int64_t progress_every_ = 0, instants_ = 0;
  sim::Nanos end_ = 0;       // the last instant with an event other than the planner's
  bool real_event_ = false;  // the current instant had an event other than the planner's
  std::unique_ptr<RunLimit> run_limit_;  // how far coalesced decode steps may run (null: none)
};

}  // namespace isim::cluster
