// What a `user-phases` run (traces/arrival.h) started: sessions per class per phase window.
//
// Contract: phase_starts(a, t, started_at) walks the phases `a.cycles` times (phase p of cycle
// c covers [D, D + duration_s), D the sum of the earlier durations) and counts, per window and
// per class (in the order classes first appear in the phases), the root copies of `t` (the
// sessions whose start dependency carries windows) that started in it: started_at(i) is session
// i's arrival in the run, or a negative value when it never started. Sessions that started
// after the last window (none should) are not counted. Deterministic.
// ran_out(a, t, started_at): per class (same order), the users whose last root copy started:
// they ran out of sessions (sessions_per_user) and may have idled while still active, so the
// class's concurrency fell below its phase's users.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "traces/arrival.h"
#include "traces/session.h"

namespace isim::trace {

struct PhaseStarts {
  int64_t cycle = 0, phase = 0;  // 0-based
  double begin_s = 0, end_s = 0;
  std::vector<std::pair<std::string, int64_t>> started;  // class -> root copies started
};

std::vector<PhaseStarts> phase_starts(const ArrivalSpec& a, const Trace& t,
                                      const std::function<double(size_t)>& started_at);
std::vector<std::pair<std::string, int64_t>> ran_out(
    const ArrivalSpec& a, const Trace& t, const std::function<double(size_t)>& started_at);

}  // namespace isim::trace
