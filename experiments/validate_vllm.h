// isim validate --against vllm RUN_DIR: replay a real vLLM run's requests in the simulator, on
// the engine settings the run recorded, and compare the latencies per metric.
//
// A run folder holds meta.json (engine settings, the KV cache vLLM sized, the dataset's name and
// sha256), requests.jsonl (traces/vllm_requests.h) and optionally timeseries.csv (per tick:
// t, running, waiting, ...).
//
// Contract:
// - Reading is strict. meta.json errors name `RUN_DIR/meta.json: key.path: reason` (missing
//   keys, wrong types, values out of range); timeseries.csv errors name `FILE:LINE: column:
//   reason`; requests.jsonl as its importer does.
// - The simulated trace is the requests (arrivals from queued_ts). When RUN_DIR/../<basename of
//   dataset_path> exists and its sha256 is dataset_hash, each request bench-N takes the prefix
//   hashes of that file's line N (traces/llmservingsim.h); otherwise it runs without them and
//   the note says why.
// - The engine takes max_num_seqs, max_num_batched_tokens, gpu_memory_utilization, prefix
//   caching and the v1 scheduler knobs from meta.json; never the GPU block count (predicting it
//   is part of the test). The run's kv_cache.block_size must equal the profile's block_tokens,
//   and its tensor_parallel_size the profile's model.tp.
// - Both sides use one definition: TTFT = first token - queued; TPOT = (last - first) /
//   (output - 1), undefined for one output token; e2e = last - queued; makespan = last token of
//   all - first queued; throughput = output tokens / makespan. Percentiles are sim::make_stat's
//   nearest rank. Error = (sim - real) / real.
// - Every output is written under a temporary name and renamed into place.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "experiments/experiment.h"
#include "sim/metrics.h"
#include "traces/session.h"
#include "traces/vllm_requests.h"

namespace isim::exp {

// The scheduler that follows vLLM v1's Scheduler.schedule(); --scheduler overrides it.
inline constexpr const char* kAgainstVllmScheduler = "vllm-v1";

struct VllmMeta {
  std::string path;  // for messages
  std::string vllm_version, model, device_name;
  int64_t tensor_parallel_size = 1;
  int64_t max_num_seqs = 0, max_num_batched_tokens = 0;
  double gpu_memory_utilization = 0;
  bool enable_prefix_caching = false;
  int64_t block_size = 0;
  std::optional<int64_t> num_gpu_blocks;  // what vLLM sized (null when it did not say)
  int64_t long_prefill_token_threshold = 0;
  int64_t max_num_partial_prefills = 1, max_long_partial_prefills = 1;
  bool async_scheduling = false;
  std::string dataset_path, dataset_hash;
};

VllmMeta parse_vllm_meta(const std::string& text, const std::string& origin);
VllmMeta read_vllm_meta(const std::string& path);

struct VllmTick {
  double t_s = 0;
  int64_t running = 0, waiting = 0;
};
std::vector<VllmTick> parse_vllm_timeseries(std::istream& in, const std::string& origin);
std::vector<VllmTick> read_vllm_timeseries(const std::string& path);

struct VllmRun {
  std::string dir;
  VllmMeta meta;
  std::vector<trace::VllmRequest> requests;
  bool has_timeseries = false;
  std::vector<VllmTick> timeseries;
};
VllmRun load_vllm_run(const std::string& dir);

// The requests as a trace, with the dataset's prefix hashes when it is there and matches; `note`
// says which (and why not).
struct RunTrace {
  trace::Trace trace;
  bool prefix_hashes = false;
  std::string note;
};
RunTrace vllm_run_trace(const VllmRun& run);

// One request's latencies (seconds); tpot_s < 0 when undefined (one output token).
struct Latency {
  std::string id;
  double start_s = 0, finish_s = 0;  // queued (arrival) and last token
  double ttft_s = 0, tpot_s = -1, e2e_s = 0;
  int64_t output = 0;
};
std::vector<Latency> real_latencies(const std::vector<trace::VllmRequest>& requests);
// Finished sessions only, from the records' own ttft_s, tpot_s and e2e_s.
std::vector<Latency> sim_latencies(const std::vector<sim::SessionRecord>& sessions);

struct AgainstMetric {
  std::string metric;
  double real = 0, sim = 0;
  double error() const;  // (sim - real) / real; +-inf when real is 0 and sim is not
};
// ttft_s.{mean,p50,p90,p99}, tpot_s.{mean,p50,p99}, e2e_s.{mean,p50,p99},
// throughput_tokens_per_s, makespan_s, in that order.
std::vector<std::pair<std::string, double>> latency_metrics(const std::vector<Latency>& l);
std::vector<AgainstMetric> compare_latencies(const std::vector<Latency>& real,
                                             const std::vector<Latency>& sim);

struct AgainstOptions {
  std::string run_dir, profile, out;
  std::string scheduler = kAgainstVllmScheduler;
  std::vector<std::string> overrides;  // -p key=value, applied after the run's settings
};

// The experiment of the replay: `trace_path` (native JSONL) replayed, `discard` policy, the
// run's engine settings, then the overrides. InputError on a bad override.
Experiment vllm_experiment(const VllmMeta& meta, const AgainstOptions& o,
                           const std::string& trace_path);

// The whole command: reads, simulates, prints the table, writes DIR/against.{csv,json} (the
// metrics of compare_latencies, then gpu_blocks: vLLM's count against the simulator's, when the
// run reported one), against_requests.csv (per request, real beside sim), trace.jsonl (what was
// replayed), the run's outputs (write_run) and against.png (a note instead without matplotlib).
int run_against_vllm(const AgainstOptions& o);

std::string against_csv(const std::vector<AgainstMetric>& metrics);

// Writes `text` to `path` through `path.tmp` and a rename, so a reader never sees half a file.

}  // namespace isim::exp
