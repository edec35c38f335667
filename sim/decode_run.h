// DecodeRun: coalesced decode steps (EngineConfig::coalesce_decode). Between two events that
// change a replica's batch, the engine advances by whole decode steps, each priced from the
// batch's aggregates at O(1), under one scheduled iteration end; the sessions catch up once,
// when the run ends. Outputs are byte-identical to stepping one iteration at a time.
//
// Contract:
// - `plan(t0, busy1)` is called right after a step was launched at t0 (its busy time busy1,
//   no stall). When that step is a decode-only batch holding every running session, nothing
//   waiting or swapped could be admitted by the next steps (nothing waits or is swapped, the
//   running set is at max_num_seqs, or, for a scheduler with SchedulerTraits::steady_admission,
//   the head of each queue does not fit and needs blocks only), it plans steps 2..k of the same
//   batch: only the last may end a session's segment (k <= the fewest tokens any session has
//   left), the GPU pool holds the blocks their decodes cross into, and the last one ends by the
//   horizon's limit (RunHorizon: no sample is due before it, and no event may change or read the
//   replica before it unless the owner settles the run first). It returns the end of the last
//   step: t0 + busy1 when it plans none (k = 1).
// - While a run is pending the replica's state is exactly stepping's just after step 1 was
//   launched: blocks, counters, waste and the sessions' tokens of steps 2..k wait for `finish`
//   (or `settle`). Its load (ReplicaView::load) is stepping's at any instant inside the run.
// - `finish()` at the run's end (its iteration end event) applies steps 1..k-1 and launches
//   step k in stepping's order: each step's block allocations (running order) after the
//   previous step's block publishes (hash_every_block), its waste interval and counters; then
//   each session's k - 1 tokens (kv, context, decoded, token gaps run-length coded, longest gap,
//   last token time). The engine then ends step k as any step, with the batch's entries.
// - The cost model prices each planned step once (its extrapolation count as stepping's); a
//   step priced past the limit is taken back (CostModel::take_back_extrapolations).
// - `last_start()`: while a run is pending, when its last step starts (the end of step k - 1):
//   the start stepping gives that step's iteration end.
// - `settle(t)` brings a pending run to stepping's state at t, for an owner that reads or
//   changes the replica at t, inside the run (an owner that settles, e.g. a fleet:
//   Fleet::set_settles, so that its RunHorizon need not stop a run at its events): the steps that
//   ended before t are applied and the one in flight at t becomes the run's last (the steps after
//   it are dropped, their prices taken back; step 1 alone is a plain step), so none after t is
//   planned on a batch the owner may change. A step that ends at t itself becomes the last and
//   `ends_now` says so: stepping ended it before the owner's events at t and launched the next only
//   after them, so the engine ends it at once. `moved`: the iteration end is another (`end`,
//   `start`).
// - `runs()` / `steps()`: runs planned (k >= 2) and the steps they covered (k summed).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sim/batch.h"
#include "sim/engine_config.h"
#include "sim/prefix_cache.h"
#include "sim/waste_meter.h"

namespace isim::sim {

// Until when a replica may run ahead (set by its owner; without one nothing is coalesced).
class RunHorizon {
 public:
  virtual ~RunHorizon() = default;
  // The latest time a run whose first step ends at t1 may end at: nothing outside the replica
  // may change or read it before then, and no sample may be due in [t1, then).
  virtual Nanos run_limit(int32_t replica, Nanos t1) const = 0;
};

// Where a pending run's last step went when settle cut it short.
struct Settled {
  bool moved = false;     // the run's last step is now another: retime the iteration end
  bool ends_now = false;  // that step ends at the settle's instant: end it now
  Nanos end = 0;          // its end
  Nanos start = 0;        // and start
};

class DecodeRun {
 public:
  DecodeRun(int32_t replica, const EngineConfig& config, SessionTable& table, ReplicaQueues& queues,
            KvResidency& kv, PrefixCache& prefix, WasteMeter& meter, BatchInFlight& batch,
            Counters& counters, const CostModel& cost, bool steady_admission)
      : replica_(replica),
        config_(config),
        table_(table),
        queues_(queues),
        kv_(kv),
        prefix_(prefix),
        meter_(meter),
        batch_(batch),
        counters_(counters),
        cost_(cost),
        steady_admission_(steady_admission) {}

  void set_horizon(const RunHorizon* h) { horizon_ = h; }
  Nanos plan(Nanos t0, Nanos busy1);
  bool pending() const { return pending_; }
  // The steps the iteration in flight covers: k while a run is pending, else 1.
  int64_t steps_pending() const { return pending_ ? static_cast<int64_t>(end_.size()) : 1; }
  Nanos last_start() const { return end_.size() >= 2 ? end_[end_.size() - 2] : start_; }
  void finish();
  Settled settle(Nanos t);
  int64_t runs() const { return runs_; }
  int64_t steps() const { return steps_; }

 private:
  // Nothing waiting or swapped can join the batch while only its decodes run.
  bool queues_closed() const;
  // The residue (kv mod block_tokens) of the sessions whose decode in step j takes a block.
  size_t residue(int64_t j) const;

  int32_t replica_;
  const EngineConfig& config_;
  SessionTable& table_;
  ReplicaQueues& queues_;
  KvResidency& kv_;
  PrefixCache& prefix_;
  WasteMeter& meter_;
  BatchInFlight& batch_;
  Counters& counters_;
  const CostModel& cost_;
  bool steady_admission_;
  const RunHorizon* horizon_ = nullptr;

  bool pending_ = false;
  std::vector<int32_t> handles_;  // the batch, in running order
  std::vector<int64_t> kv0_;      // each one's kv before step 1
  // Positions by kv0 mod block_tokens: residue r's are by_residue_[bucket_start_[r] ..
  // bucket_start_[r + 1]), in running order.
  std::span<const int32_t> bucket(size_t r) const {
    return {by_residue_.data() + bucket_start_[r],
            static_cast<size_t>(bucket_start_[r + 1] - bucket_start_[r])};
  }
  std::vector<int32_t> by_residue_;
  std::vector<int64_t> bucket_start_, cursor_;
  std::vector<int64_t> bucket_recompute_;  // of them, sessions whose blocks count as recompute
  std::vector<Nanos> busy_;                // busy time of step j (index j - 1)
  std::vector<Nanos> forward_;             // its forward time
  std::vector<Nanos> end_;                 // its end
  std::vector<GapRun> gaps_;               // the gaps of steps 2..k, run-length coded
  std::vector<int64_t> counted_;           // extrapolations before step j was priced (index j - 1)
  int64_t priced_ = 0;                     // extrapolations once the run was planned
  Nanos start_ = 0;                        // step 1's start
  int64_t used1_ = 0, active1_ = 0, recompute1_ = 0;  // GPU blocks after step 1's formation
  int64_t runs_ = 0, steps_ = 0;
};

}  // namespace isim::sim
