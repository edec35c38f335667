// EngineConfig: one replica's settings (scheduler, batch limits, memory and KV capacity, prefix
// caching, vLLM v1 knobs, the KV manager's name), and the rules computed from them before a run:
// the GPU and CPU block counts, and the prompt's prefix-hash chain in the engine's block size.
// Implemented in capacity.cpp; sim/engine.h includes it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/knobs.h"
#include "sim/pool_limits.h"
#include "sim/profile.h"
#include "sim/replica_view.h"
#include "traces/session.h"

namespace isim::sim {

// The most time-series samples a run may take (EngineConfig::max_time_samples' default).
inline constexpr int64_t kMaxTimeSamples = 1000000;

// The largest batch limits a spec may set (the knob tables' bounds).
inline constexpr int64_t kMaxSeqsPerStep = int64_t{1} << 20;
inline constexpr int64_t kMaxTokensPerStep = int64_t{1} << 24;
inline constexpr double kMaxGib = 1 << 20;  // a PiB: more than any host or device holds
// Why a pool's block count ends at kMaxPoolBlocks (sim/pool_limits.h).
inline constexpr const char* kPoolWhy = "the most blocks a pool holds: ~40 B each, 10 GiB";

// The settings, their keys, bounds and help are the knob tables below (core/knobs.h): parsing,
// the valid keys in errors, config.resolved.yaml and `isim list` all come from them. A member's
// initialiser is its default.
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
  // metrics.timeseries_interval_s. experiments/run/run.cpp refuses upfront what the trace alone
  // would exceed.
  int64_t max_time_samples = kMaxTimeSamples;
  bool prefix_caching = true;  // share cached prompt blocks across sessions (traces with hashes)
  // vLLM v1 knobs (scheduler `vllm-v1` reads them; the other schedulers ignore them).
  int64_t long_prefill_token_threshold = 0;  // a prefill chunk's cap per step; 0: none
  int32_t max_num_partial_prefills = 1;      // concurrent partial prefills
  int32_t max_long_partial_prefills = 1;     // of them, prompts above the threshold
  double watermark = 0.0;            // fraction of GPU blocks a new admission must leave free
  bool reserve_full_isl = true;      // admit only if the whole context fits (vLLM reserve_full_isl)
  bool async_scheduling = false;     // per-step CPU overhead overlaps the previous forward
  std::string kv_manager = "local";  // policies/kv_managers.h; the owner builds one per replica
  std::map<std::string, std::string> kv_manager_params;  // as given (checked by the manager)
  bool check_invariants = false;
  bool coalesce_decode = true;  // decode-only steps between events at O(1) each (sim/decode_run.h)

  // The `engine:` keys every scheduler reads: (key, member, bound, what a value must be, help).
  template <class Visit>
  void knobs(Visit&& k) {
    k("scheduler", scheduler, none(), "a scheduler name", "iteration scheduler (see schedulers)");
    k("max_num_seqs", max_num_seqs, above_upto(0, kMaxSeqsPerStep), "an integer",
      "sequences per step");
    k("max_num_batched_tokens", max_num_batched_tokens, above_upto(0, kMaxTokensPerStep),
      "an integer", "tokens per step");
    k("gpu_memory_utilization", gpu_memory_utilization, above_upto(0, 1), "a fraction in (0, 1]",
      "device share for weights and KV");
    k("activation_reserve_gib", activation_reserve_gib, in(0, kMaxGib), "GiB",
      "reserve rule: activations, CUDA graphs, workspace");
    k("swap_space_gib", swap_space_gib, in(0, kMaxGib), "GiB", "CPU swap pool");
    k("gpu_blocks", gpu_blocks, in(0, kMaxPoolBlocks).because(kPoolWhy),
      "an integer (0 = derive from memory)", "GPU KV blocks; 0: from memory");
    k("cpu_blocks", cpu_blocks, in(-1, kMaxPoolBlocks).because(kPoolWhy),
      "an integer (-1 = derive from swap_space_gib)", "CPU KV blocks; -1: from swap_space_gib");
    k("prefix_caching", prefix_caching, none(), "true or false",
      "share cached prompt blocks across sessions");
    k("kv_capacity", kv_capacity, none(), "auto, vllm or reserve",
      "KV capacity rule: auto, vllm or reserve");
  }
  // The keys of the token-budget schedulers (vLLM v1), read by those whose
  // SchedulerTraits::budget_knobs says so; config.resolved.yaml shows them only for those.
  template <class Visit>
  void scheduler_knobs(Visit&& k) {
    k("long_prefill_token_threshold", long_prefill_token_threshold, in(0, kMaxTokensPerStep),
      "an integer (0 = no cap)", "a prefill chunk's cap per step; 0: none");
    k("max_num_partial_prefills", max_num_partial_prefills, above_upto(0, kMaxSeqsPerStep),
      "an integer", "concurrent partial prefills");
    k("max_long_partial_prefills", max_long_partial_prefills, above_upto(0, kMaxSeqsPerStep),
      "an integer", "of them, prompts above the threshold");
    k("watermark", watermark, from_below(0, 1), "a fraction in [0, 1)",
      "share of GPU blocks a new admission must leave free");
    k("reserve_full_isl", reserve_full_isl, none(), "true or false",
      "admit only if the whole context fits");
  }
  // Optional features: config.resolved.yaml shows them only when set away from the default.
  template <class Visit>
  void feature_knobs(Visit&& k) {
    k("async_scheduling", async_scheduling, none(), "true or false",
      "per-step CPU overhead overlaps the previous forward");
  }
  // How the replica is simulated, never what comes out (outputs are byte-identical either
  // way): config.resolved.yaml leaves them out.
  template <class Visit>
  void speed_knobs(Visit&& k) {
    k("coalesce_decode", coalesce_decode, none(), "true or false",
      "advance decode-only steps between events at O(1) each (same outputs)");
  }
  template <class Visit>
  void all_knobs(Visit&& k) {
    knobs(k);
    scheduler_knobs(k);
    feature_knobs(k);
    speed_knobs(k);
  }
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
