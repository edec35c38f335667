// The engine's run-observer hooks (sim/run_observer.h): what each session is doing, and the KV
// in use, told at the points where they can change.
#include "sim/engine.h"

namespace isim::sim {

Activity Engine::activity(const SessionState& s) const {
  switch (s.phase) {
    case Phase::kWaiting:
      return Activity::kQueued;
    case Phase::kRunning:
      if (decoding(s)) return Activity::kDecode;
      return s.recompute_left > 0 ? Activity::kRecompute : Activity::kPrefill;
    case Phase::kPaused:
      return s.cpu_blocks.empty() ? Activity::kPaused : Activity::kPausedCpu;
    case Phase::kSwapped:
      return Activity::kSwapInWait;
    case Phase::kExporting:
      return s.moving_paused ? Activity::kPaused : Activity::kExporting;
    case Phase::kImporting:
      return s.moving_paused ? Activity::kPaused : Activity::kImporting;
    default:
      return Activity::kGone;
  }
}

void Engine::note(int32_t h) {
  if (!observing()) return;
  const SessionState& s = session(h);
  obs_->session(replica_, s, activity(s), now());
  obs_->kv_use(replica_, now(), gpu_.used(), cpu_.used());
}

void Engine::note_gone(const SessionState& s) {
  if (!observing()) return;
  obs_->session(replica_, s, Activity::kGone, now());
  obs_->kv_use(replica_, now(), gpu_.used(), cpu_.used());
}

void Engine::note_all() {
  if (!observing()) return;
  for (const SessionState& s : slots_)
    if (s.idx >= 0 && s.h >= 0) obs_->session(replica_, s, activity(s), now());
  obs_->kv_use(replica_, now(), gpu_.used(), cpu_.used());
}

}  // namespace isim::sim
