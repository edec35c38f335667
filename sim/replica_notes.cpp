// The run-observer hooks (sim/run_observer.h): what each session is doing, and the KV in use.
#include "sim/replica_notes.h"

namespace isim::sim {

namespace {

Activity activity(const SessionState& s) {
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

}  // namespace

void ReplicaNotes::note(int32_t h) {
  if (!observing()) return;
  const SessionState& s = table_[h];
  obs_->session(replica_, s, activity(s), queue_.now());
  obs_->kv_use(replica_, queue_.now(), kv_.gpu().used(), kv_.cpu().used());
}

void ReplicaNotes::note_gone(const SessionState& s) {
  if (!observing()) return;
  obs_->session(replica_, s, Activity::kGone, queue_.now());
  obs_->kv_use(replica_, queue_.now(), kv_.gpu().used(), kv_.cpu().used());
}

void ReplicaNotes::note_all() {
  if (!observing()) return;
  for (const SessionState& s : table_.slots())
    if (s.idx >= 0 && s.h >= 0) obs_->session(replica_, s, activity(s), queue_.now());
  obs_->kv_use(replica_, queue_.now(), kv_.gpu().used(), kv_.cpu().used());
}

void ReplicaNotes::iteration(const IterationRecord& r) {
  if (observer_) observer_(r);
  if (observing()) obs_->iteration(r);
}

}  // namespace isim::sim
