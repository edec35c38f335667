// What an engine tells those around it (sim/engine.h): each iteration's record, for observers
// (tests, traces of a run), and EngineListener, through which its sessions leave it.
//
// Contract: an EngineListener's calls come from inside the engine's event handling, in
// simulated-time order for one replica; the SessionState they pass is the engine's own and is
// valid only during the call (a finished session's slot is freed right after `finished`).
#pragma once

#include <cstdint>

#include "sim/session_state.h"
#include "sim/time.h"

namespace isim::sim {

// What one iteration did; handed to an observer (tests, traces of a run).
struct IterationRecord {
  int32_t replica = 0;
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
  Nanos swap_window = 0;  // the forward estimate the swap budget was sized by
  Nanos swap_link = 0;    // PCIe time of this iteration's pipelined copies (both directions)
};

// Where a replica's sessions go when they leave it or pause (the cluster listens).
class EngineListener {
 public:
  virtual ~EngineListener() = default;
  // Session `handle` paused at an intercept that, in the world, lasts `duration`.
  virtual void paused(int32_t replica, int32_t handle, const SessionState& s, Nanos duration) = 0;
  // The session emitted its last token; its slot is freed right after this call.
  virtual void finished(int32_t replica, const SessionState& s) = 0;
  // A resumed session emitted the first token of its new segment, `ttft` after its resume.
  virtual void turn_first_token(int32_t replica, const SessionState& s, Nanos ttft) = 0;
  // Disaggregation. A session marked export_after_prefill finished its prefill here (its first
  // token emitted) in an iteration that started at `iteration_start`; it now waits, holding
  // its KV, for `finish_export`.
  virtual void prefilled(int32_t, int32_t, const SessionState&, Nanos /*iteration_start*/) {}
  // A new session emitted its first token, `ttft` after its arrival.
  virtual void first_token(int32_t, const SessionState&, Nanos /*ttft*/) {}
  // A segment emitted its last token: `outputs` tokens over `decode_s` seconds after the first.
  virtual void segment_done(int32_t, const SessionState&, int64_t /*outputs*/,
                            double /*decode_s*/) {}
  // An idle eviction is about to drop paused session `s`'s KV, all of it on the GPU: a lower
  // tier may take a copy (cluster/kv_tiers.h). The engine's state must not be changed here.
  virtual void evicting(int32_t /*replica*/, const SessionState& /*s*/) {}
};

}  // namespace isim::sim
