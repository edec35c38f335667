// What components outside the engine may see of a replica, and the KV decisions they may make.
//
// Contract:
// - ReplicaView is read-only: policies, routers and estimators observe a replica through it
//   (sim/replica_view.cpp answers from the engine's parts).
//   Sessions are named by the replica's handles (the ints in `paused()`, `running()`), which stay
//   valid while the session is on the replica; `session(h).idx` is its stable trace index, the
//   key every tie-break uses. A SessionState shows only the past (sim/session_state.h).
// - KvDecisions are the only changes a policy may make, each valid on a paused session only
//   (std::logic_error otherwise), and each takes effect within the current iteration.
// - `load()` is the replica's load now: the prefill still to do for its queued sessions (as
//   they needed when they joined the queue) and its running ones (as of the last iteration
//   end), and its decoding sessions. A session routed to it counts at once, so a burst spreads.
#pragma once

#include <climits>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/block_manager.h"
#include "sim/cost_model.h"
#include "sim/metrics.h"
#include "sim/session_state.h"
#include "sim/swap_budget.h"
#include "sim/time.h"

namespace isim::sim {

struct EngineConfig;

struct BlockCounts {
  int64_t gpu = 0, cpu = 0;
  int64_t block_bytes = 0;
  std::string gpu_rule;  // how `gpu` was derived, with every term, for the user
};

struct ReplicaLoad {
  int64_t queued_prefill_tokens = 0;  // prefill still to do for queued and running sessions
  int64_t decode_sequences = 0;       // running sessions past their prefill
  int64_t outstanding_tokens() const { return queued_prefill_tokens + decode_sequences; }
};

class SessionTable;
class ReplicaQueues;
class KvResidency;
class PrefixCache;
class SwapPlanner;
class BatchInFlight;
class EventQueue;
class Scheduler;

// A read-only window onto one replica's parts (the engine builds one over its own); the
// accessors below answer from them.
class ReplicaView {
 public:
  ReplicaView(int32_t replica, const EventQueue& queue, const EngineConfig& config,
              const CostModel& cost, const SessionTable& sessions, const ReplicaQueues& queues,
              const KvResidency& kv, const PrefixCache& prefix, const SwapPlanner& swaps,
              const BatchInFlight& batch, const Counters& counters)
      : replica_(replica),
        queue_(queue),
        config_(config),
        cost_(cost),
        sessions_(sessions),
        queues_(queues),
        kv_(kv),
        prefix_(prefix),
        swaps_(swaps),
        batch_(batch),
        counters_(counters) {}

  int32_t replica() const { return replica_; }
  Nanos now() const;
  const SessionState& session(int32_t handle) const;
  const std::vector<int32_t>& running() const;
  const std::vector<int32_t>& paused() const;
  const BlockPool& gpu() const;
  const BlockPool& cpu() const;
  const CostModel& cost_model() const { return cost_; }
  const EngineConfig& config() const { return config_; }
  const BlockCounts& blocks() const;
  int64_t block_tokens() const;
  int64_t running_kv_tokens() const;  // M: KV tokens held by running sessions
  int32_t decoding_sessions() const;  // R estimate: running sessions past prefill
  // GPU blocks the first waiting session needs for its whole pending prefill (0 if none), and
  // the blocks prefills may not take.
  int64_t waiting_head_need() const;
  int64_t prefill_reserve() const;
  Nanos last_forward() const;
  // This iteration's pipelined swap budget exactly as the engine will apply it
  // (sim/swap_budget.h): its window is the iteration's forward estimate, and the swap-ins the
  // engine planned are already taken. Swap-outs asked for with request_swap_out are moved in
  // request order, each as one copy of at most `blocks_that_fit` blocks of what is left, so a
  // policy that takes its requests from a copy of this budget gets exactly what it planned.
  const SwapBudget& swap_budget() const;
  ReplicaLoad load() const;
  // Leading blocks of `chain` (content hashes in this replica's block size) that the replica's
  // GPU prefix cache holds now.
  int64_t cached_prefix_blocks(const std::vector<uint64_t>& chain) const;
  // The current state, as one time-series sample at time t.
  TimeSample sample(Nanos t) const;
  const Counters& counters() const { return counters_; }
  // The parts themselves, for readers that need more than the figures above.
  const SessionTable& sessions() const { return sessions_; }
  const ReplicaQueues& queues() const { return queues_; }
  const KvResidency& kv() const { return kv_; }
  const BatchInFlight& batch() const { return batch_; }

 private:
  int32_t replica_;
  const EventQueue& queue_;
  const EngineConfig& config_;
  const CostModel& cost_;
  const SessionTable& sessions_;
  const ReplicaQueues& queues_;
  const KvResidency& kv_;
  const PrefixCache& prefix_;
  const SwapPlanner& swaps_;
  const BatchInFlight& batch_;
  const Counters& counters_;
};

// Why `src` could never run on the replica `v` shows under scheduler `s` ("" when it can): its
// context outgrows the GPU blocks prefills may use, or the token budget of a scheduler that
// prefills whole.
std::string never_fits(const ReplicaView& v, const Scheduler& s, const trace::Session& src);

class KvDecisions {
 public:
  virtual ~KvDecisions() = default;
  virtual void discard_paused(int32_t handle) = 0;
  // Queues a pipelined swap-out of up to `max_blocks` leading GPU blocks for this iteration;
  // earlier requests get the budget first.
  virtual void request_swap_out(int32_t handle, int64_t max_blocks = INT64_MAX) = 0;
  // Drops up to n leading held blocks (CPU first, then GPU) of a paused session; its next
  // prefill recomputes them. The last block is never dropped.
  virtual void drop_leading(int32_t handle, int64_t n) = 0;
  virtual void count_swap_fallback() = 0;
};

}  // namespace isim::sim
