// SwapPlanner: a replica's swaps per iteration, and the KV decisions a policy makes
// (KvDecisions, sim/replica_view.h).
//
// Contract:
// - `prepare` runs as an iteration is formed, before the policy's before_iteration: it copies
//   out the sessions paused under a synchronous swap (the iteration stalls for it; with the CPU
//   pool full the KV is dropped instead and counted as a swap fallback), then sizes this
//   iteration's pipelined budget (its window is the forward estimate: the running set's
//   decodes, or one saturated iteration T(S) when none decodes) and plans the swap-ins FCFS
//   before anything else takes it.
// - `progress` runs once the batch is formed: it moves the requested swap-outs in request
//   order, each as one copy of at most what is left of the budget, then the planned swap-ins
//   (fewer if the batch took GPU blocks since); a session runs again only when all of its KV
//   is back. It returns the link time.
// - KvDecisions are valid on a paused session only (std::logic_error otherwise).
#pragma once

#include <climits>
#include <cstdint>
#include <utility>
#include <vector>

#include "sim/batch.h"
#include "sim/replica_notes.h"
#include "sim/swap_budget.h"

namespace isim::sim {

class SwapPlanner final : public KvDecisions {
 public:
  SwapPlanner(SessionTable& table, ReplicaQueues& queues, KvResidency& kv, BatchInFlight& batch,
              ReplicaNotes& notes, Counters& counters, const CostModel& cost, bool pipelined)
      : table_(table),
        queues_(queues),
        kv_(kv),
        batch_(batch),
        notes_(notes),
        counters_(counters),
        cost_(cost),
        pipelined_(pipelined) {}

  void prepare();
  Nanos progress();
  const SwapBudget& budget() const { return swap_budget_; }
  bool pipelined() const { return pipelined_; }

  void discard_paused(int32_t h) override;
  void request_swap_out(int32_t h, int64_t max_blocks = INT64_MAX) override;
  void drop_leading(int32_t h, int64_t n) override;
  void count_swap_fallback() override { ++counters_.swap_fallback_discards; }

 private:
  void do_swap_outs();
  Nanos window() const;
  void plan();

  SessionTable& table_;
  ReplicaQueues& queues_;
  KvResidency& kv_;
  BatchInFlight& batch_;
  ReplicaNotes& notes_;
  Counters& counters_;
  const CostModel& cost_;
  bool pipelined_;
  SwapBudget swap_budget_;                                 // this iteration's, swap-ins planned
  std::vector<std::pair<int32_t, int64_t>> swap_in_plan_;  // (handle, blocks), FCFS
  std::vector<std::pair<int32_t, int64_t>> swap_out_requests_;  // (handle, max blocks), in order
};

}  // namespace isim::sim
