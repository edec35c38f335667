// metrics.window_s and metrics.shifts_s (experiments/spec/metrics_spec.h).
#include "experiments/spec/metrics_spec.h"

#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "core/input_error.h"

namespace isim::exp {

void parse_run_metrics(const YamlMap& m, const TurnSlo& turn, RunMetricsSpec& rm) {
  MetricsKnobs k;  // the bounds; timeseries_interval_s is read by the experiment, alike
  KnobReader read{m};
  k.knobs(read);
  rm.window_s = m.has("window_s") ? k.window_s : 0.0;
  if (m.has("bench_json")) {
    rm.bench_json = m.require<std::string>("bench_json", "detailed, summary or off");
    const auto& modes = bench_json_modes();
    if (std::find(modes.begin(), modes.end(), rm.bench_json) == modes.end())
      m.fail("bench_json",
             fmt::format("expected detailed, summary or off, got '{}'", rm.bench_json));
  }
  if (!m.has("shifts_s")) return;
  const YAML::Node n = m.value("shifts_s");
  if (!n.IsSequence() || n.size() == 0)
    m.fail("shifts_s", "expected a non-empty list of shift times in seconds, e.g. [1200, 2400]");
  for (size_t i = 0; i < n.size(); ++i) {
    const std::string key = m.key_path("shifts_s") + "[" + std::to_string(i) + "]";
    const auto v = read_as<double>(n[i], m.file(), key, "a time in seconds");
    if (!(v >= 0)) throw InputError(yaml_where(m.file(), n[i], key) + ": must be >= 0 s");
    rm.shifts_s.push_back(v);
  }
  if (!(turn.request_ttft_s > 0))
    m.fail("shifts_s",
           "the time to recover is judged against slo.request_ttft_s: give that limit too");
}

const std::vector<std::string>& bench_json_modes() {
  static const std::vector<std::string> m = {"detailed", "summary", "off"};
  return m;
}

void add_resolved_run_metrics(YAML::Node metrics, const RunMetricsSpec& rm) {
  if (rm.bench_json != "detailed") metrics["bench_json"] = rm.bench_json;
  if (rm.window_s > 0) metrics["window_s"] = fmt::format("{}", rm.window_s);
  for (double t : rm.shifts_s) metrics["shifts_s"].push_back(fmt::format("{}", t));
}

}  // namespace isim::exp
