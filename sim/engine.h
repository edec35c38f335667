// Engine: one replica's iteration-level scheduler (continuous batching over paged KV).
//
// Contract:
// - The engine knows only the sessions admitted to it. It never reads a trace, never schedules
//   arrivals or intercept ends, and keeps no metrics beyond its own counters and waste: what a
//   session measured travels with it (SessionState::m) and goes out through EngineListener
//   when it pauses, finishes or leaves.
// - Sessions come in through `admit` (a new arrival), `resume` (an intercept of a session it
//   holds ended) and `admit_resumed` (an intercept ended and the session continues here, its
//   KV left on the replica that exported it). `export_paused` hands a paused session out,
//   dropping its KV (lost KV reuse by migration).
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
//   with none left the last running (prefilling) session is preempted. A waiting session takes
//   cached prefix blocks only with a chunk that fits, so each eviction frees room for someone.
// - `never_fits(session)` says why a session could never run here ("" if it can); the owner
//   skips such sessions instead of admitting them.
// - `check_invariants()` (run after every iteration when EngineConfig::check_invariants; the
//   cluster can also run it after every event, cluster::Checks::each_event) only reads state
//   and throws std::logic_error naming the replica and the first fault: a pool's free, cached
//   and held blocks do not partition it; a block's refcount differs from the number of
//   sessions listing it; a block past a session's shareable prefix is held by another; a
//   session holds more or fewer blocks than its KV needs (engine_invariants.cpp lists the
//   exceptions); a session is in no list, in two, or in one its phase does not name; a queue
//   key disagrees with its session; or the clock went backwards.
// - With a live executor (Executor::live()), every swap and KV drop is also told to the
//   KvObserver (sim/live_log.h) in decision order, and each iteration is handed to
//   Executor::execute with its real steps; the clock then advances by the measured times.
//   Swap budgets are sized from the profile's predicted forward time.
// - The engine has no globals: a cluster holds N engines on one queue.
#pragma once

#include <climits>
#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

#include "sim/block_manager.h"
#include "sim/cost_model.h"
#include "sim/engine_config.h"
#include "sim/engine_listener.h"
#include "sim/event_queue.h"
#include "sim/executor.h"
#include "sim/kv_manager.h"
#include "sim/live_log.h"
#include "sim/metrics.h"
#include "sim/policy.h"
#include "sim/replica_view.h"
#include "sim/run_observer.h"
#include "sim/scheduler.h"
#include "sim/session_state.h"
#include "traces/session.h"

namespace isim::sim {

enum EventType : int32_t { kEvIterationEnd = 2 };

class Engine final : public ReplicaView, public KvDecisions, public BatchSteps {
 public:
  Engine(int32_t replica, EventQueue& queue, const EngineConfig& config, Executor& executor,
         Policy& policy);

  void set_listener(EngineListener* l) { listener_ = l; }
  // The KV manager (not owned; null: LocalKvManager, today's behaviour).
  void set_kv_manager(KvManager* m) { kv_ = m ? m : &local_kv_; }
  const KvManager& kv_manager() const { return *kv_; }
  void set_observer(std::function<void(const IterationRecord&)> f) { observer_ = std::move(f); }
  // A recorder of session activities and KV use (not owned; null: none, sim/run_observer.h).
  void set_run_observer(RunObserver* o) { obs_ = o; }
  // Live executors: the engine's KV operations and steps (sim/live_log.h).
  LiveLog* live_log() { return live_ ? &log_ : nullptr; }

  // Starts the waste accounting at t, if it has not started (the cluster opens every replica at
  // the first arrival; an admission opens its replica).
  void open(Nanos t);
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
  // Hands paused session `handle` out, its KV dropped and counted as lost to `why`.
  SessionState export_paused(int32_t handle, LostCause why);
  // Drops the KV of paused session `handle`, counted as lost to `why` (it stays here).
  void drop_paused(int32_t handle, LostCause why);

  // Disaggregation (engine_roles.cpp). An exporting session (Phase::kExporting) leaves with
  // `finish_export`: its blocks are released (published prompt blocks stay cached here) and
  // its state, KV counted but held nowhere, is returned for `reserve_import` on the decode
  // replica, which holds blocks for it (Phase::kImporting) until `finish_import` makes it a
  // running, decoding session. `can_import` says whether the blocks are free now.
  bool can_import(int64_t kv_tokens) const;
  int32_t reserve_import(SessionState s);
  // `transfer_time`: from the prefill's end to the landing (SessionMetrics::transfer_time).
  void finish_import(int32_t handle, Nanos transfer_time);
  SessionState finish_export(int32_t handle);
  // An exporting session stays and decodes here (its replica took the decode role).
  void keep_exported(int32_t handle);
  // A paused session's KV may move to another replica (a role switch): all of it on the GPU,
  // none dropped or bound for the CPU. `start_move` makes it an exporting session with
  // `moving_paused` set; the copy `reserve_import` takes on the other side becomes a paused
  // session again when `finish_import` lands it (no transfer time: no turn waits on it).
  bool can_move_paused(int32_t handle) const;
  void start_move(int32_t handle);
  // A paused session that holds no KV (exported) gets `tokens` of it back from a lower tier:
  // blocks are reserved for them (Phase::kImporting, moving_paused) and they no longer count
  // as recompute (saved, not recomputed); `finish_import` lands it as a paused session.
  int32_t reserve_fetch(SessionState s, int64_t tokens);
  // Evicts idle KV (as when nothing can run) until `blocks` are free; false if it cannot.
  bool make_room(int64_t blocks);
  // Session `handle` was forked from (traces/session.h kFork): others may hold its blocks past
  // the prompt, so the accounting and the checks treat its whole chain as shareable.
  void share_chain(int32_t handle) { S(handle).chain_shared = true; }
  // Whether the turn that session `handle` starts next runs its prefill for a decode replica.
  void set_export(int32_t handle, bool on) { S(handle).export_after_prefill = on; }
  // No iteration starts before `t` (a role switch's cost).
  void hold_until(Nanos t) { hold_until_ = t; }
  Nanos held_until() const { return hold_until_; }
  const std::vector<int32_t>& exporting() const { return exporting_; }
  const std::vector<int32_t>& importing() const { return importing_; }
  // Sessions queued or running here (not paused, exporting or importing).
  bool has_active_work() const { return has_work(); }

  void handle(const Event& ev);
  // Starts an iteration if idle and there is work.
  void maybe_start();
  bool busy() const { return busy_; }
  bool has_work() const;
  // Closes the waste accounting at `end` (the time of the last event).
  void close(Nanos end);
  // The current state, as one time-series sample at time t.
  TimeSample sample(Nanos t) const;

  const Counters& counters() const { return counters_; }
  const WasteBreakdown& waste() const { return waste_; }
  // When this replica executed iterations (swap stalls included): back-to-back iterations
  // joined into one span, in time order (metrics.h: the busy window).
  const std::vector<Span>& busy_spans() const { return busy_spans_; }
  size_t slot_count() const { return slots_.size(); }  // handles < this; free ones have idx -1

  // ReplicaView.
  int32_t replica() const override { return replica_; }
  Nanos now() const override { return queue_.now(); }
  const SessionState& session(int32_t h) const override { return slots_[static_cast<size_t>(h)]; }
  const std::vector<int32_t>& running() const override { return running_; }
  const std::vector<int32_t>& paused() const override { return paused_; }
  const BlockPool& gpu() const override { return gpu_; }
  const BlockPool& cpu() const override { return cpu_; }
  const CostModel& cost_model() const override { return executor_.cost_model(); }
  const EngineConfig& config() const override { return config_; }
  const BlockCounts& blocks() const override { return block_counts_; }
  int64_t block_tokens() const override { return block_tokens_; }
  int64_t running_kv_tokens() const override;
  int32_t decoding_sessions() const override;
  int64_t waiting_head_need() const override;
  int64_t prefill_reserve() const override { return prefill_reserve_; }
  Nanos last_forward() const override { return last_forward_; }
  const SwapBudget& swap_budget() const override { return swap_budget_; }
  ReplicaLoad load() const override;
  int64_t cached_prefix_blocks(const std::vector<uint64_t>& chain) const override;

  // KvDecisions.
  void discard_paused(int32_t h) override;
  void request_swap_out(int32_t h, int64_t max_blocks = INT64_MAX) override;
  void drop_leading(int32_t h, int64_t n) override;
  void count_swap_fallback() override { ++counters_.swap_fallback_discards; }

  // BatchSteps.
  bool schedule_decodes() override;
  void continue_prefills() override;
  void admit_waiting(bool whole) override;
  void swap_in() override;
  void schedule_recompute_chunks() override;
  bool has_swapped() const override { return !pipelined_ && !swapped_.empty(); }
  bool batch_has_prefill() const override { return batch_prefills_ > 0; }
  bool schedule_running_in_order() override;
  void admit_waiting_in_order() override;

  void check_invariants() const;

 private:
  // Tests only (tests/sim/test_invariant_faults.cpp): plants faults in a copy of the state to
  // see check_invariants catch each one. No production code defines or uses it.
  friend struct EngineTestAccess;

  struct QueueKey {
    Nanos key;
    int32_t idx;  // trace index: the tie-break
    int32_t h;    // handle
    bool operator<(const QueueKey& o) const { return key != o.key ? key < o.key : idx < o.idx; }
  };

  SessionState& S(int32_t h) { return slots_[static_cast<size_t>(h)]; }
  int32_t take_slot(SessionState&& s);
  void free_slot(int32_t h);
  // The rest of an intercept's end: the next segment's input, the turn's counters, the queue.
  void begin_turn(int32_t h, double intercept_s, Nanos ended_at);
  // Waiting and swapped queues, keeping queued_tokens_ in step.
  void enqueue(std::set<QueueKey>& q, int32_t h, Nanos key);
  std::set<QueueKey>::iterator dequeue(std::set<QueueKey>& q, std::set<QueueKey>::iterator it);
  void on_iteration_end();
  void form_batch();
  void do_swap_outs();
  // The iteration's forward estimate before its batch is formed: the running set's decodes,
  // or one saturated iteration T(S) when none decodes.
  Nanos swap_window() const;
  // Sizes this iteration's swap budget and plans its swap-ins (FCFS, before the policy runs).
  void plan_swaps();
  // Moves the requested swap-outs and the planned swap-ins; returns their PCIe time.
  Nanos progress_swaps();
  void move_blocks(SessionState& s, bool to_cpu, int64_t n);
  // A synchronous copy of n blocks whose destination is allocated: log, release, stall, count.
  void finish_sync_copy(SessionState& s, bool to_cpu, int64_t n);
  void finish_swap_in(SessionState& s);
  bool evict_idle_kv();
  // The last resort of evict_idle_kv: the latest-arriving swapped session holding GPU blocks.
  bool evict_half_swapped();
  bool preempt_stuck_prefill();  // after both: the last running session (false: none runs)
  void emit_token(SessionState& s);
  void start_export(SessionState& s);
  void complete_segment(SessionState& s);
  void drop_kv(SessionState& s, LostCause why);
  void add_recompute(SessionState& s, int64_t tokens, LostCause why);
  void take_recompute(SessionState& s, int64_t tokens, bool counted);
  void preempt(int32_t h);
  // Adds session h's next decode token to the batch; false if no block is free for it.
  bool push_decode(SessionState& s, int32_t h);
  // vLLM v1 helpers (engine_v1.cpp).
  // The chunk a prefill with `pending` tokens left gets out of `budget` (0: none fits).
  int64_t v1_chunk(const SessionState& s, int64_t pending, int64_t budget) const;
  // Whether a waiting session with (hits, unheld hits) may start a `chunk` of its `pending`.
  bool v1_admissible(const SessionState& s, std::pair<int64_t, int64_t> hit, int64_t pending,
                     int64_t chunk) const;
  void note_partial(int64_t pending, int64_t chunk);
  // Cached prompt blocks a session would hit now, and how many of them are unheld (taking
  // them uses free capacity); nothing is acquired.
  std::pair<int64_t, int64_t> preview_prefix(const SessionState& s) const;
  // Extends a session's hash chain over its full blocks past the prompt (hash_every_block).
  void extend_chain(SessionState& s) const;
  // Per-step CPU time (profile step_overhead) for the batch formed.
  Nanos step_overhead() const;
  void add_to_running(int32_t h);
  void remove_from_running(int32_t h);
  bool grow_gpu(SessionState& s, int64_t tokens);
  // Adds a prefill chunk (recomputing dropped leading blocks first); false if it cannot.
  bool add_prefill(SessionState& s, int32_t h, int64_t chunk);
  // add_prefill of min(pending, room) after any cached prefix (whole: all); false takes no block.
  bool start_prefill(SessionState& s, int64_t room, bool whole);
  bool recompute_lane(const SessionState& s) const;
  // Past its prefill: only the last emitted token lacks KV. A session preempted mid-segment
  // has emitted tokens but must rebuild its context before it decodes again.
  bool decoding(const SessionState& s) const {
    return s.decoded_in_seg > 0 && s.dropped_blocks == 0 && s.context == s.kv + 1;
  }
  void match_prefix(SessionState& s);
  // A session rebuilding from nothing (no KV anywhere) may start from cached blocks...
  bool can_match_prefix(const SessionState& s) const;
  // ...its leading chain blocks, short of its last context token.
  int64_t matchable_blocks(const SessionState& s) const;
  void publish_prefix(SessionState& s);
  // The running set's part of load(), recounted when asked after the set or its progress changed.
  void refresh_running_load() const;
  void account(Nanos from, Nanos to, bool in_batch_phase, bool stall);
  // Invariant check parts (engine_invariants.cpp).
  void check_block_owners() const;
  [[noreturn]] void name_misheld(const BlockPool& pool, bool gpu) const;
  void check_block_counts() const;
  void check_lists() const;
  // Leading GPU blocks of `s` that other sessions may also hold (its prompt-hash blocks).
  size_t shareable_gpu_blocks(const SessionState& s) const;
  // How many of s's GPU blocks hold the first `chain_blocks` entries of its chain (dropped and
  // CPU blocks come first in token order).
  static size_t gpu_blocks_within(const SessionState& s, int64_t chain_blocks);
  // Agent context signals (engine_signals.cpp).
  void apply_reset(SessionState& s);
  void release_worthless(std::vector<BlockId>& blocks);
  void finish_ended(SessionState& s);
  int64_t block_bytes() const { return block_counts_.block_bytes; }
  void count_turn(const SessionState& s);
  void record_iteration(Nanos t, Nanos forward, Nanos busy);
  // The run observer's hooks (engine_observe.cpp); each is a no-op without a recording one.
  Activity activity(const SessionState& s) const;
  void note(int32_t h);                 // session h's activity now, and the KV in use
  void note_gone(const SessionState& s);  // s leaves this replica
  void note_all();                      // every session held here, and the KV in use
  bool observing() const { return obs_ && obs_->recording(); }
  void note_busy(Nanos start, Nanos end);  // extends busy_spans_

  int32_t replica_;
  EventQueue& queue_;
  EngineConfig config_;
  Executor& executor_;
  Policy& policy_;
  std::unique_ptr<Scheduler> scheduler_;
  SchedulerTraits traits_;
  int64_t admit_seq_ = 0;              // admission counter (admission_order)
  int64_t front_seq_ = 0;              // preemption counter (preempt_to_front)
  int32_t partial_prefills_ = 0;       // this step: prefills that stay unfinished
  int32_t long_partial_prefills_ = 0;  // of them, longer than long_prefill_token_threshold
  EngineListener* listener_ = nullptr;
  LocalKvManager local_kv_;
  KvManager* kv_ = &local_kv_;
  BlockCounts block_counts_;
  int64_t block_tokens_;
  BlockPool gpu_;
  BlockPool cpu_;

  std::vector<SessionState> slots_;  // by handle
  std::vector<int32_t> free_slots_;  // handles to reuse, most recently freed last
  std::vector<int32_t> running_;     // handles, sorted by (arrival, trace index)
  std::set<QueueKey> waiting_;
  std::set<QueueKey> swapped_;
  std::vector<int32_t> swap_out_pending_;                       // synchronous (policy `swap`)
  std::vector<std::pair<int32_t, int64_t>> swap_out_requests_;  // (handle, max blocks), in order
  int64_t prefill_reserve_ = 0;                                 // GPU blocks only decodes may take
  std::vector<int32_t> paused_;                                 // paused handles, in pause order
  std::vector<int32_t> exporting_;  // prefilled, KV waiting to leave (pause order)
  std::vector<int32_t> importing_;  // KV arriving into reserved blocks
  Nanos hold_until_ = 0;
  bool hold_admissions_ = false;  // this instant preempted a stuck prefill: admit nobody
  Nanos iteration_start_ = 0;     // of the iteration in flight
  bool pipelined_ = false;
  bool chunked_recompute_ = false;
  bool live_ = false;  // the executor runs iterations for real (LiveLog below)
  LiveLog log_;
  Nanos last_forward_ = 0;
  IterationRecord record_;
  SwapBudget swap_budget_;                                 // this iteration's, swap-ins planned
  std::vector<std::pair<int32_t, int64_t>> swap_in_plan_;  // (handle, blocks), FCFS
  std::function<void(const IterationRecord&)> observer_;
  RunObserver* obs_ = nullptr;
  std::vector<Span> busy_spans_;
  int64_t queued_tokens_ = 0;            // sum of queued_tokens over the waiting and swapped queues
  mutable int64_t running_pending_ = 0;  // prefill pending in the running set, last iteration end
  mutable int64_t running_decodes_ = 0;  // decoding sessions at the last iteration end
  mutable bool running_load_stale_ = false;
  std::unordered_set<uint64_t> ever_published_;  // prefix hashes this replica computed

  // The batch in flight.
  bool busy_ = false;
  std::vector<BatchEntry> batch_;
  BatchShape shape_;
  int64_t batch_tokens_ = 0;
  int32_t batch_prefills_ = 0;
  Nanos stall_ = 0;

  // Accounting.
  Counters counters_;
  WasteBreakdown waste_;
  Nanos accounted_until_ = -1;  // -1: nothing arrived yet
  mutable Nanos last_check_ = 0;
  mutable std::vector<int32_t> listed_[2];  // check_block_owners' scratch (GPU, CPU), all 0
  mutable uint64_t pools_checked_[2] = {~uint64_t{0}, ~uint64_t{0}};  // versions last checked
  std::vector<uint64_t> block_stamp_;  // account(): which blocks were already counted
  uint64_t account_stamp_ = 0;
  bool shared_blocks_ = false;  // some session may share blocks (prefix caching)
};

}  // namespace isim::sim
