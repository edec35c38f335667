// Engine: one replica's iteration-level scheduler (continuous batching over paged KV).
//
// Contract:
// - The engine reacts to three events on a shared EventQueue (arrival, intercept end,
//   iteration end) and starts an iteration whenever it is idle and has work. Each iteration
//   forms a batch within `max_num_seqs` and `max_num_batched_tokens` through its Scheduler,
//   asks the Executor for the forward time, and adds the stall of any synchronous swaps.
// - Queues are FCFS by original arrival; a policy may send discarded sessions to the back.
// - Out of GPU blocks while decoding, the most recently arrived running session is preempted
//   by recompute. If nothing can run because idle KV (paused or waiting sessions) fills the
//   GPU, the most recently arrived idle holder's KV is dropped (counted as idle_evictions).
// - A session that can never fit (its largest context needs more GPU blocks than exist, or,
//   under vllm-v0, more tokens than one batch holds) is skipped and reported, never looped on.
// - `check_invariants()` (run after every iteration when EngineConfig::check_invariants) throws
//   std::logic_error if blocks are not conserved per tier, a block is owned twice or by the
//   wrong session, a session is lost from its queue, or the clock went backwards.
// - With a live executor (Executor::live()), every swap and KV drop is also logged, in decision
//   order, with the block ids and token blocks involved, and each iteration is handed to
//   Executor::execute with its real steps; the clock then advances by the measured times.
//   Swap budgets are sized from the profile's predicted forward time.
// - The engine has no globals: a cluster can hold N engines on one queue.
#pragma once

#include <climits>
#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "sim/block_manager.h"
#include "sim/cost_model.h"
#include "sim/event_queue.h"
#include "sim/executor.h"
#include "sim/metrics.h"
#include "sim/policy.h"
#include "sim/session_state.h"
#include "traces/session.h"

namespace isim::sim {

struct EngineConfig {
  std::string scheduler = "vllm-v0";
  int32_t max_num_seqs = 256;
  int64_t max_num_batched_tokens = 4096;
  double gpu_memory_utilization = 0.9;
  double activation_reserve_gib = 2.0;  // activations, CUDA graphs, workspace
  double swap_space_gib = 64.0;         // CPU swap pool
  int64_t gpu_blocks = 0;               // > 0 overrides the derived count
  int64_t cpu_blocks = -1;              // >= 0 overrides the derived count
  double timeseries_interval_s = 1.0;
  bool prefix_caching = true;  // share cached prompt blocks across sessions (traces with hashes)
  bool check_invariants = false;
};

struct BlockCounts {
  int64_t gpu = 0, cpu = 0;
  int64_t block_bytes = 0;
};
// GPU blocks = (memory x utilisation - weights - activation reserve) / block bytes;
// CPU blocks = swap space / block bytes. Throws InputError when no GPU block fits.
BlockCounts derive_block_counts(const Profile& p, const EngineConfig& c);

class Engine;

// Content hashes of the full engine blocks of a session's prompt, from its trace prefix hashes
// (empty when it has none). InputError if the trace's block size is not a multiple of ours.
std::vector<uint64_t> prefix_chain(const trace::Session& s, int64_t block_tokens);

// Scheduler: composes the engine's batch-forming steps into one policy of admission.
class Scheduler {
 public:
  virtual ~Scheduler() = default;
  virtual std::string name() const = 0;
  virtual void schedule(Engine& e) = 0;
};
using SchedulerRegistry = Registry<Scheduler>;
const SchedulerRegistry& scheduler_registry();

enum EventType : int32_t { kEvArrival = 0, kEvInterceptEnd = 1, kEvIterationEnd = 2 };

// What one iteration did; handed to an observer (tests, traces of a run).
struct IterationRecord {
  Nanos start = 0;
  Nanos stall = 0;     // synchronous swap time before the forward
  Nanos forward = 0;   // executor time of the batch (0 for a transfer-only iteration)
  Nanos duration = 0;  // stall + max(forward, transfer-only time)
  int64_t batch_tokens = 0;
  int32_t decodes = 0;
  int32_t prefills = 0;
  int64_t recompute_tokens = 0;  // chunk tokens of sessions rebuilding discarded KV
  int64_t swap_out_tokens = 0;   // pipelined, moved this iteration (whole blocks)
  int64_t swap_in_tokens = 0;
  int64_t swap_out_budget_tokens = 0;
  int64_t swap_in_budget_tokens = 0;
};

class Engine {
 public:
  Engine(int32_t replica, EventQueue& queue, const EngineConfig& config, Executor& executor,
         Policy& policy, const trace::Trace& trace);

  // Schedules every session's arrival; skips (and reports) those that can never fit.
  void load();
  void handle(const Event& ev);
  // Starts an iteration if idle and there is work.
  void maybe_start();
  void set_observer(std::function<void(const IterationRecord&)> f) { observer_ = std::move(f); }
  bool busy() const { return busy_; }
  bool has_work() const;
  // Closes the waste accounting at `end` (the time of the last event).
  void close(Nanos end);
  // Appends a time-series sample of the current state at time t.
  void sample(Nanos t);

  // Results.
  std::vector<SessionRecord> records() const;
  const Counters& counters() const { return counters_; }
  const WasteBreakdown& waste() const { return waste_; }
  const std::vector<TimeSample>& timeseries() const { return timeseries_; }
  const std::vector<std::string>& skipped() const { return skipped_; }
  const std::vector<double>& turn_ttfts() const { return turn_ttfts_; }
  const BlockCounts& blocks() const { return block_counts_; }

  // Batch-forming steps, for Scheduler implementations.
  // Gives every decoding session its next token, preempting when out of blocks. Returns false
  // if it had to preempt.
  bool schedule_decodes();
  // Continues running sessions that are part-way through a chunked prefill.
  void continue_prefills();
  // Admits waiting sessions in queue order; `whole` admits only whole prefills.
  void admit_waiting(bool whole);
  // Swaps in swapped sessions (FCFS) while GPU blocks allow; the iteration stalls for it.
  void swap_in();
  // Sessions with pending pipelined recompute get chunks of at most max(S - R, 1) tokens in
  // total, R being the decodes already in the batch.
  void schedule_recompute_chunks();
  // Synchronous swap-ins waiting (vLLM v0 admits no new prompts while there are any).
  bool has_swapped() const { return !pipelined_ && !swapped_.empty(); }
  bool batch_has_prefill() const { return batch_prefills_ > 0; }

  // Read access for policies.
  Nanos now() const { return queue_.now(); }
  const SessionState& session(int32_t idx) const { return sessions_[static_cast<size_t>(idx)]; }
  const BlockPool& gpu() const { return gpu_; }
  const BlockPool& cpu() const { return cpu_; }
  const CostModel& cost_model() const { return executor_.cost_model(); }
  const EngineConfig& config() const { return config_; }
  int32_t num_sessions() const { return static_cast<int32_t>(sessions_.size()); }
  const std::vector<int32_t>& running() const { return running_; }
  const std::vector<int32_t>& paused() const { return paused_; }
  int64_t running_kv_tokens() const;  // M: KV tokens held by running sessions
  int32_t decoding_sessions() const;  // R estimate: running sessions past their prefill
  // GPU blocks the first waiting session needs for its whole pending prefill (0 if none), and
  // the blocks prefills may not take.
  int64_t waiting_head_need() const;
  int64_t prefill_reserve() const { return prefill_reserve_; }
  Nanos last_forward() const { return last_forward_; }
  int64_t block_tokens() const { return block_tokens_; }
  // Blocks that cross PCIe in one direction within `window` (whole blocks, per-copy overhead
  // included); `duplex` when both directions are busy.
  int64_t swap_budget_blocks(Nanos window, Direction dir, bool duplex) const;

  // Decisions for policies, valid on paused sessions only (std::logic_error otherwise).
  void discard_paused(int32_t idx);
  // Queues a pipelined swap-out of up to `max_blocks` leading GPU blocks for this iteration;
  // earlier requests get the budget first.
  void request_swap_out(int32_t idx, int64_t max_blocks = INT64_MAX);
  // Drops up to n leading held blocks (CPU first, then GPU) of a paused session; its next
  // prefill recomputes them. The last block is never dropped.
  void drop_leading(int32_t idx, int64_t n);
  const Counters& counters_view() const { return counters_; }
  void count_swap_fallback() { ++counters_.swap_fallback_discards; }

  void check_invariants() const;

 private:
  struct Entry {
    int32_t idx;
    int64_t tokens;
    bool decode;
    bool recompute;
    int64_t restore;  // leading dropped tokens recomputed within `tokens`
  };
  struct QueueKey {
    Nanos key;
    int32_t idx;
    bool operator<(const QueueKey& o) const { return key != o.key ? key < o.key : idx < o.idx; }
  };

  void on_arrival(int32_t idx);
  void on_intercept_end(int32_t idx);
  void on_iteration_end();
  void form_batch();
  void do_swap_outs();
  // Moves pipelined swaps within the budgets of a `window`-long iteration; returns the time a
  // transfer-only iteration needs (0 when there was compute to hide behind).
  Nanos progress_swaps(Nanos window, bool transfer_only);
  void move_blocks(SessionState& s, bool to_cpu, int64_t n);
  void finish_swap_in(SessionState& s);
  bool evict_idle_kv();
  void emit_token(SessionState& s);
  void complete_segment(SessionState& s);
  void drop_kv(SessionState& s);
  void preempt(int32_t idx);
  void add_to_running(int32_t idx);
  void remove_from_running(int32_t idx);
  bool grow_gpu(SessionState& s, int64_t tokens);
  // Adds a prefill chunk (recomputing dropped leading blocks first); false if it cannot.
  bool add_prefill(SessionState& s, int64_t chunk);
  bool recompute_lane(const SessionState& s) const;
  // Past its prefill: only the last emitted token lacks KV. A session preempted mid-segment
  // has emitted tokens but must rebuild its context before it decodes again.
  bool decoding(const SessionState& s) const {
    return s.decoded_in_seg > 0 && s.dropped_blocks == 0 && s.context == s.kv + 1;
  }
  void match_prefix(SessionState& s);
  void publish_prefix(SessionState& s);
  void account(Nanos from, Nanos to, bool in_batch_phase, bool stall);
  // Live executors: log a KV operation, and turn the batch into real steps.
  // Drops of the n_cpu leading CPU blocks and the n_gpu leading GPU blocks.
  void log_drop(const SessionState& s, int64_t n_cpu, int64_t n_gpu);
  void log_move(const SessionState& s, bool to_cpu, bool sync, const std::vector<BlockId>& src,
                const std::vector<BlockId>& dst, int64_t first_token_block);
  void build_steps(Nanos predicted_forward);
  int64_t block_bytes() const { return block_counts_.block_bytes; }

  int32_t replica_;
  EventQueue& queue_;
  EngineConfig config_;
  Executor& executor_;
  Policy& policy_;
  std::unique_ptr<Scheduler> scheduler_;
  const trace::Trace& trace_;
  BlockCounts block_counts_;
  int64_t block_tokens_;
  BlockPool gpu_;
  BlockPool cpu_;

  std::vector<SessionState> sessions_;
  std::vector<int32_t> running_;  // sorted by (arrival, idx)
  std::set<QueueKey> waiting_;
  std::set<QueueKey> swapped_;
  std::vector<int32_t> swap_out_pending_;                       // synchronous (policy `swap`)
  std::vector<std::pair<int32_t, int64_t>> swap_out_requests_;  // (session, max blocks), in order
  int64_t prefill_reserve_ = 0;                                 // GPU blocks only decodes may take
  std::vector<int32_t> paused_;                                 // paused sessions, in pause order
  bool pipelined_ = false;
  bool chunked_recompute_ = false;
  bool live_ = false;  // the executor runs iterations for real (LiveWork below)
  LiveWork work_;
  Nanos last_forward_ = 0;
  IterationRecord record_;
  std::function<void(const IterationRecord&)> observer_;

  // The batch in flight.
  bool busy_ = false;
  std::vector<Entry> batch_;
  BatchShape shape_;
  int64_t batch_tokens_ = 0;
  int32_t batch_prefills_ = 0;
  Nanos stall_ = 0;
  Nanos iter_start_ = 0;

  // Accounting.
  Counters counters_;
  WasteBreakdown waste_;
  Nanos accounted_until_ = -1;  // -1: nothing arrived yet
  std::vector<TimeSample> timeseries_;
  std::vector<std::string> skipped_;
  std::vector<double> turn_ttfts_;
  mutable Nanos last_check_ = 0;
  std::vector<uint64_t> block_stamp_;  // account(): which blocks were already counted
  uint64_t account_stamp_ = 0;
  bool shared_blocks_ = false;  // some session may share blocks (prefix caching)
};

}  // namespace isim::sim
