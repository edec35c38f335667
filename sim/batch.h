// BatchInFlight: the iteration a replica formed or is executing: its entries, the shape the
// cost model prices, its swap stall and the record the observers get.
//
// Contract:
// - `begin` clears the previous batch; entries are added by the batch context only, a decode
//   as one token with its block already allocated, a prefill chunk with the dropped lead it
//   restores (the lead attends only to itself and the lead restored before it, the rest to
//   everything before it).
// - Between `start` and `end` the batch is in flight (`busy`): its sessions hold the blocks of
//   the tokens it computes, which their kv gains only at the end (KvResidency::check_blocks).
#pragma once

#include <cstdint>
#include <vector>

#include "sim/cost_model.h"
#include "sim/engine_listener.h"
#include "sim/live_log.h"
#include "sim/metrics.h"

namespace isim::sim {

class BatchInFlight {
 public:
  void begin();
  void add_decode(int32_t h, int64_t kv);
  // A prefill of `chunk` tokens, `restore` of them a dropped lead recomputed first (over the
  // `restore_from` lead tokens restored before it), the rest (`fresh`) after `kv` tokens;
  // `last` when the chunk ends the prefill (it yields logits).
  void add_prefill(int32_t h, int64_t chunk, bool recompute, int64_t restore, int64_t restore_from,
                   int64_t kv, bool last);
  void add_stall(Nanos t) { stall_ += t; }
  // The batch is formed: its shape's total (and, when the scheduler's traits say so, logits
  // for every scheduled sequence).
  void seal(bool logits_for_all);

  const std::vector<BatchEntry>& entries() const { return entries_; }
  const BatchShape& shape() const { return shape_; }
  int64_t tokens() const { return tokens_; }
  int32_t prefills() const { return prefills_; }
  Nanos stall() const { return stall_; }
  // Per-step CPU time (profile step_overhead) for the batch formed.
  Nanos step_overhead(const StepOverhead& o) const;

  // An iteration is being formed at t.
  void start(Nanos t) { start_ = t; }
  // Live executors: the measured stall replaces the predicted one.
  void set_stall(Nanos t) { stall_ = t; }
  // The formed batch runs with this forward time: from here on it is in flight.
  void launch(Nanos forward);
  // The iteration ends: it is no longer in flight; returns its entries, leaving none. The list
  // returned stays valid until the next `end`; its buffer and the batch's are reused (no heap
  // allocation per iteration once they have grown to the largest batch).
  const std::vector<BatchEntry>& end();
  bool busy() const { return busy_; }
  Nanos started() const { return start_; }
  Nanos last_forward() const { return last_forward_; }
  IterationRecord& record() { return record_; }
  // Completes the record of the iteration launched at t on `replica`.
  const IterationRecord& fill_record(int32_t replica, Nanos t, Nanos forward, Nanos busy);
  const IterationRecord& record() const { return record_; }
  // Tokens the batch in flight computes per handle (0 when none is in flight).
  std::vector<int64_t> in_flight(size_t handles) const;

 private:
  std::vector<BatchEntry> entries_;
  std::vector<BatchEntry> ended_;  // the entries `end` handed back (swapped with entries_)
  BatchShape shape_;
  int64_t tokens_ = 0;
  int32_t prefills_ = 0;
  Nanos stall_ = 0;
  bool busy_ = false;
  Nanos start_ = 0;  // of the iteration in flight
  Nanos last_forward_ = 0;
  IterationRecord record_;
};

}  // namespace isim::sim
