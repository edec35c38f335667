// RunObserver: what a recorder of a run's events (experiments/run/event_trace.h writes them as a
// Chrome trace) is told by the engines of a run, in simulated time.
//
// Contract:
// - An engine with an observer (ReplicaNotes::set_run_observer; cluster::ReplicaSpec::observer)
// calls
//   it only while `recording()` is true; without one it pays one null-pointer test per hook.
// - `iteration`: every iteration as it starts (its duration is known then), as
//   ReplicaNotes::set_observer's records.
// - `session`: a session's activity may have changed at time t. The engine calls it at every
//   point where one can change (admission, resume, iteration start after the batch is formed,
//   iteration end, pause, finish, leaving or joining the replica) and at some where it did not:
//   the recorder keeps the last activity of each session (by SessionState::idx, global across
//   the fleet) and starts a span only when it differs. kGone: the session left this replica
//   (finished, exported, or handed to another replica).
// - `kv_use`: the replica's GPU and CPU blocks in use at time t, after the same points; the
//   recorder keeps only changes.
// - Times never go backwards for one replica; across replicas they are those of one event queue.
#pragma once

#include <cstdint>

#include "sim/session_state.h"
#include "sim/time.h"

namespace isim::sim {

struct IterationRecord;  // sim/engine_listener.h

// What a session is doing, as the engine that holds it sees it.
enum class Activity : uint8_t {
  kGone,        // not on this replica (finished, exported, moved)
  kQueued,      // waiting queue: new, resumed after an intercept, or preempted
  kPrefill,     // running, computing its prompt or returned tokens
  kRecompute,   // running, rebuilding KV it once had (discarded, preempted, evicted)
  kDecode,      // running, one token per iteration
  kPaused,      // in an intercept, its KV (if any) on the GPU or dropped
  kPausedCpu,   // in an intercept, some or all of its KV on the CPU (swapped out)
  kSwapInWait,  // intercept over, waiting for its KV to come back from the CPU
  kExporting,   // prefilled here, its KV waiting to leave for a decode replica
  kImporting,   // its KV arriving over a link into blocks reserved here
};

class RunObserver {
 public:
  virtual ~RunObserver() = default;
  // False once the recorder stopped (its event limit): the engines skip every call.
  virtual bool recording() const = 0;
  virtual void iteration(const IterationRecord& r) = 0;
  virtual void session(int32_t replica, const SessionState& s, Activity a, Nanos t) = 0;
  virtual void kv_use(int32_t replica, Nanos t, int64_t gpu_blocks, int64_t cpu_blocks) = 0;
};

}  // namespace isim::sim
