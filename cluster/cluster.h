// Cluster: N replica engines on one event queue, with the arrivals, the intercept timers, a
// router and the session ledger.
//
// Contract:
// - `load` checks the trace (every segment decodes >= 1 token; prefix hashes fit every block
//   size), skips sessions that fit no replica (each listed with why), and orders the other
//   arrivals by (time, trace index). All bad input surfaces there, before any event runs. Only
//   the next arrival is on the queue at any time (a million pending arrivals would make every
//   queue operation pay for them); the order is the one scheduling them all would give.
// - Start dependencies (trace::StartAfter; cluster_arrivals.cpp): a session that has one is
//   not among those arrivals. When its predecessor arrives or finishes, its arrival is put on
//   the queue at that instant + delay (same priority as any arrival) and it arrives as any
//   other, on every path (one replica, a fleet, disaggregated); its records' arrival is that
//   instant, not its arrival_s. Until then the ledger has it as never arrived. A predecessor
//   that fits no replica is skipped as usual, but at the instant it would have arrived it
//   starts every session that depends on it. `load` throws std::logic_error for a dependency on
//   the session itself, a later one, or none of the trace, or a delay that is not finite >= 0
//   (code builds them, not users).
// - Events dispatch by target: kClusterTarget (arrivals, intercept ends) or a replica's index
//   (its iteration ends). At each instant every event is handled, then every idle replica may
//   start an iteration, in replica order. Equal inputs give identical runs.
// - An arriving session goes where the router says. When an intercept ends the router is
//   asked again: the holder resumes it, or exports it (its KV dropped and counted as lost
//   reuse by migration) and the chosen replica admits it.
// - KV tiers (cluster/kv_tiers.h; cluster_tiers.cpp, cluster_fetch.cpp), for replicas whose KV
//   manager uses them: an idle eviction of a paused session demotes its KV to the node's CPU
//   tier or the pool as the manager says; at an intercept's end the router sees what each
//   replica would fetch (ClusterView::reachable_kv_tokens), and the KV comes back from a tier,
//   or from the holder's GPU when the session resumes elsewhere, when Mooncake's rule says so.
//   The turn starts when it lands; a tier fetch without room waits (FIFO), a peer fetch without
//   room resumes on the holder. The global check covers the entries and the fetches in flight
//   (a tier fetch: importing on its destination only; a peer fetch: on both ends).
// - `run_until(h)` handles every event at times <= h and returns whether the queue drained;
//   calling it again continues. `result()` closes the run at the last event handled. A
//   progress reporter (`set_progress`) only reads the counts; it changes nothing of the run.
// - With `Checks` (true: all), every replica checks itself after each iteration (`engines`),
//   and after each instant the cluster checks globally (`global`): every session is on exactly
//   one replica or in the cluster (never arrived, skipped, finished) as the ledger says, or its
//   KV is in flight between exactly two replicas (exporting on one, importing on the other, the
//   same tokens); and no KV block has two owners. With `each_event`, both also run after every
//   event and after each instant's iteration starts: the global check each time, and every
//   replica the cluster reached through `replica(r)` since its last check (an engine whose
//   iteration just ended checked itself last thing). `check_now` checks every replica.
// - Disaggregated (cluster_disagg.cpp, cluster_roles.cpp; settings in cluster/disagg.h): the
//   split sends a session's prefill to a prefill replica or serves it locally; a prefilled
//   session's KV moves to a decode replica chosen by the router once that replica has room
//   (a FIFO per decode replica), over the source's link; the planner is pulled and asked at
//   its intervals from the first arrival until the last session ends, and its role changes
//   are applied as the switching settings say.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cluster/disagg.h"
#include "cluster/ledger.h"
#include "cluster/planner.h"
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
  sim::KvManager* kv_manager = nullptr;  // not owned; null: sim::LocalKvManager
  sim::RunObserver* observer = nullptr;  // not owned, shared by the fleet; null: no event trace
};

// Which invariants a run checks, and how often. From a bool: all of them, after every event,
// or none (tests pass `true`). `engines`: each replica after each of its iterations; `global`:
// the fleet after each instant; `each_event`: both after every event and after each instant's
// iteration starts too (on the replicas the event reached), so no state goes unchecked. The
// engines' checks cost O(blocks) each; the global one O(sessions), so `global_only` is the one
// a large fleet can afford, and `per_iteration` (the CLI's --check-invariants) the cheaper
// full check.
struct Checks {
  bool engines = false, global = false, each_event = false;
  Checks(bool all = false) : engines(all), global(all), each_event(all) {}  // NOLINT: from bool
  static Checks global_only() {
    Checks c;
    c.global = true;
    return c;
  }
  static Checks per_iteration() {
    Checks c(true);
    c.each_event = false;
    return c;
  }
};

// How far a run is, as a progress reporter (experiments/progress.h) is told it: every
// `every` instants of simulated time and once more when the queue drains. `total` is the
// trace's size, known before the first event, so nothing here reads the trace's future.
struct Progress {
  sim::Nanos now = 0;  // the instant just handled
  int64_t done = 0;    // sessions finished or skipped
  int64_t total = 0;   // sessions in the trace
  bool last = false;   // the queue drained: the run is over
};
using ProgressFn = std::function<void(const Progress&)>;

enum ClusterEvent : int32_t {
  kEvArrival = 0,
  kEvInterceptEnd = 1,
  kEvLink = 3,        // a link's next change (arg: link index)
  kEvPull = 4,        // the planner's metric pull
  kEvDecide = 5,      // the planner's decision
  kEvSwitchDone = 6,  // a role switch's cost has been paid (arg: replica)
  kEvStartAfter = 7,  // a session whose predecessor has arrived or finished arrives (arg: it)
  kEvTierLink = 8,    // a KV tier link's next change (arg: link index)
};

struct DisaggState;  // cluster/disagg_state.h
struct TierState;    // cluster/tier_state.h
struct FetchPlan;
struct TierCopy;
struct PendingFetch;
struct PendingImport;
struct Transfer;

class Cluster final : public sim::EngineListener {
 public:
  Cluster(const trace::Trace& trace, std::vector<ReplicaSpec> replicas, Router& router,
          Checks checks = false, const DisaggConfig& disagg = {},
          Planner* planner = nullptr);
  ~Cluster() override;
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  void set_observer(std::function<void(const sim::IterationRecord&)> f);
  // Tells `f` the run's progress every `every` (> 0) instants and when the queue drains.
  void set_progress(ProgressFn f, int64_t every = 4096);
  void load();
  bool run_until(sim::Nanos horizon);
  RunResult result();

  int32_t size() const { return static_cast<int32_t>(engines_.size()); }
  // Non-const access marks the replica as possibly changed: with Checks::each_event it is
  // checked again after the event (check_now checks every replica).
  sim::Engine& replica(int32_t r) {
    changed_[static_cast<size_t>(r)] = 1;
    return *engines_[static_cast<size_t>(r)];
  }
  const sim::Engine& engine(int32_t r) const { return *engines_[static_cast<size_t>(r)]; }
  const Ledger& ledger() const { return ledger_; }
  sim::Nanos now() const { return queue_.now(); }
  void check_global() const;
  // Every replica's check_invariants, then check_global.
  void check_now() const;

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
  class View;
  void dispatch(const sim::Event& ev);
  void on_arrival(int32_t i);  // the next of arrivals_
  void arrive(int32_t i);      // any arrival, dependent or not
  // A new session's state; a fork (traces/session.h kFork) gets its parent's chain over the
  // shared prefix when the parent is on a replica now, and the parent is marked shared.
  sim::SessionState arriving(int32_t i);
  void resolve_forks();
  void on_intercept_end(int32_t i);
  void resume_session(int32_t i, sim::Nanos ended_at);
  int32_t route(const RouteRequest& q);
  void sample(sim::Nanos t);
  void touch(int32_t r);
  void schedule_next_arrival();  // replica r had an event at this instant: it may start an iteration
  // Disaggregation (cluster_disagg.cpp).
  bool disaggregated() const { return d_ != nullptr; }
  void place_arrival(int32_t i, sim::SessionState s, RouteRequest& q);
  bool place_resume(int32_t i, RouteRequest& q, double duration_s, sim::Nanos ended_at);
  int32_t route_in(const RouteRequest& q, int pool);
  void pump_imports();
  void start_transfer(int32_t dst, const PendingImport& p);
  void launch(int32_t dst, double send_bytes, Transfer t);
  int32_t link_index(int32_t src, int32_t dst) const;
  void on_link(int32_t link);
  void schedule_link(int32_t link);
  void check_transfers(std::vector<int32_t>& seen, size_t tier_importing) const;
  void sample_roles(sim::Nanos t);
  void fill_disagg(RunResult& r) const;
  // Start dependencies (cluster_arrivals.cpp).
  enum class Trigger { kArrival, kFinish, kBoth };
  void load_start_after();
  // Records a dependent session's arrival; false for a session that fits no replica, which
  // starts all its dependents now instead.
  bool starting(int32_t i);
  void start_dependents(int32_t p, Trigger why);
  bool has_start_after(int32_t i) const {
    return trace_[static_cast<size_t>(i)].start_after.session >= 0;
  }
  // Planning and switching (cluster_roles.cpp).
  void start_planner();
  void on_pull();
  void on_decide();
  void begin_switch(int32_t r, Role to);
  void progress_switches();
  void finish_switch(int32_t r);
  // paused_kv for paused session `h` on replica r, which no longer decodes.
  void relocate_paused(int32_t r, int32_t h);
  void settle_strays();
  int32_t move_target(int32_t src, int64_t kv);
  bool all_done() const { return done_ == static_cast<int64_t>(trace_.size()); }
  // KV tiers (cluster_tiers.cpp).
  void init_tiers(const KvTiersConfig& cfg, const LinksConfig& links);
  bool tiers_used(int32_t r) const;
  FetchPlan plan_fetch(const RouteRequest& q, int32_t r) const;
  int64_t reachable_kv(const RouteRequest& q, int32_t r) const;
  // After routing a resume to r: fetches its KV (true: the turn starts when it lands) or
  // accounts for what is lost (false: resume as without tiers).
  bool resume_with_tiers(const RouteRequest& q, int32_t r, double intercept_s,
                         sim::Nanos ended_at);
  // Resumes paused session h on replica r; with roles, its turn exports when r prefills only.
  void resume_on(int32_t r, int32_t h, double intercept_s, sim::Nanos ended_at);
  bool fetch_peer(const RouteRequest& q, int32_t r, const FetchPlan& p, double intercept_s,
                  sim::Nanos ended_at);
  void fetch_tier(const RouteRequest& q, int32_t r, const FetchPlan& p, double intercept_s,
                  sim::Nanos ended_at);
  bool start_fetch(const PendingFetch& f);
  void pump_fetches();
  void demote(int32_t r, const sim::SessionState& s, sim::Demote to);
  void store_entry(TierStore& store, const TierEntry& e, const sim::KvManager& m);
  void start_copy(int32_t li, double bytes, const TierCopy& c);
  void on_tier_link(int32_t li);
  void land_copy(const TierCopy& c);
  void schedule_tier_link(int32_t li);
  void check_tier_copies(std::vector<int32_t>& seen, size_t& importing) const;
  void fill_tiers(RunResult& r) const;

  const trace::Trace& trace_;
  std::vector<ReplicaSpec> specs_;
  Router& router_;
  bool check_;
  bool check_each_;  // Checks::each_event
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
  std::vector<char> changed_;  // replica(r) was asked for since its last each_event check
  // Checks::each_event after an event: the replicas it may have changed, then the fleet.
  void check_changed();
  int64_t migrations_ = 0;
  int64_t done_ = 0;  // sessions finished or skipped
  ProgressFn progress_;
  int64_t progress_every_ = 0, instants_ = 0;
  bool real_event_ = false;  // the current instant had an event other than the planner's
  std::vector<char> mask_;   // the pool a route may use (empty: every replica)
  std::vector<int32_t> fork_parent_;  // by trace index: the parent's index, or -1
  // By predecessor: the sessions that start after it, in trace order; both empty when no
  // session of the trace has a start dependency.
  std::vector<std::vector<int32_t>> dependents_;
  std::vector<char> never_fits_;  // skipped by load
  // The chain of the fork being placed now (routers see it through View::prefix_chain).
  int32_t fork_session_ = -1;
  int64_t fork_block_tokens_ = 0;
  std::vector<uint64_t> fork_chain_;
  std::unique_ptr<DisaggState> d_;
  std::unique_ptr<TierState> t_;
};

}  // namespace isim::cluster
