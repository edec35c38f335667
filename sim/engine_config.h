// EngineConfig: one replica's settings (scheduler, batch limits, memory and KV capacity, prefix
// caching, vLLM v1 knobs, the KV manager's name), and the rules computed from them before a run:
// the GPU and CPU block counts, and the prompt's prefix-hash chain in the engine's block size.
// Implemented in capacity.cpp; sim/engine.h includes it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sim/profile.h"
#include "sim/replica_view.h"
#include "traces/session.h"

namespace isim::sim {

// The most time-series samples a run may take (EngineConfig::max_time_samples' default).
inline constexpr int64_t kMaxTimeSamples = 1000000;

struct EngineConfig {
  std::string scheduler = "vllm-v0";
  int32_t max_num_seqs = 256;
  int64_t max_num_batched_tokens = 4096;
  double gpu_memory_utilization = 0.9;
  // KV capacity rule: "auto" (vLLM's rule when the profile has a `memory:` section and no
  // activation_reserve_gib was given, else the reserve rule), "vllm" or "reserve".
  std::string kv_capacity = "auto";
  double activation_reserve_gib = 2.0;  // reserve rule: activations, CUDA graphs, workspace
  bool activation_reserve_given = false;
  double swap_space_gib = 64.0;  // CPU swap pool
  int64_t gpu_blocks = 0;        // > 0 overrides the derived count
  int64_t cpu_blocks = -1;       // >= 0 overrides the derived count
  double timeseries_interval_s = 1.0;
  // The most time-series samples a run may take (replica 0's setting): a run that outlasts
  // its trace (sessions queue) and reaches it stops with InputError naming
  // metrics.timeseries_interval_s. experiments/run.cpp refuses upfront what the trace alone
  // would exceed.
  int64_t max_time_samples = kMaxTimeSamples;
  bool prefix_caching = true;  // share cached prompt blocks across sessions (traces with hashes)
  // vLLM v1 knobs (scheduler `vllm-v1` reads them; the other schedulers ignore them).
  int64_t long_prefill_token_threshold = 0;  // a prefill chunk's cap per step; 0: none
  int32_t max_num_partial_prefills = 1;      // concurrent partial prefills
  int32_t max_long_partial_prefills = 1;     // of them, prompts above the threshold
  double watermark = 0.0;         // fraction of GPU blocks a new admission must leave free
  bool reserve_full_isl = true;   // admit only if the whole context fits (vLLM reserve_full_isl)
  bool async_scheduling = false;  // per-step CPU overhead overlaps the previous forward
  std::string kv_manager = "local";  // policies/kv_managers.h; the owner builds one per replica
  std::map<std::string, std::string> kv_manager_params;  // as given (checked by the manager)
  bool check_invariants = false;
};

// GPU blocks = (memory x utilisation - weights - activation reserve) / block bytes;
// CPU blocks = swap space / block bytes. Throws InputError when no GPU block fits.
BlockCounts derive_block_counts(const Profile& p, const EngineConfig& c);

// Content hashes of the full engine blocks of a session's prompt, from its trace prefix hashes
// (empty when it has none). InputError if the trace's block size is not a multiple of ours.
std::vector<uint64_t> prefix_chain(const trace::Session& s, int64_t block_tokens);
std::vector<uint64_t> prefix_chain(const std::string& id, const trace::PrefixHashes& p,
                                   int64_t prompt_tokens, int64_t block_tokens);

}  // namespace isim::sim
