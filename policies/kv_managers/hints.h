// The harness's retention hints as the KV managers read them (traces/session.h Retention).
//
// Contract: `active_priority(s, now, fallback)` is the highest priority among session s's
// current segment's hints that cover some of the KV it holds (begin < s.kv) and are still in
// force at `now` (a hint lasts from its segment's start, through the intercept after it, for at
// most `duration_s` when that is > 0); `fallback` when none is. Past only: the current
// segment's signals, which the harness sends as the segment starts.
#pragma once

#include <algorithm>
#include <cstdint>

#include "sim/session_state.h"

namespace isim::policy {

inline int32_t active_priority(const sim::SessionState& s, sim::Nanos now, int32_t fallback) {
  const sim::Nanos start = s.segments_done() == 0 ? s.arrival : s.intercept_end;
  int32_t best = -1;
  for (const trace::Retention& r : s.retention()) {
    if (r.begin >= s.kv) continue;  // covers none of the KV it holds
    if (r.duration_s > 0 && now >= start + sim::from_seconds(r.duration_s)) continue;
    best = std::max(best, r.priority);
  }
  return best < 0 ? fallback : best;
}

}  // namespace isim::policy
