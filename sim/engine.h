// Engine: one replica's iteration-level scheduler (continuous batching over paged KV), built
// from parts that own their state, verbs and invariant check: SessionTable, ReplicaQueues,
// KvResidency, PrefixCache, SwapPlanner (and the policy's KvDecisions), WasteMeter,
// BatchInFlight, BatchContext (what a Scheduler forms the batch with), Handoff (disaggregation,
// migration, fetches), ReplicaNotes (listener, observers) and ReplicaView (what policies and
// routers read). The engine keeps the life cycle and the iteration, and delegates the rest.
//
// Contract:
// - The engine knows only the sessions admitted to it. It never reads a trace, never schedules
//   arrivals or intercept ends, and keeps no metrics beyond its own counters and waste: what a
//   session measured travels with it (SessionState::m) and goes out through EngineListener
//   when it pauses, finishes or leaves.
// - Sessions come in through `admit` (a new arrival), `resume` (an intercept of a session it
//   holds ended) and `admit_resumed` (an intercept ended and the session continues here, its
//   KV left on the replica that exported it); they leave by finishing or through Handoff.
// - Its own events (iteration end) go on the shared EventQueue with the replica's index as
//   target; the owner dispatches them to `handle`. `maybe_start` starts an iteration when the
//   replica is idle and has work. Each iteration forms a batch within `max_num_seqs` and
//   `max_num_batched_tokens` through its registered Scheduler, asks the Executor for the
//   forward time, and adds the stall of any synchronous swaps.
// - Queues are FCFS by original arrival (ties by trace index); a policy may send discarded
//   sessions to the back.
// - Out of GPU blocks while decoding, the most recently arrived running session is preempted
//   by recompute. If nothing can run because idle KV (paused or waiting sessions) fills the
//   GPU, the most recently arrived idle holder's KV is dropped (counted as idle_evictions), or
//   with none left the last running (prefilling) session is preempted.
// - `never_fits(session)` says why a session could never run here ("" if it can); the owner
//   skips such sessions instead of admitting them.
// - `check_invariants()` (after every iteration when EngineConfig::check_invariants; the
//   cluster can also run it after every event) only reads state and throws std::logic_error
//   naming the replica and the first fault, running the parts' checks in turn: pools, clock,
//   sessions, lists and queue keys, block owners and counts, the queued-token total.
// - With a live executor (Executor::live()), every swap and KV drop is also told to the
//   LiveLog (sim/live_log.h) in decision order, and each iteration is handed to
//   Executor::execute with its real steps; the clock then advances by the measured times.
//   Swap budgets are sized from the profile's predicted forward time.
// - The engine has no globals: a cluster holds N engines on one queue.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "sim/batch_context.h"
#include "sim/decode_run.h"
#include "sim/engine_config.h"
#include "sim/event_queue.h"
#include "sim/handoff.h"
#include "sim/policy.h"
#include "sim/replica_view.h"
#include "sim/scheduler.h"
#include "sim/swap_planner.h"
#include "traces/session.h"

namespace isim::sim {

// The engine's one event type (targets: sim/event_queue.h); its arg is the instant the
// iteration started.
enum EventType : int32_t { kEvIterationEnd = 0 };

class Engine final {
 public:
  Engine(int32_t replica, EventQueue& queue, const EngineConfig& config, Executor& executor,
         Policy& policy);
  Engine(const Engine&) = delete;

  void set_listener(EngineListener* l) { notes_.set_listener(l); }
  // The KV manager (not owned; null: LocalKvManager, today's behaviour).
  void set_kv_manager(KvManager* m) { kv_.set_manager(m); }
  const KvManager& kv_manager() const { return kv_.manager(); }
  // The listener, the iteration observer and the run observer (sim/replica_notes.h).
  ReplicaNotes& notes() { return notes_; }

  // Why `src` can never run on this replica ("" when it can).
  std::string never_fits(const trace::Session& src) const;
  // A new session arrives (its state from SessionState::arrive); returns its handle.
  int32_t admit(SessionState s);
  // The intercept of paused session `handle` ended and it continues here. `ended_at`: when
  // the intercept ended, if before now (its KV was in flight then); the turn's TTFT counts
  // from it. -1: now.
  void resume(int32_t handle, double intercept_s, Nanos ended_at = -1);
  // The intercept of a session ended and it continues here; its KV stayed elsewhere (it holds
  // none). Returns its handle.
  int32_t admit_resumed(SessionState s, double intercept_s, Nanos ended_at = -1);
  // Sessions and KV leaving and arriving (sim/handoff.h).
  Handoff& handoff() { return handoff_; }
  const Handoff& handoff() const { return handoff_; }

  void handle(const Event& ev);
  // Starts an iteration if idle and there is work: form_step, then launch_step with its times.
  void maybe_start();
  // A step formed and not yet launched: what the executor priced. A lockstep group
  // (cluster/lockstep.h) forms its cores' steps, then launches them to end together.
  struct Step {
    Nanos forward = 0;   // the forward pass (beside any pipelined copies)
    Nanos busy = 0;      // the step after its stall: forward or copies, plus CPU work
    int64_t tokens = 0;  // batched tokens
  };
  // Forms the next batch when idle with work and not held; nullopt when nothing runs (any
  // swap-outs that fell back to discards, or evictions, have happened).
  std::optional<Step> form_step();
  // Launches the formed step: it ends after the batch's stall plus `busy`. `coalesce`: the
  // steps after it may join it in one run (sim/decode_run.h; maybe_start's steps only).
  void launch_step(Nanos forward, Nanos busy, bool coalesce = false);
  // Until when this replica may run ahead (not owned; null: every step is its own event).
  void set_run_horizon(const RunHorizon* h) { run_.set_horizon(h); }
  // A pending coalesced run is brought to stepping's state at now() (DecodeRun::settle), for an
  // owner about to read or change this replica; true when its iteration end moved earlier, or
  // was handled now (a step ending at now(): the replica is idle, and its owner starts it as
  // after any iteration end).
  bool settle();
  // Coalesced runs planned and the steps they covered (sim/decode_run.h).
  const DecodeRun& decode_runs() const { return run_; }
  bool busy() const { return batch_.busy(); }
  // The earliest instant at which the iteration in flight, ending at `end`, could make the
  // owner schedule an event: `pause` is end + the intercept of a session that may finish its
  // segment there with one to follow, `finish` is `end` when a session may finish its last one.
  // kForever when none may (sim/engine_lookahead.cpp). Only reads.
  struct Lookahead {
    Nanos pause = kForever;
    Nanos finish = kForever;
  };
  Lookahead lookahead(Nanos end) const;
  // Sessions queued or running here (not paused, exporting or importing).
  bool has_work() const { return queues_.has_work(); }
  // Waste accounting and busy spans (open, close, waste, busy_spans: sim/waste_meter.h).
  WasteMeter& meter() { return meter_; }
  const WasteMeter& meter() const { return meter_; }
  const Counters& counters() const { return counters_; }
  // What policies, routers and the owner read (sim/replica_view.h).
  const ReplicaView& view() const { return view_; }
  // *flag is set to 1 whenever view().load() may have changed (ReplicaQueues::watch).
  void watch_load(uint8_t* flag) { queues_.watch(flag); }

  void check_invariants() const;

 private:
  // Tests only (tests/cluster/test_invariant_faults.cpp): plants faults in the parts to see
  // check_invariants catch each one. No production code defines or uses it.
  friend struct EngineTestAccess;

  Nanos now() const { return queue_.now(); }
  // The rest of an intercept's end: the next segment's input, the turn's counters, the queue.
  void begin_turn(int32_t h, double intercept_s, Nanos ended_at);
  void reserve_turn_blocks(SessionState& s) const;
  void form_batch();
  void on_iteration_end();
  // Adds the GPU time of a prefill entry's `recomputed` tokens (its first ones) to the counters.
  void count_recompute_time(const BatchEntry& e, int64_t recomputed, int64_t kv);
  void emit_token(SessionState& s);
  void start_export(SessionState& s);
  void complete_segment(SessionState& s);
  // The step just formed (preempting nobody) may start a coalesced run: the switch is on, no
  // one hears every iteration, and the policy stays out of the coming iterations.
  bool may_coalesce() const;

  int32_t replica_;
  EventQueue& queue_;
  EngineConfig config_;
  Executor& executor_;
  Policy& policy_;
  std::unique_ptr<Scheduler> scheduler_;
  Counters counters_;
  SessionTable table_;
  ReplicaQueues queues_;
  KvResidency kv_;
  PrefixCache prefix_;
  ReplicaNotes notes_;
  WasteMeter meter_;
  BatchInFlight batch_;
  SwapPlanner swaps_;
  BatchContext ctx_;
  Handoff handoff_;
  ReplicaView view_;
  DecodeRun run_;
};

}  // namespace isim::sim
