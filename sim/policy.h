// Policy: what happens to a session's KV when it pauses at an intercept.
//
// Contract:
// - `on_pause` is called once per pause, at the time the segment's last token is emitted, and
//   returns what to do with the KV: keep it on GPU, drop it (recompute on resume), or copy it
//   to CPU synchronously (the next iteration stalls for the transfer).
// - `resume_at_back()` true means a resumed session whose KV was discarded joins the waiting
//   queue as if it had just arrived (vLLM's discard); false keeps its original arrival order.
// - `before_iteration` runs before each iteration's batch is formed, for policies that
//   re-decide every iteration (min-waste). The baselines do nothing there.
// - A policy is deterministic: equal inputs give equal decisions.
#pragma once

#include <memory>
#include <string>

#include "sim/session_state.h"
#include "traces/registry.h"

namespace isim::sim {

class Engine;

enum class PauseAction { kPreserve, kDiscard, kSwap };

class Policy {
 public:
  virtual ~Policy() = default;
  virtual std::string name() const = 0;
  virtual PauseAction on_pause(const SessionState& s, const Engine& e) = 0;
  virtual bool resume_at_back() const { return false; }
  virtual void before_iteration(Engine&) {}
};

}  // namespace isim::sim
