// BatchContext: what a Scheduler forms an iteration's batch with. It reads the replica's queues
// and budgets and offers the primitive moves (add a decode, add a prefill chunk, start a
// waiting session's prefill, preempt, swap in); sim/batch_steps.h composes them into the steps
// schedulers share.
//
// Contract:
// - Each move keeps the replica's bookkeeping whole: blocks are allocated as entries are added
//   (a prefill never takes the blocks the policy reserves for decodes), a preempted session's
//   KV is dropped (counted as lost to preemption) and it rejoins the waiting queue, an admitted
//   one joins the running set. A move that cannot be made changes nothing and returns false.
// - A waiting session takes cached prefix blocks only with a chunk that fits, so each eviction
//   frees room for someone.
// - `hold_admissions()`: this instant preempted a stuck prefill (set by the engine), so no
//   step admits anyone or swaps anyone in.
// - `recompute_lane(s)`: the policy rebuilds KV in S - R chunks (min-waste) and s is one of
//   those rebuilds: only schedule_recompute_chunks schedules it.
#pragma once

#include <cstdint>
#include <utility>

#include "sim/batch.h"
#include "sim/prefix_cache.h"

namespace isim::sim {

class BatchContext {
 public:
  BatchContext(const EngineConfig& config, SessionTable& table, ReplicaQueues& queues,
               KvResidency& kv, PrefixCache& prefix, BatchInFlight& batch, Counters& counters,
               const CostModel& cost, bool pipelined, bool chunked_recompute)
      : config_(config),
        table_(table),
        queues_(queues),
        kv_(kv),
        prefix_(prefix),
        batch_(batch),
        counters_(counters),
        cost_(cost),
        pipelined_(pipelined),
        chunked_recompute_(chunked_recompute) {}

  // Reads.
  const EngineConfig& config() const { return config_; }
  const SessionState& session(int32_t h) const { return table_[h]; }
  const ReplicaQueues& queues() const { return queues_; }
  const KvResidency& kv() const { return kv_; }
  const BatchInFlight& batch() const { return batch_; }
  // Tokens the batch may still take (max_num_batched_tokens less what it holds).
  int64_t room() const { return config_.max_num_batched_tokens - batch_.tokens(); }
  int64_t saturation_tokens() const { return cost_.saturation_tokens(); }
  bool hold_admissions() const { return hold_admissions_; }
  bool chunked_recompute() const { return chunked_recompute_; }
  bool pipelined_swaps() const { return pipelined_; }
  bool recompute_lane(const SessionState& s) const;
  // Cached prompt blocks session h would hit now, and how many of them are unheld.
  std::pair<int64_t, int64_t> preview_prefix(int32_t h) const { return prefix_.preview(table_[h]); }

  // Moves.
  // Adds session h's next decode token; false if no block is free for it.
  bool push_decode(int32_t h);
  // Adds a prefill chunk (recomputing dropped leading blocks first); false if it cannot. A
  // dropped lead larger than max_num_batched_tokens is recomputed over several iterations, each
  // taking the whole blocks of `chunk` (restores_in_pieces); a smaller one only whole, in a chunk
  // that holds it.
  bool add_prefill(int32_t h, int64_t chunk);
  bool restores_in_pieces(const SessionState& s) const;
  // add_prefill of min(pending, room) after any cached prefix (whole: all); false takes no block.
  bool start_prefill(int32_t h, int64_t room, bool whole);
  // Takes the cached prefix blocks waiting session h hits (prefix caching).
  void match_prefix(int32_t h) { prefix_.match(table_[h]); }
  void mark_chunked(int32_t h) { table_[h].chunked = true; }
  // Running session h gives up its KV and waits again.
  void preempt(int32_t h);
  // The waiting session at `it` runs; returns the next waiting position.
  Queue::const_iterator admit(Queue::const_iterator it) { return queues_.admit(it); }
  // Synchronously swaps in the first swapped session if the GPU has room for all of it.
  bool swap_in_head();

  // The engine's: a new instant starts; nothing ran and no idle KV is left, so the last
  // running session is preempted (false: none runs).
  void new_instant() { hold_admissions_ = false; }
  bool preempt_stuck_prefill();

 private:
  // The next `blocks` of session h's lead, recomputed alone (add_prefill).
  bool add_lead_piece(int32_t h, int64_t blocks);
  // Takes `blocks` GPU blocks for the head of s's dropped lead.
  void restore_lead(SessionState& s, int64_t blocks);

  const EngineConfig& config_;
  SessionTable& table_;
  ReplicaQueues& queues_;
  KvResidency& kv_;
  PrefixCache& prefix_;
  BatchInFlight& batch_;
  Counters& counters_;
  const CostModel& cost_;
  bool pipelined_;
  bool chunked_recompute_;
  bool hold_admissions_ = false;  // this instant preempted a stuck prefill: admit nobody
};

}  // namespace isim::sim
