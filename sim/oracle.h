// Oracle: the one door to a session's future.
//
// Contract: nothing outside an `oracle` component may include this header. A policy or
// estimator that reads the true duration of an intercept says so in its name (the `oracle`
// duration estimator is the only one today); every other component sees a session's past only.
#pragma once

#include "sim/session_state.h"

namespace isim::sim {

struct Oracle {
  // The true duration of the intercept that paused session `s` is in (0 when it has none).
  static double intercept_duration_s(const SessionState& s) {
    const auto& ic = s.segment().intercept;
    return ic ? ic->duration_s : 0.0;
  }
};

}  // namespace isim::sim
