// Handoff: sessions and their KV leaving and arriving on one replica. Prefill/decode
// disaggregation (a session prefilled here leaves with its KV; one arrives with its KV over a
// link), migration of paused sessions (a role switch), lower-tier fetches, and the role
// switch's hold. The cluster moves the KV; this part holds the blocks at both ends while it is
// in flight.
//
// Contract:
// - An exporting session (Phase::kExporting) leaves with `finish_export`: its blocks are
//   released (published prompt blocks stay cached here) and its state, KV counted but held
//   nowhere, is returned for `reserve_import` on the decode replica, which holds blocks for it
//   (Phase::kImporting) until `finish_import` makes it a running, decoding session.
//   `can_import` says whether the blocks are free now.
// - A paused session's KV may move to another replica (a role switch): all of it on the GPU,
//   none dropped or bound for the CPU. `start_move` makes it an exporting session with
//   `moving_paused` set; the copy `reserve_import` takes on the other side becomes a paused
//   session again when `finish_import` lands it (no transfer time: no turn waits on it).
// - A paused session that holds no KV (exported) gets `tokens` of it back from a lower tier
//   with `reserve_fetch`: blocks are reserved for them (Phase::kImporting, moving_paused) and
//   they no longer count as recompute (saved, not recomputed).
// - `export_paused` hands a paused session out, its KV dropped and counted as lost (lost KV
//   reuse by migration); `drop_paused` drops it while the session stays.
#pragma once

#include <cstdint>
#include <utility>

#include "sim/replica_notes.h"
#include "sim/waste_meter.h"

namespace isim::sim {

class Handoff {
 public:
  Handoff(int32_t replica, const EventQueue& queue, SessionTable& table, ReplicaQueues& queues,
          KvResidency& kv, PrefixCache& prefix, WasteMeter& meter, ReplicaNotes& notes)
      : replica_(replica),
        queue_(queue),
        table_(table),
        queues_(queues),
        kv_(kv),
        prefix_(prefix),
        meter_(meter),
        notes_(notes) {}

  bool can_import(int64_t kv_tokens) const;
  int32_t reserve_import(SessionState s);
  // `transfer_time`: from the prefill's end to the landing (SessionMetrics::transfer_time).
  void finish_import(int32_t handle, Nanos transfer_time);
  SessionState finish_export(int32_t handle);
  // An exporting session stays and decodes here (its replica took the decode role).
  void keep_exported(int32_t handle);
  bool can_move_paused(int32_t handle) const;
  void start_move(int32_t handle);
  int32_t reserve_fetch(SessionState s, int64_t tokens);
  // Evicts idle KV (as when nothing can run) until `blocks` are free; false if it cannot.
  bool make_room(int64_t blocks);
  // Hands paused session `handle` out, its KV dropped and counted as lost to `why`.
  SessionState export_paused(int32_t handle, LostCause why);
  // Drops the KV of paused session `handle`, counted as lost to `why` (it stays here).
  void drop_paused(int32_t handle, LostCause why);
  // A worker restart (cluster/disagg.h switching.restart), on a replica with no work left:
  // every paused session's KV is dropped (lost to `why`) and the prefix cache emptied.
  // Returns the paused KV tokens dropped and the cached blocks forgotten.
  std::pair<int64_t, int64_t> restart(LostCause why);
  // Session `handle` was forked from (traces/session.h kFork): others may hold its blocks past
  // the prompt, so the accounting and the checks treat its whole chain as shareable.
  void share_chain(int32_t handle) { table_[handle].chain_shared = true; }
  // Whether the turn that session `handle` starts next runs its prefill for a decode replica.
  void set_export(int32_t handle, bool on) { table_[handle].export_after_prefill = on; }
  // No iteration starts before `t` (a role switch's cost).
  void hold_until(Nanos t) { hold_until_ = t; }
  Nanos held_until() const { return hold_until_; }

 private:
  int32_t replica_;
  const EventQueue& queue_;
  SessionTable& table_;
  ReplicaQueues& queues_;
  KvResidency& kv_;
  PrefixCache& prefix_;
  WasteMeter& meter_;
  ReplicaNotes& notes_;
  Nanos hold_until_ = 0;
};

}  // namespace isim::sim
