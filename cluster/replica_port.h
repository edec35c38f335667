// ReplicaPort: the listener one replica's engine talks to (sim/engine_listener.h). Outside a
// window it passes every call straight to the cluster; inside one (cluster/window.h) the
// replica runs apart from the fleet, maybe on another thread, and the port keeps what the
// calls would do to the fleet as Effects, each keyed by the iteration end that made it, for
// the cluster to apply after the window in one canonical order.
//
// Contract:
// - `direct()` (the default): every call goes to the target listener as it comes.
// - `hold(end, started)`: the next calls come from the iteration that ended at `end` and
//   started at `started`; they are kept (paused, finished, turn_first_token's TTFT,
//   segment_done's TurnRecord) in call order until taken from `effects()`. first_token and
//   evicting change nothing in a fleet that windows (no planner, no tiers); `prefilled` there
//   is a std::logic_error (an export needs roles, which never window).
// - Effects sort by (end, started, replica), then call order: the order in which the fleet's
//   single event queue handles those iteration ends (same-time events by insertion, and
//   iterations launch in replica order at each instant).
#pragma once

#include <cstdint>
#include <vector>

#include "sim/engine_listener.h"
#include "sim/metrics.h"
#include "sim/turn_metrics.h"

namespace isim::cluster {

struct Effect {
  enum Kind : uint8_t { kPaused, kFinished, kTurnTtft, kTurn };
  sim::Nanos end = 0;      // the iteration end that made it
  sim::Nanos started = 0;  // that iteration's start
  int32_t replica = 0;
  int32_t seq = 0;  // its place among the replica's effects of one window
  Kind kind = kPaused;
  int32_t session = 0;   // trace index
  sim::Nanos value = 0;  // kPaused: the intercept's duration; kTurnTtft: the TTFT; kTurn: its start
  sim::SessionMetrics m;  // kFinished
  sim::TurnRecord turn;   // kTurn, with its first token's time and its gaps (Ledger::turn)
  sim::Nanos first = 0;
  std::vector<sim::GapRun> gaps;
};

// When the session's current turn was sent: its arrival (segment 0) or its intercept's end.
sim::Nanos turn_start(const sim::SessionState& s);
// A completed turn's record as the ledger keeps it (replica r emitted its last token).
sim::TurnRecord turn_record(int32_t r, const sim::SessionState& s, int64_t outputs);

class ReplicaPort final : public sim::EngineListener {
 public:
  ReplicaPort(int32_t replica, sim::EngineListener& target) : replica_(replica), target_(target) {}

  void direct() { hold_ = false; }
  void hold(sim::Nanos end, sim::Nanos started) {
    hold_ = true;
    end_ = end;
    started_ = started;
  }
  std::vector<Effect>& effects() { return effects_; }

  void paused(int32_t replica, int32_t handle, const sim::SessionState& s,
              sim::Nanos duration) override;
  void finished(int32_t replica, const sim::SessionState& s) override;
  void turn_first_token(int32_t replica, const sim::SessionState& s, sim::Nanos ttft) override;
  void prefilled(int32_t replica, int32_t handle, const sim::SessionState& s,
                 sim::Nanos iteration_start) override;
  void first_token(int32_t replica, const sim::SessionState& s, sim::Nanos ttft) override;
  void segment_done(int32_t replica, const sim::SessionState& s, int64_t outputs,
                    double decode_s) override;
  void evicting(int32_t replica, const sim::SessionState& s) override;

 private:
  Effect& add(Effect::Kind k, int32_t session);

  int32_t replica_;
  sim::EngineListener& target_;
  bool hold_ = false;
  sim::Nanos end_ = 0, started_ = 0;
  std::vector<Effect> effects_;
};

}  // namespace isim::cluster
