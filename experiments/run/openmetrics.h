// One simulated run as an OpenMetrics text file under vLLM's v1 metric names (`isim run
// --metrics FILE.om`), so that Prometheus (promtool tsdb create-blocks-from openmetrics) and the
// Grafana dashboards built for vLLM read it as they read a real server's.
//
// Names, types, label names and histogram buckets are vLLM's, from vllm/v1/metrics/loggers.py
// (PrometheusStatLogger; github.com/vllm-project/vllm) and docs/design/metrics.md; the help
// texts are ours and say what the simulated value is.
//
// Contract (`openmetrics_text`):
// - Points: the run's sample times (RunResult::timeseries, every metrics.timeseries_interval_s,
//   and the run's end when a sample was due there), plus one more point at the last turn's
//   last token when that is later than the last sample: so the last point of every counter and
//   histogram is the run's total. Timestamps are `epoch_s` + simulated seconds, rounded to the
//   millisecond (Prometheus keeps milliseconds), printed with 3 decimals; never the wall
//   clock. A final point within the last sample's millisecond is not added: that sample counts
//   everything instead.
// - Series: one per replica, labels model_name (its profile's model), engine (its index in its
//   data-parallel group, as vLLM's engine core index; 0 without dp) and replica (its index in
//   the fleet). Replica r's labels come from `replicas[r]` (std::logic_error on a count that
//   differs from the run's, or on replica samples that are not time-major, one per replica).
// - Gauges, at sample points only (each sample shows the state the events before its time
//   left): vllm:num_requests_running (running set), vllm:num_requests_waiting (queued for
//   prefill), vllm:kv_cache_usage_perc (GPU KV blocks held / the replica's GPU blocks, a
//   fraction 0..1 as in vLLM v1; cached blocks nothing holds are free, as vLLM counts them).
// - Aliases, the same values under vLLM's names before they were renamed, so that dashboards
//   built for older vLLM (its examples/online_serving/prometheus_grafana/grafana.json) draw:
//   vllm:gpu_cache_usage_perc (= kv_cache_usage_perc, renamed in 0.9) after it, and
//   vllm:time_per_output_token_seconds (= inter_token_latency_seconds, renamed in 0.11) after it.
// - Counters (`_total`) and histograms, at every point, count what happened on that replica
//   before the point's time (the last point: everything), attributing each completed turn
//   (sim/turn_metrics.h) to the replica that emitted its last token (every token placed: the
//   run must have kept its gaps, RunResult::gaps_kept, as isim run --metrics asks; std::logic_error
//   otherwise):
//   vllm:num_preemptions (engine preemptions: TimeSample::preemptions, the replica's
//   Counters at the last point); vllm:prompt_tokens (a turn's input_tokens at its first
//   token); vllm:generation_tokens (each output token at its emission); vllm:request_success
//   with finished_reason "stop" at the turn's last token ("length" and "abort" stay 0: a
//   simulated turn ends where its trace says, and none is aborted);
//   vllm:time_to_first_token_seconds (ttft at the first token), vllm:inter_token_latency_seconds
//   (each gap at its later token), vllm:e2e_request_latency_seconds (last token - start, at the
//   last token), vllm:request_prompt_tokens and vllm:request_generation_tokens (at the last
//   token). Buckets are upper bounds, inclusive (le), in vLLM's lists (kTtftBuckets, ...); the
//   token histograms use vLLM's 1-2-5 buckets up to `max_model_len` (isim has no such limit:
//   callers pass the trace's longest context). Sums of seconds are summed in nanoseconds.
// - Text: families in the order above, each "# HELP", "# TYPE" ("# UNIT seconds" for the
//   seconds histograms), then its samples grouped by series, points in time order; a
//   histogram point is its buckets (cumulative, le="+Inf" last), _count, _sum; "# EOF" last.
//   Label values are escaped (\\, \", \n). The same run and options give the same bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cluster/run_result.h"
#include "core/atomic_file.h"

namespace isim::exp {

// vLLM's bucket upper bounds (seconds) for its latency histograms.
inline const std::vector<double> kTtftBuckets = {0.001, 0.005, 0.01, 0.02, 0.04,  0.06,  0.08, 0.1,
                                                 0.25,  0.5,   0.75, 1.0,  2.5,   5.0,   7.5,  10.0,
                                                 20.0,  40.0,  80.0, 160., 640.0, 2560.0};
inline const std::vector<double> kItlBuckets = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,
                                                0.3,  0.4,   0.5,  0.75,  1.0, 2.5,  5.0,
                                                7.5,  10.0,  20.0, 40.0,  80.0};
inline const std::vector<double> kE2eBuckets = {0.3,  0.5,  0.8,   1.0,   1.5,   2.0,   2.5,
                                                5.0,  10.0, 15.0,  20.0,  30.0,  40.0,  50.0,
                                                60.0, 120., 240.0, 480.0, 960.0, 1920., 7680.};
// vLLM's build_1_2_5_buckets: 1, 2, 5, 10, 20, 50, ... while <= max_value.
std::vector<int64_t> buckets_1_2_5(int64_t max_value);

struct OmReplica {
  std::string model_name;
  int32_t engine = 0;  // index within its data-parallel group
};

struct OmOptions {
  std::vector<OmReplica> replicas;  // one per replica of the run, in index order
  int64_t epoch_s = 0;              // Unix seconds that simulated time 0 maps to
  int64_t max_model_len = 0;        // the token histograms' buckets reach up to it
};

// Writes the file in pieces of about 1 MB (a fleet's file can be gigabytes: each replica's counts
// are computed when its series are written, so memory does not grow with the fleet);
// openmetrics_text gives it whole.
void write_openmetrics(const cluster::RunResult& r, const OmOptions& o, const PutText& sink);
std::string openmetrics_text(const cluster::RunResult& r, const OmOptions& o);

}  // namespace isim::exp
