// Executor: where an iteration's time comes from. The engine hands it each batch and each swap
// and advances the clock by what it returns.
//
// Contract:
// - `run(batch)` returns the forward time of one iteration (>= 0).
// - `transfer(...)` returns the time to move `bytes` in `copies` copy calls over PCIe.
// - `cost_model()` is the profile-based model that policies use for estimates (min-waste),
//   whichever executor runs; live executors also carry one.
// - The `sim` executor computes both from the profile and is deterministic.
// - Live executors (`live() == true`) execute the iteration for real. The engine then also
//   calls `begin` once before the first event, and per iteration `execute(work)` with the real
//   batch (block tables, token positions) and the ordered log of KV operations decided since
//   the previous iteration (swaps and drops, with block ids of the engine's pools, which map one
//   to one onto the executor's real pools). The engine's clock advances by the measured times
//   `execute` returns (virtual time: intercepts and arrivals stay virtual). `run`/`transfer` are
//   then predictions only, used to size swap budgets and synchronous stalls before the real
//   ones are measured.
// - `report()` is what an executor has to say after the run (live: measured seconds, integrity
//   violations, every session's greedy token stream); the sim executor reports nothing.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/params.h"
#include "core/registry.h"
#include "sim/block_manager.h"
#include "sim/cost_model.h"
#include "traces/session.h"

namespace isim::sim {

// Parameters from YAML (`executor: {name: live-cpu, key: value}`) or `-p executor.key=value`;
// errors name `executor.KEY` unless `where` says otherwise (core/params.h).
struct ExecutorParams : Params {
  ExecutorParams() : Params({}, "executor") {}
  using Params::Params;
};

// One sequence's work in a live iteration: `tokens` new positions from `kv_before`, attending
// to `blocks` (exactly ceil((kv_before + tokens) / block_tokens) GPU block ids, in token order).
struct LiveStep {
  int32_t session = 0;  // index into the trace
  int64_t kv_before = 0;
  int64_t tokens = 0;
  bool logits = false;     // produces the session's next token
  bool recompute = false;  // rebuilds KV the session held before
  std::vector<BlockId> blocks;
};

// A KV operation the engine decided, in the order it decided them.
struct KvOp {
  enum class Kind : uint8_t { kSwapOut, kSwapIn, kDrop };
  Kind kind = Kind::kDrop;
  bool sync = true;  // swaps: before the forward (a stall) or pipelined beside it
  int32_t session = 0;
  // Swaps: block src[i] of the source tier moves to dst[i] of the other, holding the session's
  // token block token_block[i]. Drops only: blocks src[i] (on the CPU tier where on_cpu[i])
  // holding token block token_block[i] are released; `kv_tokens` of the session were valid.
  std::vector<BlockId> src, dst;
  std::vector<int64_t> token_block;
  std::vector<uint8_t> on_cpu;
  int64_t kv_tokens = 0;
};

struct LiveWork {
  std::vector<KvOp> ops;  // every sync op and drop precedes every pipelined swap
  std::vector<LiveStep> steps;
  Nanos predicted_forward = 0;  // what cost_model() predicts for this batch (0 when empty)
  bool with_prefill = false;    // the batch holds a prefill or recompute chunk
};

// Measured times of one live iteration.
struct LiveTimes {
  Nanos stall = 0;  // synchronous swaps before the forward
  Nanos busy = 0;   // forward with the pipelined copies beside it (or the copies alone)
  Nanos forward = 0;
};

struct ExecutorReport {
  std::vector<std::pair<std::string, std::string>> facts;  // summary.json "executor" section
  std::vector<std::string> violations;                     // integrity failures, in order
  std::vector<std::vector<int32_t>> tokens;                // per session: its whole token stream
  bool live = false;

  // The value of fact `key`, or "" when the report has none.
  std::string fact(const std::string& key) const {
    for (const auto& [k, v] : facts)
      if (k == key) return v;
    return "";
  }
};

class Executor {
 public:
  virtual ~Executor() = default;
  virtual std::string name() const = 0;
  virtual Nanos run(const BatchShape& batch) = 0;
  virtual Nanos transfer(int64_t bytes, int64_t copies, Direction dir, bool duplex) = 0;
  virtual const CostModel& cost_model() const = 0;

  virtual bool live() const { return false; }
  virtual void begin(const trace::Trace& /*trace*/, int64_t /*gpu_blocks*/,
                     int64_t /*cpu_blocks*/) {}
  virtual LiveTimes execute(const LiveWork& work);  // live executors only
  virtual ExecutorReport report() const { return {}; }
};

class SimExecutor final : public Executor {
 public:
  explicit SimExecutor(const Profile& p) : model_(p) {}
  std::string name() const override { return "sim"; }
  Nanos run(const BatchShape& batch) override { return model_.forward(batch); }
  Nanos transfer(int64_t bytes, int64_t copies, Direction dir, bool duplex) override {
    return model_.transfer(bytes, copies, dir, duplex);
  }
  const CostModel& cost_model() const override { return model_; }

 private:
  CostModel model_;
};

using ExecutorRegistry = Registry<Executor, const Profile&, const ExecutorParams&>;
// Adds `sim` to a registry. Live executors are added by the layer that owns them
// (live/live_executor.h), which also builds the registry the front end uses.
void add_sim_executor(ExecutorRegistry& reg);
// A registry holding only `sim` (for code below the live layer).
const ExecutorRegistry& executor_registry();

}  // namespace isim::sim
