// The turn-level keys of an experiment's `metrics:` (the rest, timeseries_interval_s, is the
// engine's).
//
// Contract:
// - `metrics.window_s: W` (in MetricsKnobs' bound; absent: 0, none) splits the run's turns into
// windows
//   [kW, (k+1)W) by their start (experiments/run/turn_metrics.h).
// - `metrics.shifts_s: [t, ...]` (a non-empty list of finite times >= 0) are load shifts whose
//   time to recover the summary gives; judged against slo.request_ttft_s, so without that limit
//   it is an InputError that says so. Errors name FILE:LINE: metrics.KEY.
// - `metrics.bench_json: detailed | summary | off` (absent: detailed) says what each run folder's
//   bench.json holds (experiments/run/bench_json.h): every field with the per-request lists, as
//   `vllm bench serve --save-result --save-detailed` writes; the same without the lists, as
//   `--save-result` alone writes (a 100k-session run's lists are ~400 MB); or no bench.json.
#pragma once

#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "core/knobs.h"
#include "core/strict_yaml.h"
#include "experiments/spec/slo.h"

namespace isim::exp {

// The numeric `metrics:` keys as one knob table (core/knobs.h), for their bounds and `isim
// list`; read into the engine's timeseries_interval_s and RunMetricsSpec::window_s. A window
// or sample interval under a millisecond is shorter than an engine step; a run has at most
// kMaxWindows windows (experiments/run/turn_metrics.cpp refuses more before allocating them).
inline constexpr double kMinMetricInterval_s = 0.001;
inline constexpr double kMaxMetricInterval_s = 4e9;  // about 126 years, the limit on a time
inline constexpr double kMaxWindows = 1e6;
struct MetricsKnobs {
  double timeseries_interval_s = 1.0;
  double window_s = 0;
  template <class Visit>
  void knobs(Visit&& k) {
    const Bound b = in(kMinMetricInterval_s, kMaxMetricInterval_s)
                        .because("about 126 years, the limit on a time");
    k("timeseries_interval_s", timeseries_interval_s, b, "seconds",
      "time-series sample interval (a run takes at most 1,000,000 samples)");
    k("window_s", window_s, b, "seconds",
      "per-window turn metrics (absent: none; a run has at most 1,000,000 windows)");
  }
};

struct RunMetricsSpec {
  double window_s = 0;
  std::vector<double> shifts_s;
  std::string bench_json = "detailed";  // detailed | summary | off
};
const std::vector<std::string>& bench_json_modes();  // detailed, summary, off

// Reads window_s and shifts_s of the `metrics:` map `m`; `turn` is the spec's turn SLO.
void parse_run_metrics(const YamlMap& m, const TurnSlo& turn, RunMetricsSpec& out);
// Adds the keys given to `metrics` (config.resolved.yaml's map).
void add_resolved_run_metrics(YAML::Node metrics, const RunMetricsSpec& rm);

}  // namespace isim::exp
