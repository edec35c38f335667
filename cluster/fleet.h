// Fleet: what the cluster's components share: the replica engines on one event queue, the
// trace, the ledger, the router, the replicas an instant touched, and the components
// themselves, so that one can ask another (a resume may need the roles and the tiers).
//
// Contract:
// - Events dispatch by target: a replica's index (>= 0) or a component's own target id (< 0),
//   which `enlist` hands out in the order components are built. A component declares its own
//   event types; they mean nothing outside it. The queue orders events by (time, priority,
//   insertion sequence) only, so neither targets nor types change any run.
// - Each replica keeps its own clock (`clock(r)`: an EventQueue holding its one iteration end,
//   whose arg is the instant the iteration started), so that replicas can advance apart
//   between the fleet's events (cluster/window.h). `replica(r)` and `engine(r)` first bring
//   r's clock to the fleet's instant (`now()`), and its coalesced run with it (`set_settles`);
//   `raw(r)` does neither (a window's own replica).
// - `replica(r)` (non-const) marks the replica as possibly changed, for Checks::each_event;
//   `engine(r)` reads only. `touch(r)` says r had an event at this instant: after the
//   instant's events it may start an iteration (`take_touched`, in replica order).
// - `route(q)` asks the router with the view of cluster/fleet_view.h, on the replicas of the
//   current mask (`set_mask`; empty: every replica), and throws std::logic_error when the
//   router picks a replica that cannot take the session.
// - `parts()` names the components of this run; a null one is absent (a fleet without roles
//   has no Roles nor Planning; one whose KV managers use no tiers has no Tiers; with neither,
//   no Transfers).
#pragma once

#include <climits>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cluster/ledger.h"
#include "cluster/lockstep.h"
#include "cluster/router.h"
#include "core/min_tree.h"
#include "sim/engine.h"

namespace isim::cluster {

// One replica's parts. The executor and policy are not owned and serve this replica only.
struct ReplicaSpec {
  sim::EngineConfig config;
  sim::Executor* executor = nullptr;
  sim::Policy* policy = nullptr;
  std::string group;                     // the fleet group it belongs to ("" for a cluster of one)
  sim::KvManager* kv_manager = nullptr;  // not owned; null: sim::LocalKvManager
  sim::RunObserver* observer = nullptr;  // not owned, shared by the fleet; null: no event trace
  DpSpec dp{};                           // a core of a lockstep group (cluster/lockstep.h)
};

class Fleet;

// A part of the cluster that owns its events: the cluster hands it every event whose target is
// its own (`target()`), and it schedules them with `schedule`.
class Component {
 public:
  virtual ~Component() = default;
  Component(const Component&) = delete;
  Component& operator=(const Component&) = delete;
  virtual void handle(const sim::Event& ev) = 0;
  // Whether its events count as the run's activity (the run ends at the last such event). The
  // planner's own do not: they follow the sessions' end.
  virtual bool keeps_run() const { return true; }
  int32_t target() const { return target_; }

 protected:
  explicit Component(Fleet& f);
  void schedule(sim::Nanos t, int32_t priority, int32_t type, int64_t arg);
  [[noreturn]] void unknown(const sim::Event& ev) const;

  Fleet& f_;
  int32_t target_;
};

class Arrivals;
class Intercepts;
class Roles;
class Planning;
class Transfers;
class Tiers;
class Lockstep;

// The components of a run; null where absent.
struct Parts {
  Arrivals* arrivals = nullptr;
  Intercepts* intercepts = nullptr;
  Roles* roles = nullptr;
  Planning* planning = nullptr;
  Transfers* transfers = nullptr;
  Tiers* tiers = nullptr;
  Lockstep* lockstep = nullptr;  // the fleet's data-parallel groups (none: null)
};

// The fleet's counts for its results.
struct FleetCounts {
  std::vector<int64_t> admitted, resumed;  // by replica: arrivals and resumes routed to it
  int64_t migrations = 0;                  // resumes that moved a session to another replica
  int64_t done = 0;                        // sessions finished or skipped
};

class Fleet {
 public:
  // Builds the engines; `listener` hears every engine. `engine_checks`: every replica checks
  // itself after each iteration.
  Fleet(const trace::Trace& trace, std::vector<ReplicaSpec> specs, Router& router,
        bool engine_checks, sim::EngineListener* listener);
  Fleet(const Fleet&) = delete;
  Fleet& operator=(const Fleet&) = delete;

  int32_t size() const { return static_cast<int32_t>(engines_.size()); }
  const trace::Trace& trace() const { return trace_; }
  const trace::Session& source(int32_t i) const { return trace_[static_cast<size_t>(i)]; }
  const ReplicaSpec& spec(int32_t r) const { return specs_[static_cast<size_t>(r)]; }
  const sim::Engine& engine(int32_t r) const {
    sync(r);
    return *engines_[static_cast<size_t>(r)];
  }
  sim::Engine& replica(int32_t r) {
    char& c = changed_[static_cast<size_t>(r)];
    if (track_changes_ && !c) changed_list_.push_back(r);
    c = 1;
    sync(r);
    return *engines_[static_cast<size_t>(r)];
  }
  sim::Engine& raw(int32_t r) { return *engines_[static_cast<size_t>(r)]; }
  // Reads r as it stands, its run unsettled: for a reader that needs no iteration end before
  // now() (the sampler: no run spans a sample past its first step, cluster/run_limit.h).
  const sim::Engine& peek(int32_t r) const { return *engines_[static_cast<size_t>(r)]; }
  sim::EventQueue& clock(int32_t r) { return clocks_[static_cast<size_t>(r)]; }
  sim::EventQueue& queue() { return queue_; }
  sim::Nanos now() const { return queue_.now(); }
  Ledger& ledger() { return ledger_; }
  const Ledger& ledger() const { return ledger_; }
  const Router& router() const { return router_; }
  FleetCounts& counts() { return counts_; }
  const FleetCounts& counts() const { return counts_; }
  bool all_done() const { return counts_.done == static_cast<int64_t>(trace_.size()); }
  Parts& parts() { return parts_; }
  const Parts& parts() const { return parts_; }

  void touch(int32_t r);
  // The replicas touched since the last call, in replica order; valid until the next call
  // (touches made meanwhile go to a fresh list). Costs O(touched), allocates nothing once its
  // buffers have grown.
  const std::vector<int32_t>& take_touched();
  // Replicas reached through replica(r) since their last each_event check; clear_changed(r)
  // after checking it.
  bool changed(int32_t r) const { return changed_[static_cast<size_t>(r)] != 0; }
  void clear_changed(int32_t r) { changed_[static_cast<size_t>(r)] = 0; }
  // With tracking on (Checks::each_event), the replicas that became changed since the last
  // call, in replica order (one that was cleared meanwhile may be listed: test changed(r)), so
  // a check costs O(replicas reached), not O(replicas). Valid until the next call.
  void track_changes();
  const std::vector<int32_t>& take_changed();

  // With coalesced decode steps in a fleet (sim/decode_run.h DecodeRun::settle): every
  // replica(r) and engine(r) first settles r's pending run at now(), and `take_settled` lists
  // the replicas whose iteration end moved (each once per settle; valid until the next call),
  // for the windows to re-read.
  void set_settles(bool on) { settles_ = on; }
  const std::vector<int32_t>& take_settled();
  int32_t route(const RouteRequest& q);
  // The replica with the fewest outstanding tokens now (ReplicaLoad::outstanding_tokens), the
  // lowest index among equals, over every replica (the caller applies the mask and the
  // session's fit). From an index in which only the replicas whose load may have changed since
  // the last call are re-read (sim::Engine::watch_load): O(replicas changed x log replicas).
  int32_t least_outstanding() const;
  void set_mask(std::vector<char> mask) { mask_ = std::move(mask); }
  const std::vector<char>& mask() const { return mask_; }

  int32_t enlist(Component& c);
  Component& part(int32_t target) { return *components_[static_cast<size_t>(-1 - target)]; }

 private:
  const trace::Trace& trace_;
  std::vector<ReplicaSpec> specs_;
  Router& router_;
  void sync(int32_t r) const {
    sim::EventQueue& c = clocks_[static_cast<size_t>(r)];
    if (c.now() != queue_.now()) c.advance_to(queue_.now());
    if (settles_ && engines_[static_cast<size_t>(r)]->settle()) settled_.push_back(r);
  }

  sim::EventQueue queue_;
  mutable std::vector<sim::EventQueue> clocks_;  // by replica; never resized after construction
  std::vector<std::unique_ptr<sim::Engine>> engines_;
  Ledger ledger_;
  FleetCounts counts_;
  Parts parts_;
  std::vector<Component*> components_;  // by -1 - target
  std::vector<int32_t> touched_;        // replicas with an event at the current instant
  std::vector<int32_t> taken_;          // what take_touched handed back (swapped with touched_)
  std::vector<char> is_touched_;
  std::vector<char> changed_;
  bool track_changes_ = false;
  std::vector<int32_t> changed_list_;  // with tracking: replicas marked changed, unsorted
  std::vector<int32_t> changed_taken_;
  std::vector<char> mask_;  // the pool a route may use (empty: every replica)
  bool settles_ = false;
  mutable std::vector<int32_t> settled_;  // replicas whose run settle cut short
  std::vector<int32_t> settled_taken_;
  struct LoadKey {
    int64_t load = INT64_MAX;
    int32_t r = INT32_MAX;
    bool operator<(const LoadKey& o) const { return load != o.load ? load < o.load : r < o.r; }
  };
  // By replica: set by its engine when its load may have changed; never resized.
  mutable std::vector<uint8_t> load_dirty_;
  mutable MinTree<LoadKey> loads_;
};

}  // namespace isim::cluster
