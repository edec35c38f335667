// What `isim headroom` writes and prints from a HeadroomResult (experiments/headroom/headroom.h).
//
// Contract (every number in shortest round-trip text, so equal results give equal bytes):
// - headroom_json: {name, knob, unit, start, target, tolerance, duration_s, seeds: [seed...],
//   slo: {METRIC: limit, ...} (turn limits included), policies: [{policy, mean, worst,
//   worst_seed, limit, runs, seeds: [{seed, bracket (bisect.h outcome_name), pass (lo, null
//   when 0), fail (hi, null when 0), limit (at fail), probes: [{LOAD, attainment,
//   turn_attainment (null when the spec has no such limits), pass, limit, sessions, arrivals_s,
//   kv_peak, preemptions, skipped, overloaded, queue_growth_per_s, ttft_miss, tpot_miss,
//   other_miss}]}]}]}; LOAD is the knob's last part ("rate" or "users").
// - headroom_csv: one row per probe, in the JSON's order: policy, seed, probe (0-based), LOAD,
//   attainment, turn_attainment (empty when not given), pass (1/0), limit, kv_peak, preemptions,
//   overloaded (1/0), queue_growth_per_s.
// - headroom_table: a header line naming the knob, target, seeds and tolerance, then one row
//   per policy: mean, worst, each seed's highest passing value, the worst seed's first failing
//   value, the limit (limit_why) and the runs taken. A seed with bracket above-all shows its
//   value with '+' (a lower bound), one below-all shows "<" and its lowest failing value.
//   For arrival.rate without duration_s, a note follows when the arrivals of a worst seed's
//   passing probe at its answer span less than kShortArrivals_s (the shortest such span).
#pragma once

#include <string>

#include "experiments/headroom/headroom.h"
#include "experiments/spec/experiment.h"

namespace isim::exp {

inline constexpr double kShortArrivals_s = 300;  // arrivals shorter than this: the table's note

std::string headroom_json(const HeadroomResult& r, const Experiment& e);
std::string headroom_csv(const HeadroomResult& r);
std::string headroom_table(const HeadroomResult& r);

}  // namespace isim::exp
