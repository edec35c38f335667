// KvResidency: where a replica's KV lives. The GPU and CPU block pools, each session's block
// lists in token order [dropped][cpu_blocks][gpu_blocks], and the moves between them: growth,
// drops (recompute counted by cause), synchronous and pipelined copies, context resets, idle
// evictions.
//
// Contract:
// - Every drop and copy is told to the LiveLog in decision order when the executor is live
//   (sim/live_log.h); the sim executor keeps no log.
// - A drop counts the tokens the session will have to recompute, by LostCause; take_recompute
//   draws them back in a fixed cause order, so the split is deterministic.
// - `evict_idle` drops the GPU KV of the idle holder the KV manager gives up first (paused or
//   waiting; local: the latest arrival, ties to the higher trace index), or with none the latest
//   swapped session caught mid-swap; false when there is nothing to evict.
// - `check_pools` and `check_blocks` read only and throw (sim/invariant.h) at the first fault:
//   a pool's free, cached and held blocks do not partition it; a block's refcount differs from
//   the number of sessions listing it; a block past a session's shareable prefix is held by
//   another; a session holds more or fewer blocks than its KV (plus what the batch in flight
//   computes for it) needs. kv_residency.cpp lists the exceptions.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/block_manager.h"
#include "sim/engine_config.h"
#include "sim/engine_listener.h"
#include "sim/executor.h"
#include "sim/kv_manager.h"
#include "sim/live_log.h"
#include "sim/metrics.h"
#include "sim/replica_queues.h"
#include "sim/session_table.h"

namespace isim::sim {

// How many of s's GPU blocks hold the first `chain_blocks` entries of its chain (dropped and
// CPU blocks come first in token order, after any lead restored so far: restored_blocks).
size_t gpu_blocks_within(const SessionState& s, int64_t chain_blocks);
// Leading GPU blocks of `s` that other sessions may also hold: its prompt-hash blocks, or a fork
// family's whole chain.
size_t shareable_gpu_blocks(const SessionState& s);

class KvResidency {
 public:
  KvResidency(SessionTable& table, ReplicaQueues& queues, Counters& counters, Executor& executor,
              const EngineConfig& config, double reserved_gpu_fraction);

  const BlockPool& gpu() const { return gpu_; }
  BlockPool& gpu() { return gpu_; }
  const BlockPool& cpu() const { return cpu_; }
  BlockPool& cpu() { return cpu_; }
  const BlockCounts& blocks() const { return block_counts_; }
  int64_t block_tokens() const { return block_tokens_; }
  int64_t block_bytes() const { return block_counts_.block_bytes; }
  int64_t prefill_reserve() const { return prefill_reserve_; }  // GPU blocks only decodes take
  // The KV manager (not owned; null: LocalKvManager, today's behaviour).
  KvManager& manager() const { return *kv_; }
  void set_manager(KvManager* m) { kv_ = m ? m : &local_kv_; }
  bool live() const { return live_; }
  LiveLog& log() { return log_; }

  // Allocates the GPU blocks s needs to hold `tokens`; false (taking nothing) if not free.
  bool grow_gpu(SessionState& s, int64_t tokens);
  void add_recompute(SessionState& s, int64_t tokens, LostCause why);
  void take_recompute(SessionState& s, int64_t tokens, bool recomputed);
  // Releases all of s's KV; it will recompute what it held.
  void drop_kv(SessionState& s, LostCause why);
  // Drops up to n leading held blocks (CPU first, then GPU), never the last one.
  void drop_leading(SessionState& s, int64_t n);
  // Pipelined: moves n blocks of s between the pools (the GPU list's head to the CPU list's
  // tail, or back), counting bytes.
  void move_blocks(SessionState& s, bool to_cpu, int64_t n);
  // A synchronous copy of n blocks whose destination is allocated: log, release, count;
  // returns the copy's time, which stalls the iteration.
  Nanos sync_copy(SessionState& s, bool to_cpu, int64_t n);
  // A finishing session's blocks go back to the pools (published ones stay cached).
  void release(SessionState& s);
  // Agent context signals (traces/session.h ContextEvent): a reset at the start of the current
  // segment keeps the KV of the tokens that survive; an ended session's own blocks are
  // worthless. What happens to worthless blocks is the KV manager's call.
  // A turn starts: counts the tokens it finds on GPU, on CPU and to recompute (Counters).
  void count_turn(const SessionState& s);
  void apply_reset(SessionState& s);
  void finish_ended(SessionState& s);
  bool evict_idle(EngineListener* listener, int32_t replica, Nanos now);
  // All of a paused session's KV is on the GPU, none dropped or bound for the CPU.
  bool can_move_paused(const SessionState& s) const;

  void check_pools() const;
  // `in_flight[h]`: tokens the batch in flight computes for session h (their blocks are held).
  void check_blocks(int32_t replica, const std::vector<int64_t>& in_flight) const;

 private:
  friend struct EngineTestAccess;  // tests/cluster/test_invariant_faults.cpp plants faults
  // reset_tail: a reset's discarded tail (KvManager::frees_reset_tail), else an ended session's.
  void release_worthless(std::vector<BlockId>& blocks, bool reset_tail);
  bool evict_half_swapped();

  SessionTable& table_;
  ReplicaQueues& queues_;
  Counters& counters_;
  Executor& executor_;
  LocalKvManager local_kv_;
  KvManager* kv_ = &local_kv_;
  BlockCounts block_counts_;
  int64_t block_tokens_;
  BlockPool gpu_;
  BlockPool cpu_;
  int64_t prefill_reserve_ = 0;  // GPU blocks only decodes may take
  bool live_ = false;            // the executor runs iterations for real (LiveLog below)
  LiveLog log_;
  mutable std::vector<int32_t> listed_[2];  // check_blocks' scratch (GPU, CPU), all 0
  mutable uint64_t pools_checked_[2] = {~uint64_t{0}, ~uint64_t{0}};  // versions last checked
};

}  // namespace isim::sim
