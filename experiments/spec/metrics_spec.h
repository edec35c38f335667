// The turn-level keys of an experiment's `metrics:` (the rest, timeseries_interval_s, is the
// engine's).
//
// Contract:
// - `metrics.window_s: W` (> 0; absent: 0, none) splits the run's turns into windows
//   [kW, (k+1)W) by their start (experiments/run/turn_metrics.h).
// - `metrics.shifts_s: [t, ...]` (a non-empty list of finite times >= 0) are load shifts whose
//   time to recover the summary gives; judged against slo.request_ttft_s, so without that limit
//   it is an InputError that says so. Errors name FILE:LINE: metrics.KEY.
#pragma once

#include <vector>

#include <yaml-cpp/yaml.h>

#include "core/strict_yaml.h"
#include "experiments/spec/slo.h"

namespace isim::exp {

struct RunMetricsSpec {
  double window_s = 0;
  std::vector<double> shifts_s;
};

// Reads window_s and shifts_s of the `metrics:` map `m`; `turn` is the spec's turn SLO.
void parse_run_metrics(const YamlMap& m, const TurnSlo& turn, RunMetricsSpec& out);
// Adds the keys given to `metrics` (config.resolved.yaml's map).
void add_resolved_run_metrics(YAML::Node metrics, const RunMetricsSpec& rm);

}  // namespace isim::exp
