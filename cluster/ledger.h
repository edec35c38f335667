// Ledger: every session's timings and counts across the replicas it ran on, and where each
// unfinished session is now.
//
// Contract:
// - One entry per trace session, indexed by its trace index. `where(i)` is the replica and
//   handle holding it, or {-1, -1} while it is waiting in the cluster (not arrived, skipped,
//   finished).
// - A session with a start dependency (trace::StartAfter) arrives when it fires: `arrived`
//   records that instant, and its record's arrival (and so TTFT, e2e) counts from it; every
//   other session's from its arrival_s.
// - A session's metrics travel with it (SessionState::m); when it finishes the ledger keeps its
//   SessionRecord, built then from the trace and these metrics (the metrics are not kept: one
//   record a session, never two copies). `take_records` (once, at the run's end) builds the
//   records of the sessions that did not finish, asking the replicas for those still on them,
//   and hands them all over.
// - `turn` records a completed turn and tallies its tokens (cluster/turn_tally.h) whatever
//   `keep_gaps` says; with keep_gaps (the default; a run turns it off before it starts when no
//   output needs every turn's gaps) it also appends the turn's gaps to the ledger's GapArena.
//   take_turn_ttfts, take_turns, take_gaps and take_tallies hand them over at the run's end.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "cluster/turn_tally.h"
#include "sim/metrics.h"
#include "sim/session_state.h"
#include "traces/session.h"

namespace isim::cluster {

// kNotStarted: a user-phases session whose user had no active window left (trace::StartAfter
// windows); `records` lists it with status "not_started".
enum class Status : uint8_t { kPending, kOnReplica, kFinished, kSkipped, kNotStarted };

struct Location {
  int32_t replica = -1;
  int32_t handle = -1;
};

class Ledger {
 public:
  explicit Ledger(const trace::Trace& trace);

  const Location& where(int32_t i) const { return loc_[static_cast<size_t>(i)]; }
  Status status(int32_t i) const { return status_[static_cast<size_t>(i)]; }
  void placed(int32_t i, int32_t replica, int32_t handle);
  void finished(int32_t i, const sim::SessionMetrics& m);
  void skipped(int32_t i) { set_status(i, Status::kSkipped); }
  void not_started(int32_t i) { set_status(i, Status::kNotStarted); }
  void arrived(int32_t i, sim::Nanos t);
  void turn_ttft(double s) { turn_ttfts_.push_back(s); }
  void keep_gaps(bool keep) { keep_gaps_ = keep; }
  // A completed turn sent at `start`, its first token at `first`, then `gaps` (t.span_ns set).
  void turn(sim::TurnRecord t, sim::Nanos start, sim::Nanos first,
            const std::vector<sim::GapRun>& gaps);

  // Every session's record, by trace index; `on_replica(r, h)` gives the metrics of a session
  // still on a replica. The ledger keeps none after.
  std::vector<sim::SessionRecord> take_records(
      const std::function<const sim::SessionMetrics&(int32_t, int32_t)>& on_replica);
  std::vector<double> take_turn_ttfts() { return std::move(turn_ttfts_); }  // at the run's end
  const std::vector<sim::TurnRecord>& turns() const { return turns_; }
  std::vector<sim::TurnRecord> take_turns() { return std::move(turns_); }  // at the run's end
  sim::GapArena take_gaps() { return std::move(gaps_); }
  bool keeps_gaps() const { return keep_gaps_; }
  sim::TokenTallies take_tallies();
  int64_t size() const { return static_cast<int64_t>(loc_.size()); }
  // Sessions whose status is kOnReplica now (kept as statuses change: the global check compares
  // it with what the replicas hold without scanning the whole trace).
  int64_t on_replica() const { return on_replica_; }

 private:
  void set_status(int32_t i, Status st);
  // Session i's record from its metrics and status.
  void fill(size_t i, const sim::SessionMetrics& m, Status st);

  const trace::Trace& trace_;
  std::vector<Location> loc_;
  std::vector<Status> status_;
  std::vector<sim::SessionRecord> records_;  // by trace index: the finished ones' are final
  std::vector<sim::Nanos> arrived_;          // by `arrived` (-1: not given); empty until the first
  std::vector<double> turn_ttfts_;
  std::vector<sim::TurnRecord> turns_;  // in completion order
  bool keep_gaps_ = true;
  sim::GapArena gaps_;
  ItlTally itl_;
  TokenBuckets buckets_;
  int64_t on_replica_ = 0;
};

}  // namespace isim::cluster
