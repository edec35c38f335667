// WasteMeter: a replica's KV waste accounting (metrics.h WasteBreakdown) and its busy spans.
//
// Contract:
// - Accounting starts at `open(t)` (the cluster opens every replica at the first arrival; an
//   admission opens its replica) and runs to `close(end)`. Between iterations the GPU's used
//   blocks count as preserved; during an iteration's swap stall as swap_stall; during its
//   forward pass a running session's blocks count as active (or recompute while it rebuilds),
//   blocks shared by several running sessions once, and the rest of the used blocks as
//   preserved. Free blocks count as free throughout.
// - Busy spans are when the replica executed iterations (stalls included), back-to-back
//   iterations joined into one span, in time order.
// - `check_clock` throws (sim/invariant.h) when the clock went backwards since its last call.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/metrics.h"
#include "sim/prefix_cache.h"

namespace isim::sim {

class WasteMeter {
 public:
  WasteMeter(const SessionTable& table, const ReplicaQueues& queues, const KvResidency& kv,
             const PrefixCache& prefix)
      : table_(table), queues_(queues), kv_(kv), prefix_(prefix) {}

  // Starts the accounting at t, if it has not started.
  void open(Nanos t);
  // Closes the accounting at `end` (the time of the last event).
  void close(Nanos end);
  // An iteration starts at t: the time since the last one was idle.
  void catch_up(Nanos t);
  // The iteration from t: its swap stall, then its busy time.
  void iteration(Nanos t, Nanos stall, Nanos busy);
  // A decode step from t of `busy` (no stall) with the GPU's used and free blocks and the
  // batch's active and recompute blocks given: what iteration(t, 0, busy) would add
  // (sim/decode_run.h counts them without visiting the batch).
  void decode_step(Nanos t, Nanos busy, int64_t used, int64_t free, int64_t active,
                   int64_t recompute);
  // The running sessions' GPU blocks as a forward pass counts them (shared blocks once).
  struct BatchBlocks {
    int64_t active = 0, recompute = 0;
  };
  BatchBlocks batch_blocks() const;
  const WasteBreakdown& waste() const { return waste_; }
  const std::vector<Span>& busy_spans() const { return busy_spans_; }
  void check_clock(int32_t replica, Nanos now) const;

 private:
  void account(Nanos from, Nanos to, bool in_batch_phase, bool stall);
  void add_forward(double dt, double used, double active, double recompute);
  void add_span(Nanos t, Nanos end);

  const SessionTable& table_;
  const ReplicaQueues& queues_;
  const KvResidency& kv_;
  const PrefixCache& prefix_;
  WasteBreakdown waste_;
  Nanos accounted_until_ = -1;                 // -1: nothing arrived yet
  mutable std::vector<uint64_t> block_stamp_;  // batch_blocks(): blocks already counted
  mutable uint64_t account_stamp_ = 0;
  std::vector<Span> busy_spans_;
  mutable Nanos last_check_ = 0;
};

}  // namespace isim::sim
