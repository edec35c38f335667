// ReplicaNotes: who hears what happens on a replica. The owner's EngineListener (sessions
// pausing, finishing, leaving), an iteration observer, and the run observer's record of each
// session's activity and the KV in use (sim/run_observer.h).
//
// Contract:
// - `note(h)`, `note_gone(s)` and `note_all()` are told at the points where a session's
//   activity or the KV in use can change; each is a no-op without a recording run observer.
// - `iteration(record)` hands each started iteration to the observer and the run observer.
// - Nothing here changes the replica's state.
#pragma once

#include <cstdint>
#include <functional>

#include "sim/engine_listener.h"
#include "sim/event_queue.h"
#include "sim/kv_residency.h"
#include "sim/run_observer.h"

namespace isim::sim {

class ReplicaNotes {
 public:
  ReplicaNotes(int32_t replica, const EventQueue& queue, const SessionTable& table,
               const KvResidency& kv)
      : replica_(replica), queue_(queue), table_(table), kv_(kv) {}

  void set_listener(EngineListener* l) { listener_ = l; }
  EngineListener* listener() const { return listener_; }
  void set_observer(std::function<void(const IterationRecord&)> f) { observer_ = std::move(f); }
  // A recorder of session activities and KV use (not owned; null: none).
  void set_run_observer(RunObserver* o) { obs_ = o; }

  void note(int32_t h);                   // session h's activity now, and the KV in use
  void note_gone(const SessionState& s);  // s leaves this replica
  void note_all();                        // every session held here, and the KV in use
  void iteration(const IterationRecord& r);
  // Someone hears every iteration (the observer, or a recording run observer).
  bool watching() const { return observer_ || observing(); }

 private:
  bool observing() const { return obs_ && obs_->recording(); }

  int32_t replica_;
  const EventQueue& queue_;
  const SessionTable& table_;
  const KvResidency& kv_;
  EngineListener* listener_ = nullptr;
  std::function<void(const IterationRecord&)> observer_;
  RunObserver* obs_ = nullptr;
};

}  // namespace isim::sim
