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
// - meta.json's sections kv_cache, hardware and resolved_config are each optional (absent or
//   null); one that is there is read strictly. The full schema has all three; the older one
//   that LLMServingSim's scripts wrote before April 2026 has none (only schema_version, model,
//   vllm_version, engine_kwargs, dataset_path, dataset_hash and run facts), and a run may
//   carry any subset. Without hardware the GPU is the profile's. Without kv_cache, block_size,
//   gpu_memory_utilization and enable_prefix_caching come from engine_kwargs,
//   engine_kwargs.num_gpu_blocks_override (when set) is vLLM's block count, and a
//   kv_cache_memory_bytes is noted (the predicted count does not know it); kv_cache without
//   num_gpu_blocks (or null) states no count either. Without resolved_config the scheduler
//   knobs come from engine_kwargs. max_num_seqs and max_num_batched_tokens come from
//   engine_kwargs, else resolved_config.scheduler_config. What none of these states takes
//   vLLM's default of the run's version (vllm_defaults.h), each printed as an assumption;
//   vllm_version may be absent only when no such default is needed.
// - Parallelism comes from engine_kwargs (tensor/data/pipeline_parallel_size,
//   enable_expert_parallel; vLLM's defaults when absent). tensor_parallel_size must equal the
//   profile's model.tp. data_parallel_size D > 1 (or expert parallel on a MoE model over D x tp
//   > 1 ranks) replays on a cluster (VllmLayout): one group of D engine cores behind the dp-lb
//   router, each core with the single engine's settings (max_num_seqs, max_num_batched_tokens
//   and the KV capacity are per core in vLLM); on a MoE model the cores step in lockstep
//   (cluster/lockstep.h), with expert parallel the experts spread over D x tp ranks; on a dense
//   one they are independent. Expert parallel on a dense model or over one rank has no effect
//   (an assumption). Any other D = 1 run is the one-engine replay, unchanged (byte for byte).
//   Pipeline parallel > 1, D > 1024, chunked prefill off and a performance_mode other than
//   balanced are refused (InputError naming the key and value, and what simulating it would
//   need); so is a lockstep layout whose profile has no MoE tables, or whose experts do not
//   divide over the EP ranks (check_vllm_profile).
// - With D > 1, vLLM's block count is the sum over its cores (vLLM's front end adds the count
//   each core reports; engine_kwargs.num_gpu_blocks_override is per core, so it counts D
//   times); the simulator's, in the table and against.json, is likewise the sum over cores, and
//   the replay at vLLM's count gives each core that count / D (rounded down, said so when D
//   does not divide it).
// - The simulated trace is the requests (arrivals from queued_ts). When RUN_DIR/../<basename of
//   dataset_path> exists and its sha256 is dataset_hash, each request bench-N takes the prefix
//   hashes of that file's line N (traces/llmservingsim.h); otherwise it runs without them and
//   the note says why.
// - The engine takes max_num_seqs, max_num_batched_tokens, gpu_memory_utilization, prefix
//   caching and the v1 scheduler knobs from meta.json; the first replay never takes the GPU
//   block count (predicting it is part of the test). When the run states vLLM's count and it
//   differs, a second replay runs at it (validate_vllm_report.h: latency against capacity
//   error). The run's block size must equal the profile's block_tokens.
// - Both sides use one definition: TTFT = first token - queued; TPOT = (last - first) /
//   (output - 1), undefined for one output token; e2e = last - queued; makespan = last token of
//   all - first queued; throughput = output tokens / makespan. Percentiles are sim::make_stat's
//   nearest rank. Error = (sim - real) / real.
// - Every output is written under a temporary name and renamed into place.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "experiments/spec/experiment.h"
#include "sim/metrics.h"
#include "sim/profile.h"
#include "traces/session.h"
#include "traces/vllm_requests.h"

namespace isim::exp {

// The scheduler that follows vLLM v1's Scheduler.schedule(); --scheduler overrides it.
inline constexpr const char* kAgainstVllmScheduler = "vllm-v1";

struct VllmMeta {
  std::string path;  // for messages
  // vllm_version "" when meta.json does not state it; device_name "" without hardware.
  std::string vllm_version, model, device_name;
  // The older schema of LLMServingSim's scripts (before April 2026): no kv_cache, hardware or
  // resolved_config; what engine_kwargs does not state takes vLLM's defaults (vllm_defaults.h).
  bool older_schema = false;
  // Which of kv_cache, hardware, resolved_config the run lacks, in that order.
  std::vector<std::string> missing_sections;
  // Setting (engine_kwargs name) -> the meta.json key it was read from; absent when defaulted.
  std::map<std::string, std::string> read_from;
  // The key that stated `setting`, or engine_kwargs.<setting> when the run did not state it.
  std::string key_of(const std::string& setting) const {
    auto it = read_from.find(setting);
    return it == read_from.end() ? "engine_kwargs." + setting : it->second;
  }
  // Why the run states no vLLM block count ("" when num_gpu_blocks is set).
  std::string no_gpu_blocks;
  int64_t tensor_parallel_size = 1, data_parallel_size = 1, pipeline_parallel_size = 1;
  bool enable_expert_parallel = false;
  int64_t max_num_seqs = 0, max_num_batched_tokens = 0;
  double gpu_memory_utilization = 0;
  bool enable_prefix_caching = false;
  bool enable_chunked_prefill = true;
  int64_t block_size = 0;
  std::optional<int64_t> num_gpu_blocks;  // what vLLM sized (null when it did not say)
  int64_t long_prefill_token_threshold = 0;
  int64_t max_num_partial_prefills = 1, max_long_partial_prefills = 1;
  bool async_scheduling = false;
  std::optional<int64_t> max_model_len;  // engine_kwargs.max_model_len, when stated
  std::string performance_mode = "balanced";
  std::string dataset_path, dataset_hash;
  // Keys (engine_kwargs names) the run did not state: apply_vllm_defaults fills them.
  std::vector<std::string> unstated;
  // One line per value the replay assumes rather than reads (printed and in against.json).
  std::vector<std::string> assumptions;
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

// How the replay lays out the run's engine cores (validate_vllm_layout.cpp).
struct VllmLayout {
  int64_t dp = 1, tp = 1;
  bool moe = false;  // the profile's model is MoE
  bool ep = false;   // expert parallel on a MoE model of dp x tp > 1 ranks: the experts over them
  // A cluster of one group of `dp` cores behind dp-lb; otherwise the one-engine replay.
  bool cluster() const { return dp > 1 || ep; }
  bool lockstep() const { return moe && cluster(); }
  // "DP 2 x TP 1, expert parallel: 2 engine cores in lockstep behind dp-lb (...)"; "" for the
  // one-engine replay.
  std::string line() const;
};

// The run's layout against the profile's: block size and tensor parallel must be equal; expert
// parallel is noted as without effect on a dense model or one rank (an assumption); a lockstep
// layout
// needs a tables profile with moe_us or moe_roofline, and with expert parallel experts that
// divide over dp x tp ranks. InputError naming meta.json's key, the run's and the profile's
// value. Returns the layout the replay takes.
VllmLayout check_vllm_profile(VllmMeta& meta, const sim::Profile& p,
                              const std::string& profile_path);

struct AgainstOptions {
  std::string run_dir, profile, out;
  std::string scheduler = kAgainstVllmScheduler;
  // How the run's engine was started, for the defaults of settings the run does not state
  // (vllm_defaults.h): engine, openai-api-server or llm-class.
  std::string usage_context = "engine";
  std::vector<std::string> overrides;  // -p key=value, applied after the run's settings
};

// The experiment of the replay: `trace_path` (native JSONL) replayed, `discard` policy, the
// run's engine settings, with `layout.cluster()` a `cluster:` of one group (count 1, dp, ep)
// behind dp-lb, then the overrides. InputError on a bad override.
Experiment vllm_experiment(const VllmMeta& meta, const AgainstOptions& o,
                           const std::string& trace_path, const VllmLayout& layout = {});

// The whole command: reads, applies the defaults of what the run does not state, simulates,
// prints the table, the capacity line (without vLLM's count, a line saying there is none and
// why) and the summary line, and writes DIR/against.json (every replay, the capacity error,
// the summary, the assumptions), and per replay (DIR for the first,
// DIR/at-vllm-blocks for the one at vLLM's count) against.csv (the metrics of
// compare_latencies, then gpu_blocks: vLLM's count against the replay's, when the run reported
// one), against_requests.csv (per request, real beside sim), the run's outputs (write_run) and
// against.png (a note instead without matplotlib); DIR/trace.jsonl is what was replayed.
int run_against_vllm(const AgainstOptions& o);

std::string against_csv(const std::vector<AgainstMetric>& metrics);
// against_requests.csv: one row per real request (by id), its simulated latencies beside it
// (empty when the simulation did not finish it; a TPOT < 0 is written empty).
std::string against_requests_csv(const std::vector<Latency>& real, const std::vector<Latency>& sim);

// Writes `text` to `path` through `path.tmp` and a rename, so a reader never sees half a file.

}  // namespace isim::exp
