// Oracle: the one door to a session's future.
//
// Contract: nothing outside an `oracle` component may include this header. A policy or
// estimator that reads the true duration of an intercept says so in its name (the `oracle`
// duration estimator and the `oracle-belady` KV manager are the only ones today); every other
// component sees a session's past only.
#pragma once

#include <limits>

#include "sim/session_state.h"

namespace isim::sim {

struct Oracle {
  // The true duration of the intercept that paused session `s` is in (0 when it has none).
  static double intercept_duration_s(const SessionState& s) {
    const auto& ic = s.segment().intercept;
    return ic ? ic->duration_s : 0.0;
  }
  // Seconds from `now` until session `s` next needs its KV: 0 unless it is paused; for a paused
  // one, its intercept's end minus now (>= 0), or +infinity when it will never resume (no
  // segment follows the current one).
  static double next_use_s(const SessionState& s, Nanos now) {
    if (s.phase != Phase::kPaused) return 0.0;
    if (s.last_segment()) return std::numeric_limits<double>::infinity();
    const Nanos end = s.pause_start + from_seconds(intercept_duration_s(s));
    return end > now ? to_seconds(end - now) : 0.0;
  }
};

}  // namespace isim::sim
