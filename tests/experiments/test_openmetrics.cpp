// The OpenMetrics file of a run (experiments/run/openmetrics.h, `isim run --metrics`): the whole
// text of a hand-built two-replica run, the values of the hand-computed two-session schedule at
// each sample, vLLM's buckets, the per-policy file names, and the flags' errors. Expected values
// by hand; the bucket bounds below are typed from vllm/v1/metrics/loggers.py, not read from the
// module. (test_openmetrics_promtool loads the same schedule into a Prometheus TSDB.)
#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "experiments/run/metrics_out.h"
#include "experiments/run/openmetrics.h"
#include "tests/cli_helpers.h"
#include "tests/experiments/openmetrics_fixture.h"
#include "tests/sim_fixtures.h"
#include "tests/test_paths.h"

using namespace isim;
namespace fs = std::filesystem;

namespace om_test {

const std::vector<std::string> kTtftLe = {
    "0.001", "0.005", "0.01", "0.02", "0.04", "0.06", "0.08", "0.1",  "0.25",  "0.5",   "0.75",
    "1.0",   "2.5",   "5.0",  "7.5",  "10.0", "20.0", "40.0", "80.0", "160.0", "640.0", "2560.0"};
const std::vector<std::string> kItlLe = {"0.01", "0.025", "0.05", "0.075", "0.1", "0.15", "0.2",
                                         "0.3",  "0.4",   "0.5",  "0.75",  "1.0", "2.5",  "5.0",
                                         "7.5",  "10.0",  "20.0", "40.0",  "80.0"};
const std::vector<std::string> kE2eLe = {
    "0.3",  "0.5",  "0.8",  "1.0",  "1.5",   "2.0",   "2.5",   "5.0",   "10.0",   "15.0",  "20.0",
    "30.0", "40.0", "50.0", "60.0", "120.0", "240.0", "480.0", "960.0", "1920.0", "7680.0"};
const std::vector<std::string> kTokLe10 = {"1.0", "2.0", "5.0", "10.0"};  // max_model_len 10

// One histogram point: `seen` (hand-listed observations so far) against the bounds as printed.
std::string hist_point(const std::string& name, const std::string& labels,
                       const std::vector<std::string>& le, const std::vector<double>& seen,
                       const std::string& sum, const std::string& ts) {
  std::string out;
  for (const auto& b : le) {
    int n = 0;
    for (double v : seen) n += v <= std::stod(b);
    out += name + "_bucket{" + labels + ",le=\"" + b + "\"} " + std::to_string(n) + " " + ts + "\n";
  }
  const std::string n = std::to_string(seen.size());
  out += name + "_bucket{" + labels + ",le=\"+Inf\"} " + n + " " + ts + "\n";
  out += name + "_count{" + labels + "} " + n + " " + ts + "\n";
  out += name + "_sum{" + labels + "} " + sum + " " + ts + "\n";
  return out;
}

}  // namespace om_test

TEST_CASE("openmetrics: the whole file of a hand-built two-replica run") {
  // One sample at t = 1 s; a final point at the last token, 1.1 s; epoch 1767225600
  // (2026-01-01T00:00:00Z), so the stamps are 1767225601.000 and 1767225601.100.
  // Replica 0 (model m-a, engine 0, 10 GPU blocks): at the sample 2 running, 1 waiting, 5
  //   blocks held (0.5), 1 preemption so far, 2 in all (its Counters: the final point).
  //   Turn T0: start 0.5, TTFT 0.25 -> first token 0.75, gaps 10 ms x 2 -> 0.76, 0.77 (finish):
  //   e2e 0.27, 7 prompt and 3 output tokens, all before 1.0: counted at both points.
  // Replica 1 (model m"b, engine 1, 8 blocks): idle at the sample. Turn T1: start 0.9, TTFT
  //   0.2 -> its one token at 1.1 = finish: after the sample, so only at the final point.
  cluster::RunResult r;
  r.replicas.resize(2);
  r.replicas[0].replica = 0;
  r.replicas[0].blocks.gpu = 10;
  r.replicas[0].counters.preemptions = 2;
  r.replicas[1].replica = 1;
  r.replicas[1].blocks.gpu = 8;
  sim::TimeSample s0, s1;
  s0.t_s = s1.t_s = 1.0;
  s0.running = 2;
  s0.waiting = 1;
  s0.gpu_blocks_used = 5;
  s0.preemptions = 1;
  r.timeseries = {s0};
  r.replica_timeseries = {{0, s0}, {1, s1}};
  sim::TurnRecord t0, t1;
  t0.start_s = 0.5;
  t0.ttft_s = 0.25;
  const auto at = r.gaps.append({{10'000'000, 2}});
  t0.gaps_at = at.at;
  t0.gaps_words = at.words;
  r.gaps_kept = true;
  t0.output_tokens = 3;
  t0.input_tokens = 7;
  t0.finish_s = 0.77;
  t0.replica = 0;
  t1.session = 1;
  t1.start_s = 0.9;
  t1.ttft_s = 0.2;
  t1.output_tokens = 1;
  t1.input_tokens = 3;
  t1.finish_s = 1.1;
  t1.replica = 1;
  r.turns = {t0, t1};
  exp::OmOptions o;
  o.replicas = {{"m-a", 0}, {"m\"b", 1}};
  o.epoch_s = 1767225600;
  o.max_model_len = 10;

  const std::string a = "model_name=\"m-a\",engine=\"0\",replica=\"0\"";
  const std::string b = "model_name=\"m\\\"b\",engine=\"1\",replica=\"1\"";
  const std::string p = "1767225601.000", q = "1767225601.100";
  using om_test::hist_point;
  // One sample line, and a family's header.
  const auto ln = [](const std::string& name, const std::string& labels, const std::string& v,
                     const std::string& ts) {
    return name + "{" + labels + "} " + v + " " + ts + "\n";
  };
  const auto hdr = [](const std::string& name, const std::string& type, const std::string& help) {
    return "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  };
  std::string want;
  const std::string run = "vllm:num_requests_running", wait = "vllm:num_requests_waiting";
  want += hdr(run, "gauge", "Requests in the simulated engine's running set at the sample time.");
  want += ln(run, a, "2", p) + ln(run, b, "0", p);
  want += hdr(wait, "gauge",
              "Requests queued for their prefill (new and resumed turns) at the sample time.");
  want += ln(wait, a, "1", p) + ln(wait, b, "0", p);
  const std::string kv = "vllm:kv_cache_usage_perc", gpu = "vllm:gpu_cache_usage_perc";
  want += hdr(kv, "gauge",
              "Fraction (0 to 1) of the replica's GPU KV blocks that requests hold at the sample "
              "time.");
  want += ln(kv, a, "0.5", p) + ln(kv, b, "0", p);
  want += hdr(gpu, "gauge", "vllm:kv_cache_usage_perc under its name before vLLM 0.9.");
  want += ln(gpu, a, "0.5", p) + ln(gpu, b, "0", p);
  const std::string pre = "vllm:num_preemptions", pro = "vllm:prompt_tokens";
  want += hdr(pre, "counter",
              "Engine preemptions so far: running requests evicted for lack of KV blocks.");
  want += ln(pre + "_total", a, "1", p) + ln(pre + "_total", a, "2", q) +
          ln(pre + "_total", b, "0", p) + ln(pre + "_total", b, "0", q);
  want += hdr(pro, "counter",
              "Prompt tokens (each turn's whole context) of requests whose first token was "
              "emitted.");
  want += ln(pro + "_total", a, "7", p) + ln(pro + "_total", a, "7", q) +
          ln(pro + "_total", b, "0", p) + ln(pro + "_total", b, "3", q);
  const std::string gen = "vllm:generation_tokens";
  want += hdr(gen, "counter", "Output tokens emitted.");
  want += ln(gen + "_total", a, "3", p) + ln(gen + "_total", a, "3", q) +
          ln(gen + "_total", b, "0", p) + ln(gen + "_total", b, "1", q);
  want += hdr("vllm:request_success", "counter",
              "Requests (turns) finished; stop: the turn reached its output length from the "
              "trace.");
  // stop: T0 on replica 0 at both points; T1 on replica 1 at the final point only.
  for (const auto& labels : {a, b})
    for (const std::string reason : {"stop", "length", "abort"}) {
      const std::string l = labels + ",finished_reason=\"" + reason + "\"";
      const bool stop = reason == "stop";
      want += ln("vllm:request_success_total", l, stop && labels == a ? "1" : "0", p) +
              ln("vllm:request_success_total", l, stop ? "1" : "0", q);
    }
  const std::string ttft = "vllm:time_to_first_token_seconds";
  want += "# HELP " + ttft +
          " First token minus the turn's start (its arrival, or the end of the intercept before "
          "it), observed at the first token.\n# TYPE " +
          ttft + " histogram\n# UNIT " + ttft + " seconds\n";
  want += hist_point(ttft, a, om_test::kTtftLe, {0.25}, "0.25", p) +
          hist_point(ttft, a, om_test::kTtftLe, {0.25}, "0.25", q) +
          hist_point(ttft, b, om_test::kTtftLe, {}, "0", p) +
          hist_point(ttft, b, om_test::kTtftLe, {0.2}, "0.2", q);
  const std::string itl = "vllm:inter_token_latency_seconds";
  want += "# HELP " + itl +
          " Gap between consecutive output tokens of a request, observed at the later token.\n"
          "# TYPE " +
          itl + " histogram\n# UNIT " + itl + " seconds\n";
  want += hist_point(itl, a, om_test::kItlLe, {0.01, 0.01}, "0.02", p) +
          hist_point(itl, a, om_test::kItlLe, {0.01, 0.01}, "0.02", q) +
          hist_point(itl, b, om_test::kItlLe, {}, "0", p) +
          hist_point(itl, b, om_test::kItlLe, {}, "0", q);
  // The same histogram under its name before vLLM 0.11.
  const std::string tpot = "vllm:time_per_output_token_seconds";
  want += "# HELP " + tpot + " vllm:inter_token_latency_seconds under its name before vLLM " +
          "0.11.\n# TYPE " + tpot + " histogram\n# UNIT " + tpot + " seconds\n";
  want += hist_point(tpot, a, om_test::kItlLe, {0.01, 0.01}, "0.02", p) +
          hist_point(tpot, a, om_test::kItlLe, {0.01, 0.01}, "0.02", q) +
          hist_point(tpot, b, om_test::kItlLe, {}, "0", p) +
          hist_point(tpot, b, om_test::kItlLe, {}, "0", q);
  const std::string e2e = "vllm:e2e_request_latency_seconds";
  want += "# HELP " + e2e +
          " Last token minus the turn's start, observed at the last token.\n# TYPE " + e2e +
          " histogram\n# UNIT " + e2e + " seconds\n";
  want += hist_point(e2e, a, om_test::kE2eLe, {0.27}, "0.27", p) +
          hist_point(e2e, a, om_test::kE2eLe, {0.27}, "0.27", q) +
          hist_point(e2e, b, om_test::kE2eLe, {}, "0", p) +
          hist_point(e2e, b, om_test::kE2eLe, {0.2}, "0.2", q);
  const std::string pt = "vllm:request_prompt_tokens";
  want +=
      "# HELP " + pt + " Prompt tokens of each finished request.\n# TYPE " + pt + " histogram\n";
  want += hist_point(pt, a, om_test::kTokLe10, {7}, "7", p) +
          hist_point(pt, a, om_test::kTokLe10, {7}, "7", q) +
          hist_point(pt, b, om_test::kTokLe10, {}, "0", p) +
          hist_point(pt, b, om_test::kTokLe10, {3}, "3", q);
  const std::string gt = "vllm:request_generation_tokens";
  want +=
      "# HELP " + gt + " Output tokens of each finished request.\n# TYPE " + gt + " histogram\n";
  want += hist_point(gt, a, om_test::kTokLe10, {3}, "3", p) +
          hist_point(gt, a, om_test::kTokLe10, {3}, "3", q) +
          hist_point(gt, b, om_test::kTokLe10, {}, "0", p) +
          hist_point(gt, b, om_test::kTokLe10, {1}, "1", q);
  want += "# EOF\n";
  CHECK(exp::openmetrics_text(r, o) == want);
  // Byte-identical on a second call.
  CHECK(exp::openmetrics_text(r, o) == exp::openmetrics_text(r, o));
}

TEST_CASE("openmetrics: the two-session schedule's values at each sample, by hand") {
  // tests/experiments/openmetrics_fixture.h: samples every 0.1 s at 0, 0.1, ..., 0.5 (none at the
  // run's end: the last token, 0.597, comes before 0.6), then the final point at 0.597.
  const cluster::RunResult r = om_test::two_session_run();
  const std::string text = exp::openmetrics_text(r, om_test::two_session_options());
  const std::string l = "{model_name=\"test\",engine=\"0\",replica=\"0\"}";
  const std::string h = "{model_name=\"test\",engine=\"0\",replica=\"0\",le=";
  auto has = [&](const std::string& line) {
    CAPTURE(line);
    CHECK(text.find(line + "\n") != std::string::npos);
  };
  for (const auto& [line, _] : om_test::two_session_expected()) has(line);
  // Gauges exist at the samples only; counters and histograms at the final point too.
  CHECK(text.find("vllm:num_requests_running" + l + " 0 0.597") == std::string::npos);
  has("vllm:num_requests_running" + l + " 0 0.500");
  // Buckets at the final point: TTFT {18, 39, 15} ms: 2 within 0.02, 3 within 0.04; ITL {11,
  // 42, 12, 11, 11} ms: 4 within 0.025, 5 within 0.05; e2e {71, 62, 26} ms: all within 0.3.
  has("vllm:time_to_first_token_seconds_bucket" + h + "\"0.01\"} 0 0.597");
  has("vllm:time_to_first_token_seconds_bucket" + h + "\"0.02\"} 2 0.597");
  has("vllm:time_to_first_token_seconds_bucket" + h + "\"0.04\"} 3 0.597");
  has("vllm:inter_token_latency_seconds_bucket" + h + "\"0.01\"} 0 0.597");
  has("vllm:inter_token_latency_seconds_bucket" + h + "\"0.025\"} 4 0.597");
  has("vllm:inter_token_latency_seconds_bucket" + h + "\"0.05\"} 5 0.597");
  has("vllm:e2e_request_latency_seconds_bucket" + h + "\"0.3\"} 3 0.597");
  // Prompt lengths {8, 20, 15} against 1-2-5 buckets up to 20; outputs {3, 3, 2}.
  has("vllm:request_prompt_tokens_bucket" + h + "\"10.0\"} 1 0.597");
  has("vllm:request_prompt_tokens_bucket" + h + "\"20.0\"} 3 0.597");
  has("vllm:request_generation_tokens_bucket" + h + "\"2.0\"} 1 0.597");
  has("vllm:request_generation_tokens_bucket" + h + "\"5.0\"} 3 0.597");
  CHECK(text.substr(text.size() - 6) == "# EOF\n");
}

TEST_CASE("openmetrics: preemptions counted at each sample, from the replica's own counter") {
  // tests/policies/test_hand_computed.cpp's preemption: 4 blocks of 4 tokens; a and b arrive at
  // 0 (prompt 7, 6 outputs each); at 36 ms a needs a third block and b is preempted; a ends at
  // 80 ms, b at 132. Samples every 30 ms: 0, 30, 60, 90, 120; the final point at 132.
  // At 60 ms a decodes (3 blocks: 0.75) and b waits to be recomputed.
  using isim::test::seg;
  const trace::Trace t = {trace::Session{"a", 0.0, {seg(7, 6)}},
                          trace::Session{"b", 0.0, {seg(7, 6)}}};
  sim::EngineConfig c;
  c.gpu_blocks = 4;
  c.cpu_blocks = 100;
  c.max_num_batched_tokens = 64;
  c.timeseries_interval_s = 0.03;
  const cluster::RunResult r = test::run(t, "preserve", c);
  exp::OmOptions o;
  o.replicas = {{"test", 0}};
  o.max_model_len = 13;
  const std::string text = exp::openmetrics_text(r, o);
  const std::string l = "{model_name=\"test\",engine=\"0\",replica=\"0\"} ";
  for (const std::string& line :
       {"vllm:num_preemptions_total" + l + "0 0.030", "vllm:num_preemptions_total" + l + "1 0.060",
        "vllm:num_preemptions_total" + l + "1 0.132", "vllm:num_requests_running" + l + "1 0.060",
        "vllm:num_requests_waiting" + l + "1 0.060", "vllm:kv_cache_usage_perc" + l + "0.75 0.060",
        // 12 output tokens in all; a's 6 by 80 ms, b's first 2 before it was preempted.
        "vllm:generation_tokens_total" + l + "8 0.090",
        "vllm:generation_tokens_total" + l + "12 0.132"}) {
    CAPTURE(line);
    CHECK(text.find(line + "\n") != std::string::npos);
  }
}

TEST_CASE("vLLM's 1-2-5 token buckets and the per-policy file names") {
  CHECK(exp::buckets_1_2_5(100) == std::vector<int64_t>{1, 2, 5, 10, 20, 50, 100});
  CHECK(exp::buckets_1_2_5(4) == std::vector<int64_t>{1, 2});
  CHECK(exp::buckets_1_2_5(0).empty());
  CHECK(exp::buckets_1_2_5(8192) ==
        std::vector<int64_t>{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000});
  CHECK(exp::metrics_path("out/m.om", "swap", 1) == "out/m.om");
  CHECK(exp::metrics_path("out/m.om", "swap", 2) == "out/m.swap.om");
  CHECK(exp::metrics_path("out/metrics", "min-waste", 3) == "out/metrics.min-waste");
}
