// isim validate --against vllm-bench FILE: a `vllm bench serve --save-result --save-detailed`
// JSON as a BenchRun (against_bench.h).
//
// Source: vllm-project/vllm @ 009e6d4a1cd6ba3fb2a9fc00f4ec06f5297232a1,
// vllm/benchmarks/serve.py: calculate_metrics (the definitions), get_request (the arrivals),
// benchmark (the result dict) and main (--save-detailed keeps the per-request lists).
//
// Reads: request_rate (a number > 0 or the string "inf"), burstiness (> 0), max_concurrency
// (null or an integer >= 1), duration (seconds > 0), and the per-request lists, equally long,
// that only --save-detailed keeps: input_lens, output_lens (integers >= 0), ttfts (seconds),
// itls (a list of seconds per request), errors (optional; strings, "" for a success), latencies
// (optional; seconds, the e2el of each request, which newer versions save). A request
// failed when its error is not "" (without errors: when its output_lens is 0); failed ones are
// counted, not compared or replayed.
//
// Send times: a file with start_times (a list as long as input_lens, seconds on one clock; newer
// vLLM versions keep it with --save-detailed) is replayed request by request at those instants,
// from the first successful one's. Without it (the usual case) the file has no send times: the
// replay draws them from request_rate and burstiness (bench_arrivals; max_concurrency as
// against_bench.h says), and the comparison is of distributions, not request by request: the
// simulated requests are the recorded lengths at other instants.
//
// vLLM's definitions, converted to rows and used on both sides (NumPy statistics):
// ttft; e2el = latencies[i], or without it ttft + sum(itls) (vLLM's latency, last chunk -
// send, which its itls telescope to); tpot = (e2el - ttft) / (output_len - 1) for output_len >= 2;
// itl = every gap (vLLM's are between streamed chunks, the simulator's between tokens: one token a
// chunk); request_throughput = completed / duration, output_throughput = sum of output_lens /
// duration, total_token_throughput = (sum of input_lens + output_lens) / duration. The real
// duration is the file's (benchmark start to the last response); the simulated one is the last
// token - 0, the start (replayed at start_times: - the first send, which the real duration has
// before it). A drawn replay of a run with ramp_up_strategy is refused (InputError naming the key).
// Metrics (vLLM's keys): {mean,median,std,p99}_{ttft,tpot,itl,e2el}_ms, request_throughput,
// output_throughput, total_token_throughput, duration.
// Errors: `FILE: KEY: missing` (for a list: `... (the file was saved without --save-detailed;
// rerun vllm bench serve with --save-result --save-detailed)`), `FILE: KEY[i]: ...` for a bad
// element, `FILE: KEY: N entries, but input_lens has M`.
#pragma once

#include <string>

#include "experiments/validate/against_bench.h"

namespace isim::exp {

BenchRun read_vllm_bench(const std::string& path);

MetricList vllm_bench_metrics(const std::vector<RequestRow>& rows, double duration_s);

}  // namespace isim::exp
