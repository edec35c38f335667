// The two-session schedule of tests/cluster/test_turn_metrics.cpp (round profile: T(x) = 10 ms
// + 1 ms per batched token, 4-token blocks; vllm-v0, preserve, 20 GPU blocks), sampled every
// 0.1 s, and the OpenMetrics values it must give, by hand: what test_openmetrics checks in the
// text and test_openmetrics_promtool reads back from a Prometheus TSDB.
//   a: arrives at 0, prompt 8, 3 outputs, a 0.5 s intercept, 4 returned tokens, 2 outputs.
//   b: arrives at 20 ms, prompt 20, 3 outputs.
//   [0,18) prefill a: token 1 at 18 (TTFT 18 ms); [18,29) a token 2 at 29 (gap 11);
//   [29,59) prefill b: token 1 at 59 (TTFT 39 ms); [59,71) a token 3 (gap 42), b token 2
//   (gap 12) at 71: a finishes its turn (e2e 71 ms) and pauses (its KV, 10 tokens = 3 blocks,
//   kept); [71,82) b token 3 (gap 11): b finishes (e2e 62 ms); 571 a's intercept ends:
//   [571,586) prefill a over 15 tokens, token 1 at 586 (TTFT 15 ms); [586,597) token 2 (gap
//   11): a finishes (e2e 26 ms).
// Samples (each before the events of its instant): 0 (a's prefill running: 1 running, 2 of 20
// blocks = 0.1), 0.1 ... 0.5 (a paused, b done: 0 running, 3 blocks = 0.15). No sample at the
// end: the last token (0.597) comes before the next one (0.6); the final point is 0.597.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "experiments/run/openmetrics.h"
#include "tests/sim_fixtures.h"

namespace om_test {

inline isim::cluster::RunResult two_session_run() {
  using isim::test::seg;
  const isim::trace::Trace t = {isim::trace::Session{"a", 0.0, {seg(8, 3, "qa", 0.5), seg(4, 2)}},
                                isim::trace::Session{"b", 0.020, {seg(20, 3)}}};
  isim::sim::EngineConfig c;
  c.gpu_blocks = 20;
  c.cpu_blocks = 100;
  c.max_num_batched_tokens = 64;
  c.timeseries_interval_s = 0.1;
  return isim::test::run(t, "preserve", c);
}

// Labels model_name "test" (the round profile's), engine 0, replica 0; epoch 0; token buckets
// up to 20 (1, 2, 5, 10, 20).
inline isim::exp::OmOptions two_session_options() {
  isim::exp::OmOptions o;
  o.replicas = {{"test", 0}};
  o.max_model_len = 20;
  return o;
}

// One expected value: metric NAME (with its suffix), an extra label ("" or key="value"),
// the value as printed, the time in milliseconds.
struct OmExpect {
  std::string name, extra, value;
  int64_t t_ms = 0;
};

// Counters and histograms count what happened before each point; the final point (597 ms)
// everything. Before 0.1 s: prompts a 8 + b 20 = 28; tokens 3 + 3 = 6; a and b finished;
// TTFT {18, 39} ms (sum 57), gaps {11, 42, 12, 11} (sum 76), e2e {71, 62} (sum 133).
// At 597 ms a's second turn adds prompt 15 (43), 2 tokens (8), TTFT 15 (72), gap 11 (87),
// e2e 26 (159).
inline std::vector<OmExpect> two_session_points() {
  return {
      {"vllm:num_requests_running", "", "1", 0},
      {"vllm:num_requests_running", "", "0", 100},
      {"vllm:num_requests_waiting", "", "0", 0},
      {"vllm:kv_cache_usage_perc", "", "0.1", 0},
      {"vllm:kv_cache_usage_perc", "", "0.15", 100},
      {"vllm:kv_cache_usage_perc", "", "0.15", 500},
      {"vllm:prompt_tokens_total", "", "0", 0},
      {"vllm:prompt_tokens_total", "", "28", 100},
      {"vllm:prompt_tokens_total", "", "28", 500},
      {"vllm:prompt_tokens_total", "", "43", 597},
      {"vllm:generation_tokens_total", "", "6", 100},
      {"vllm:generation_tokens_total", "", "8", 597},
      {"vllm:num_preemptions_total", "", "0", 597},
      {"vllm:request_success_total", "finished_reason=\"stop\"", "2", 100},
      {"vllm:request_success_total", "finished_reason=\"stop\"", "3", 597},
      {"vllm:request_success_total", "finished_reason=\"length\"", "0", 597},
      {"vllm:time_to_first_token_seconds_count", "", "2", 100},
      {"vllm:time_to_first_token_seconds_sum", "", "0.057", 100},
      {"vllm:time_to_first_token_seconds_count", "", "3", 597},
      {"vllm:time_to_first_token_seconds_sum", "", "0.072", 597},
      {"vllm:inter_token_latency_seconds_count", "", "4", 100},
      {"vllm:inter_token_latency_seconds_sum", "", "0.076", 100},
      {"vllm:inter_token_latency_seconds_count", "", "5", 597},
      {"vllm:inter_token_latency_seconds_sum", "", "0.087", 597},
      {"vllm:e2e_request_latency_seconds_count", "", "2", 100},
      {"vllm:e2e_request_latency_seconds_sum", "", "0.133", 100},
      {"vllm:e2e_request_latency_seconds_sum", "", "0.159", 597},
      {"vllm:request_prompt_tokens_sum", "", "43", 597},
      {"vllm:request_generation_tokens_sum", "", "8", 597},
  };
}

// Each expected value as its line of the OpenMetrics text (epoch 0: "0.100" for 100 ms).
inline std::vector<std::pair<std::string, OmExpect>> two_session_expected() {
  std::vector<std::pair<std::string, OmExpect>> out;
  for (const OmExpect& e : two_session_points()) {
    const std::string ts =
        std::to_string(e.t_ms / 1000) + "." +
        std::string(e.t_ms % 1000 < 100 ? (e.t_ms % 1000 < 10 ? "00" : "0") : "") +
        std::to_string(e.t_ms % 1000);
    out.emplace_back(e.name + "{model_name=\"test\",engine=\"0\",replica=\"0\"" +
                         (e.extra.empty() ? "" : "," + e.extra) + "} " + e.value + " " + ts,
                     e);
  }
  return out;
}

}  // namespace om_test
