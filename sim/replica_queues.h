// ReplicaQueues: where each session on a replica stands: running, waiting, swapped, paused,
// exporting or importing, and the paused sessions listed for a synchronous swap-out.
//
// Contract:
// - Waiting and swapped queues are FCFS by key (original arrival, or a policy's or the
//   scheduler's reordering) with ties by trace index; `queued_tokens`, the prefill their
//   sessions needed when they joined, is kept in step with every move.
// - The running set is sorted by run_key (arrival, or admission order when the scheduler's
//   traits ask for it), ties by trace index; a preempted session rejoins waiting under its
//   arrival, or at the front (traits.preempt_to_front).
// - Moves set the phase the new list names; they change no KV.
// - `load()` is the prefill still to do for queued sessions (as they needed when they joined)
//   and running ones (recounted when asked after the running set or its progress changed), and
//   the decoding sessions, importing ones counted at once.
// - `watch(flag)`: every change that may change `load()` (a queue or list move, a token
//   requeue, `mark_stale`) sets *flag to 1, so an owner can keep replicas' loads in an index
//   and re-read only those whose flag is set (cluster/fleet.h). The owner clears it.
// - `check_lists` reads only: every held session is in exactly one list, the one its phase
//   names; queue keys match their sessions; swap_out_pending sessions are paused and listed
//   once. `check_queued` verifies the queued-token total.
#pragma once

#include <cstdint>
#include <set>
#include <vector>

#include "sim/replica_view.h"
#include "sim/scheduler.h"
#include "sim/session_table.h"

namespace isim::sim {

// Past its prefill: only the last emitted token lacks KV. A session preempted mid-segment has
// emitted tokens but must rebuild its context before it decodes again.
inline bool decoding(const SessionState& s) {
  return s.decoded_in_seg > 0 && s.dropped_blocks == 0 && s.context == s.kv + 1;
}

struct QueueKey {
  Nanos key;
  int32_t idx;  // trace index: the tie-break
  int32_t h;    // handle
  bool operator<(const QueueKey& o) const { return key != o.key ? key < o.key : idx < o.idx; }
};
using Queue = std::set<QueueKey>;

class ReplicaQueues {
 public:
  ReplicaQueues(SessionTable& table, int64_t block_tokens, SchedulerTraits traits)
      : table_(table), block_tokens_(block_tokens), traits_(traits) {}

  const std::vector<int32_t>& running() const { return running_; }
  const Queue& waiting() const { return waiting_; }
  const Queue& swapped() const { return swapped_; }
  const std::vector<int32_t>& paused() const { return paused_; }
  const std::vector<int32_t>& exporting() const { return exporting_; }
  const std::vector<int32_t>& importing() const { return importing_; }
  const std::vector<int32_t>& swap_outs() const { return swap_out_pending_; }

  // Session h joins the waiting queue under `key` (kWaiting), or the swapped one (kSwapped).
  void wait(int32_t h, Nanos key);
  void wait_swapped(int32_t h);
  // The waiting session at `it` starts running; returns the next waiting position.
  Queue::const_iterator admit(Queue::const_iterator it);
  // A swapped session's KV is all back (or was dropped): it waits under its arrival.
  void unswap(int32_t h);
  // A preempted session (already out of the running set) rejoins the waiting queue.
  void requeue_preempted(int32_t h);
  // Session h's queued prefill changed while it waited (its KV was dropped).
  void requeue_tokens(SessionState& s);
  // The running, paused, exporting and importing lists; `add` sets the phase the list names.
  void add(Phase list, int32_t h);
  void remove(Phase list, int32_t h);
  // Synchronous swap-outs (policy `swap`): listed at pause, cancelled when the session leaves
  // its pause first, taken all at once by the next iteration.
  void mark_swap_out(SessionState& s);
  void cancel_swap_out(SessionState& s);
  std::vector<int32_t> take_swap_outs();
  void mark_stale() {
    running_load_stale_ = true;
    load_changed();
  }
  void watch(uint8_t* flag) { watch_ = flag; }

  bool has_work() const;
  ReplicaLoad load() const;
  int64_t running_kv_tokens() const;
  int32_t decoding_sessions() const;
  int64_t waiting_head_need() const;
  void check_lists(int32_t replica) const;
  void check_queued(int32_t replica) const;

 private:
  friend struct EngineTestAccess;  // tests/cluster/test_invariant_faults.cpp plants faults
  void enqueue(Queue& q, int32_t h, Nanos key);
  Queue::iterator dequeue(Queue& q, Queue::const_iterator it);
  std::vector<int32_t>& list(Phase p);
  void load_changed() {
    if (watch_) *watch_ = 1;
  }

  SessionTable& table_;
  int64_t block_tokens_;
  SchedulerTraits traits_;
  int64_t admit_seq_ = 0;         // admission counter (admission_order)
  int64_t front_seq_ = 0;         // preemption counter (preempt_to_front)
  std::vector<int32_t> running_;  // handles, sorted by (run_key, trace index)
  Queue waiting_;
  Queue swapped_;
  std::vector<int32_t> paused_;            // paused handles, in pause order
  std::vector<int32_t> exporting_;         // prefilled, KV waiting to leave (pause order)
  std::vector<int32_t> importing_;         // KV arriving into reserved blocks
  std::vector<int32_t> swap_out_pending_;  // synchronous (policy `swap`)
  int64_t queued_tokens_ = 0;            // sum of queued_tokens over the waiting and swapped queues
  mutable int64_t running_pending_ = 0;  // prefill pending in the running set, last recount
  mutable int64_t running_decodes_ = 0;  // decoding sessions at the last recount
  mutable bool running_load_stale_ = false;
  uint8_t* watch_ = nullptr;  // set when load() may have changed (not owned)
};

}  // namespace isim::sim
