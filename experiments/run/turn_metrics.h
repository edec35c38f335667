// Turn-level metrics that need the spec: goodput under the turn SLO, time windows, and the time
// to recover after a load shift. The per-turn records and their definitions: sim/turn_metrics.h.
//
// Contract:
// - A turn meets the turn SLO (experiments/spec/slo.h TurnSlo) when it completed and each limit
//   given holds: request TTFT <= slo.request_ttft_s, itl_max <= slo.itl_max_s (a turn with
//   fewer than 2 outputs has no itl_max: not held against it).
// - turn_goodput: turns = every turn of the trace (the segments of all its sessions, so turns
//   that never ran or completed miss); share = met / turns; per_s = met / busy window (0 when
//   empty). `set` only with a turn-level limit.
// - time_windows: windows [kW, (k+1)W), k = 0 .. the window of the latest turn start or
//   session arrival; turns by their start, sessions (request latency) by arrival. Statistics
//   over no values are < 0 (null); goodput_share is met / turns started in the window (< 0
//   without a turn SLO or turns).
// - recovery_time: 30 s buckets [shift + 30k, shift + 30(k+1)) of turns by start. A bucket is
//   good when it has at least one completed turn and the p95 (nearest rank) of their request
//   TTFTs is <= `ttft_limit_s`. The result is 30k for the first k with buckets k and k+1 both
//   good (0 when the first two are), < 0 (never) when no such pair exists up to the last turn
//   start. An empty bucket is not good: no turn shows that the fleet recovered.
// - add_turn_metrics fills Summary's turn_goodput, windows and recovery_s.
#pragma once

#include <cstdint>
#include <vector>

#include "experiments/spec/experiment.h"
#include "sim/metrics.h"

namespace isim::exp {

inline constexpr double kRecoveryBucket_s = 30;

bool meets_turn_slo(const sim::TurnRecord& t, const TurnSlo& slo);
sim::TurnGoodput turn_goodput(const std::vector<sim::TurnRecord>& turns, int64_t trace_turns,
                              const TurnSlo& slo, double busy_window_s);
std::vector<sim::WindowStats> time_windows(const std::vector<sim::TurnRecord>& turns,
                                           const std::vector<sim::SessionRecord>& sessions,
                                           double window_s, const TurnSlo& slo);
double recovery_time(const std::vector<sim::TurnRecord>& turns, double shift_s,
                     double ttft_limit_s);
void add_turn_metrics(sim::Summary& s, const std::vector<sim::TurnRecord>& turns,
                      const std::vector<sim::SessionRecord>& sessions, const TurnSlo& slo,
                      const RunMetricsSpec& m);

}  // namespace isim::exp
