// bench.json: a simulated run as `vllm bench serve --save-result --save-detailed` saves a real
// one, so that tools built for vLLM's result JSON read it unchanged. Definitions follow
// vllm/benchmarks/serve.py (vllm-project/vllm, commit 009e6d4a1cd6ba3fb2a9fc00f4ec06f5297232a1:
// calculate_metrics, benchmark, main_async); requests and statistics come from
// experiments/run/request_metrics.h.
//
// Contract:
// - A request is one turn: one LLM call of a session (sim/turn_metrics.h). Completed requests
//   are the run's completed turns. Failed requests are the skipped sessions (their context can
//   never fit): each is one request, its first turn, sent at the session's arrival and refused
//   at once (as vLLM records a request the server rejects: output 0, ttft 0, itl [], latency 0,
//   its error text). Turns after a failed or unfinished turn were never sent and are not listed;
//   user-phases sessions that never started were never sent either (summary.json counts them).
// - Requests are listed by send time (ties: session, then turn). `num_prompts` = requests listed.
// - duration: from t = 0 of the simulated clock (the arrival process's origin: Poisson's first
//   session arrives one gap after it, as vLLM's first request one gap after benchmark start) to
//   the last request's end, as vLLM's benchmark_duration runs from before the first send to
//   the last response. completed / failed: counts. total_input_tokens: the completed requests'
//   prompts (the whole context sent, sim/turn_metrics.h input_tokens); total_output_tokens:
//   their outputs. request_throughput = completed / duration, output_throughput = total output /
//   duration, total_token_throughput = (total input + total output) / duration; all 0 when the
//   duration is 0.
// - request_goodput: requests meeting every limit of vLLM's --goodput (ttft, tpot, e2el, ms;
//   a request is good when each value <= its limit, TPOT taken as 0 with fewer than 2 outputs)
//   per second of the duration; null when the spec's SLO maps to no limit. The mapping
//   (bench_goodput): slo.request_ttft_s -> ttft (every turn's TTFT: the same definition);
//   without it slo.ttft_s -> ttft (a session's first-turn TTFT, applied to every turn);
//   slo.tpot_s -> tpot. e2e_s, normalized_latency_s, resume_ttft_s and itl_max_s have no
//   per-request counterpart in vLLM (a session's e2e spans its tool calls); they are listed
//   under isim.slo_not_in_goodput.
// - Statistics (request_metrics.h: NumPy's mean, population std, linear percentiles), in ms:
//   {mean,median,std,p99}_{ttft,tpot,itl,e2el}_ms over completed requests: ttft and e2el per
//   request, tpot per request with >= 2 outputs ((e2el - ttft) / (outputs - 1)), itl over every
//   gap of every request. vLLM prints ttft, tpot and itl by default; e2el is written as
//   `--percentile-metrics ttft,tpot,itl,e2el` writes it. Over no values each is 0, as vLLM's
//   np.mean(x or 0).
// - Per-request lists (only with meta.detailed: metrics.bench_json detailed, the default; vLLM
//   writes them with --save-detailed), one entry per request listed (seconds): input_lens,
//   output_lens (0 for failed), ttfts, itls (a list per request: its gaps in order), latencies
//   (e2el), start_times (simulated send times; vLLM writes its perf_counter clock), errors ("" for
//   completed). max_output_tokens_per_s: the most output tokens in one 1-second bucket counted from
//   the first send of a completed request (vLLM's buckets; a failed request's send does not
//   count, as vLLM's min over successful outputs), with one rule in both modes: a token at t is
//   in bucket floor((t - first send) / 1 s) with t and the send in exact nanoseconds (the run's
//   TokenTallies, sim/turn_metrics.h; vLLM adds float gaps to start + ttft, which can put a
//   token within rounding of an edge in the bucket before). max_concurrent_requests: the most
//   completed requests in flight at once, over half-open [send, end) intervals. rtfx: 0 (no
//   audio). `summary` and `detailed` print the same aggregates, byte for byte.
// - Metadata: date null (no wall clock: the file is byte-identical for the same seed),
//   endpoint_type and backend "isim", label the policy, model_id the profile's model,
//   tokenizer_id null; request_rate and burstiness: the Poisson rate (sessions/s: the rate of
//   first turns; later turns follow the sessions' tool calls) and 1.0 for `poisson`, "inf" and
//   null for `users` (closed loop: max_concurrency = users), null for replay and user-phases.
//   `isim` (isim's own, read by no vLLM tool): policy, seed, request ("one turn"), the goodput
//   limits used in ms and slo_not_in_goodput.
//   vLLM's generated_texts and queue_times are not written (no text; no client-side queue).
// - The text is written field by field in vLLM's key order, one top-level key per line,
//   numbers as shortest round-trip decimals (a whole float keeps ".0", as Python writes it),
//   and goes to its file a megabyte at a time (a 100k-session run's is ~400 MB).
#pragma once

#include <string>
#include <vector>

#include "cluster/run_result.h"
#include "core/atomic_file.h"
#include "experiments/run/run.h"

namespace isim::exp {

// vLLM's --goodput limits in ms (0: not given) and the SLO keys that map to none.
struct BenchGoodput {
  double ttft_ms = 0, tpot_ms = 0, e2el_ms = 0;
  std::vector<std::string> unmapped;
  bool empty() const { return ttft_ms <= 0 && tpot_ms <= 0 && e2el_ms <= 0; }
};
BenchGoodput bench_goodput(const RunSlo& slo, const TurnSlo& turn);

// A request the run refused: a skipped session's first turn.
struct FailedRequest {
  int32_t session = 0;  // trace index
  double send_s = 0;
  int64_t input_tokens = 0;
  std::string error;
};
// The skipped sessions of `r`, each as its first turn (error: its line of r.skipped).
std::vector<FailedRequest> failed_requests(const trace::Trace& t, const cluster::RunResult& r);

struct BenchMeta {
  std::string label, model_id, policy;
  uint64_t seed = 0;
  std::string request_rate = "null", burstiness = "null", max_concurrency = "null";  // JSON text
  bool detailed = true;  // the per-request lists (metrics.bench_json: detailed), or not (summary)
};
BenchMeta bench_meta(const Experiment& e, const Inputs& in, const PolicySpec& p);

// bench.json's text for run `r`, whole, or given to `put` a piece at a time (never held whole).
// The aggregates come from r.tallies and r.turns; meta.detailed needs r's gaps (r.gaps_kept,
// std::logic_error otherwise: the run decides before it starts, run.h keeps_gaps).
void write_bench_json_text(const cluster::RunResult& r, const std::vector<FailedRequest>& failed,
                           const BenchGoodput& goodput, const BenchMeta& meta, const PutText& put);
std::string bench_json_text(const cluster::RunResult& r, const std::vector<FailedRequest>& failed,
                            const BenchGoodput& goodput, const BenchMeta& meta);

// Writes DIR/bench.json for one policy's run (write_file_atomic, a megabyte at a time); with
// metrics.bench_json: summary without the per-request lists, with `off` nothing.
void write_bench_json(const std::string& dir, const Experiment& e, const Inputs& in,
                      const PolicySpec& p, const cluster::RunResult& r);

// isim run --bench-json FILE: the file for `policy` (FILE with one policy; with several,
// FILE.POLICY.json, named as --trace-events names its files: core/out_path.h per_policy_file).
std::string bench_json_path(const std::string& file, const std::string& policy, size_t policies);
// Refusals before any output (InputError "--bench-json PATH: ..."): FILE's folder does not
// exist, FILE (or a per-policy name) is a folder or cannot be written, or is one of `inputs`,
// or two policies have one name (one's file would replace the other's), or the spec's
// metrics.bench_json is off (there is no bench.json to copy).
void check_bench_json_flag(const std::string& file, const Experiment& e,
                           const std::vector<std::string>& inputs);
// Copies OUT/POLICY/bench.json to each policy's file, printing where it went on stderr.
void copy_bench_json(const std::string& file, const Experiment& e, const std::string& out);

}  // namespace isim::exp
