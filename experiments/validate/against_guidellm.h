// isim validate --against guidellm FILE: a GuideLLM report as a BenchRun (against_bench.h).
//
// Source: vllm-project/guidellm at commit ee7a77457ba668b4b5ccb40f110518829893b36a
// (2026-08-07): src/guidellm/benchmark/schemas/report.py (GenerativeBenchmarksReport),
// benchmark.py (requests: successful / errored / incomplete), src/guidellm/schemas/
// request_stats.py (GenerativeRequestStats and its metric properties), info.py
// (RequestInfo, RequestTimings), benchmark/schemas/metrics.py (which per-request values it
// aggregates, with what weight), schemas/statistics.py (DistributionSummary, Percentiles).
//
// Reads the report `guidellm benchmark` writes, benchmarks.json or (a name ending in .yaml or
// .yml) benchmarks.yaml (bench_json::read_yaml_as_json: errors then name the key path, not the
// line): benchmarks[I] (--benchmark I; without it the report must hold one benchmark), its
// requests.successful[k]: prompt_tokens and output_tokens (integers >= 0), info.timings
// .request_start, .first_token_iteration, .last_token_iteration (seconds, epoch), and
// info.conversation_id (string or null: a conversation of its own) and info.turn_index (absent:
// 0). requests.errored and requests.incomplete are counted, not compared or replayed.
//
// GuideLLM's definitions, converted to rows (send = request_start - the first one's; ttft =
// first_token_iteration - request_start; e2el = last_token_iteration - request_start) and used
// on both sides:
// - time_to_first_token_ms = 1000 ttft.
// - time_per_output_token_ms = 1000 e2el / output_tokens: it INCLUDES the first token (what
//   others call TPOT excludes it); aggregated weighted by output_tokens.
// - inter_token_latency_ms = 1000 (last - first token) / (output_tokens - 1): what vLLM and
//   AIPerf's ITL-per-request call TPOT; output_tokens >= 2; weighted by output_tokens - 1.
// - request_latency (s) = GuideLLM's request_end - request_start: the replay has no stream close
//   after the last token, so both sides take last token - request_start (the close is left out).
// - Statistics: mean (weighted), median and p99 are GuideLLM's percentiles (the smallest value
//   whose weighted cumulative share reaches q; Values::inverse_cdf), not NumPy's interpolation.
// - output_tokens_per_s = sum of output_tokens / duration; duration = the last token of all -
//   the first request_start (both sides; GuideLLM's own rate metrics are per-window
//   distributions, not compared).
// Errors: `FILE: benchmarks[I].requests.successful[K].PATH: ...` (missing, wrong type, a first
// token before its start), `FILE: benchmarks: N benchmarks (a sweep): pick one with --benchmark
// I (0..N-1)`.
#pragma once

#include <string>

#include "experiments/validate/against_bench.h"

namespace isim::exp {

BenchRun read_guidellm(const std::string& path, int64_t benchmark);

MetricList guidellm_metrics(const std::vector<RequestRow>& rows, double duration_s);

}  // namespace isim::exp
