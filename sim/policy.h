// Policy: what happens to a session's KV when it pauses at an intercept.
//
// Contract:
// - `on_pause` is called once per pause, at the time the segment's last token is emitted, and
//   returns what to do with the KV: keep it on GPU, drop it (recompute on resume), or copy it
//   to CPU synchronously (the next iteration stalls for the transfer).
// - `resume_at_back()` true means a resumed session whose KV was discarded joins the waiting
//   queue as if it had just arrived (vLLM's discard); false keeps its original arrival order.
// - A policy sees its replica through a read-only ReplicaView and each session's past only
//   (sim/replica_view.h); it changes KV only through KvDecisions. One policy instance serves one
//   replica.
// - `before_iteration` runs before each iteration's batch is formed, for policies that
//   re-decide every iteration (min-waste): they may drop a paused session's KV
//   (KvDecisions::discard_paused) or ask for it to be swapped out within this iteration's PCIe
//   budget (KvDecisions::request_swap_out, in priority order). The baselines do nothing there.
// - `on_resume` is told when an intercept ends, on the replica where the session resumes
//   (estimators learn durations from it: `Oracle`-free, the duration is then the past).
// - `pipelined_swap()`: swaps move within per-iteration budgets beside compute, never
//   stalling; swapped sessions are brought back within the swap-in budget.
// - `chunked_recompute()`: sessions rebuilding discarded KV do so in chunks of at most
//   max(S - R, 1) tokens per iteration, mixed with the running decodes.
// - A policy is deterministic: equal inputs give equal decisions.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/registry.h"
#include "sim/replica_view.h"
#include "sim/session_state.h"

namespace isim::sim {

enum class PauseAction { kPreserve, kDiscard, kSwap };

class Policy {
 public:
  virtual ~Policy() = default;
  virtual std::string name() const = 0;
  virtual PauseAction on_pause(const SessionState& s, const ReplicaView& e) = 0;
  virtual bool resume_at_back() const { return false; }
  virtual void before_iteration(const ReplicaView&, KvDecisions&) {}
  // True when before_iteration would do nothing now, and keeps doing nothing until an event
  // (a pause, a resume, an arrival) changes the replica: decode steps may then be coalesced
  // (sim/decode_run.h). A policy that overrides before_iteration overrides this too.
  virtual bool quiet_before_iteration(const ReplicaView&) const { return true; }
  // `duration_s`: how long the intercept that just ended lasted (now the past).
  virtual void on_resume(const SessionState&, double /*duration_s*/, const ReplicaView&) {}
  virtual bool pipelined_swap() const { return false; }
  virtual bool chunked_recompute() const { return false; }
  // Share of GPU blocks that prefills may not take, kept for running decodes (Pensieve).
  virtual double reserved_gpu_fraction() const { return 0.0; }
  // Extra facts for the run's provenance (e.g. {"estimator", "history"}).
  virtual std::vector<std::pair<std::string, std::string>> describe() const { return {}; }
};

}  // namespace isim::sim
