// Arrivals: the trace's sessions coming into the fleet: their order, the next arrival, start
// dependencies (trace::StartAfter) and forks.
//
// Contract:
// - `load` checks the trace (every segment decodes >= 1 token; prefix hashes fit every block
//   size), skips sessions that fit no replica (each listed with why, `skipped()`), and orders
//   the other arrivals by (time, trace index). All bad input surfaces there, before any event
//   runs. Only the next arrival is on the queue at any time (a million pending arrivals would
//   make every queue operation pay for them); the order is the one scheduling them all would
//   give.
// - Start dependencies: a session that has one is not among those arrivals. When its
//   predecessor arrives or finishes (`finished`), its arrival is put on the queue at that
//   instant + delay (same priority as any arrival) and it arrives as any other, on every path
//   (one replica, a fleet, disaggregated); its records' arrival is that instant, not its
//   arrival_s. Until then the ledger has it as never arrived. A predecessor that fits no
//   replica is skipped as usual, but at the instant it would have arrived it starts every
//   session that depends on it. `load` throws std::logic_error for a dependency on the session
//   itself, a later one, or none of the trace, or a delay that is not finite >= 0 (code builds
//   them, not users). A dependency with windows (user-phases) fires only inside one: at the
//   next window's start when it falls between two, and never when none is left; then the
//   session and every session depending on it are not started (ledger kNotStarted, counted
//   as done, `not_started()`), and the run's result drops them from its records.
// - An arriving session goes where the router says (with roles, where Roles::place_arrival
//   says). The first arrival opens every replica's waste accounting and starts the planner.
// - Forks (traces/session.h kFork): a fork gets its parent's chain over the shared prefix when
//   the parent is on a replica now, and the parent is marked shared; routers see that chain
//   while the fork is placed (`fork_chain`).
// Events: kArrival (arg: trace index; the next of the ordered arrivals) and kStartAfter (arg:
// a dependent session whose predecessor arrived or finished).
#pragma once

#include <string>
#include <vector>

#include "cluster/fleet.h"

namespace isim::cluster {

class Arrivals final : public Component {
 public:
  enum Event : int32_t { kArrival = 0, kStartAfter = 1 };

  explicit Arrivals(Fleet& f) : Component(f) {}
  void load();
  void handle(const sim::Event& ev) override;
  // Session i finished: the sessions that start after its end are put on the queue.
  void finished(int32_t i);
  bool fits_all(int32_t i) const { return fits_all_[static_cast<size_t>(i)] != 0; }
  // The fork chain routers see for session i at block size bt; null: none.
  const std::vector<uint64_t>* fork_chain(int32_t i, int64_t bt) const {
    return fork_session_ == i && fork_block_tokens_ == bt ? &fork_chain_ : nullptr;
  }
  const std::vector<std::string>& skipped() const { return skipped_; }
  // Whether some session starts after another (trace::StartAfter): a finish can start one.
  bool starts_after_any() const { return !dependents_.empty(); }
  // Sessions never started: their user had no active window left (StartAfter windows).
  int64_t not_started() const { return not_started_; }

 private:
  enum class Trigger { kArrival, kFinish, kBoth };
  void schedule_next();
  void arrive(int32_t i);  // any arrival, dependent or not
  void open();             // the first arrival
  sim::SessionState arriving(int32_t i);
  void resolve_forks();
  void load_start_after();
  // Records a dependent session's arrival; false for a session that fits no replica, which
  // starts all its dependents now instead.
  bool starting(int32_t i);
  void start_dependents(int32_t p, Trigger why);
  void never_start(int32_t j);  // with every session depending on it, recursively
  bool has_start_after(int32_t i) const { return f_.source(i).start_after.session >= 0; }

  std::vector<std::string> skipped_;
  // Arrivals in (time, trace index) order; only the next one is on the queue at a time.
  std::vector<int32_t> order_;
  size_t next_ = 0;
  std::vector<char> fits_all_;  // the session fits every replica (no eligibility to check)
  bool opened_ = false;
  std::vector<int32_t> fork_parent_;  // by trace index: the parent's index, or -1
  // By predecessor: the sessions that start after it, in trace order; both empty when no
  // session of the trace has a start dependency.
  std::vector<std::vector<int32_t>> dependents_;
  std::vector<char> never_fits_;  // skipped by load
  // The chain of the fork being placed now (routers see it through fork_chain).
  int32_t fork_session_ = -1;
  int64_t fork_block_tokens_ = 0;
  std::vector<uint64_t> fork_chain_;
  int64_t not_started_ = 0;
};

}  // namespace isim::cluster
