// A replica's capacity (KV blocks from the profile and the engine's settings) and the prefix
// chains that name its prompt blocks.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/hash.h"
#include "core/input_error.h"
#include "sim/engine.h"
#include "sim/pool_limits.h"
#include "sim/vllm_kv_rule.h"

namespace isim::sim {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

bool vllm_rule(const Profile& p, const EngineConfig& c) {
  if (c.kv_capacity == "vllm") {
    if (!p.memory.given)
      throw InputError(fmt::format(
          "{}: memory: missing; engine.kv_capacity 'vllm' needs the profile's memory section "
          "(or use kv_capacity: reserve)",
          p.path.empty() ? "profile" : p.path));
    return true;
  }
  return c.kv_capacity == "auto" && p.memory.given && !c.activation_reserve_given;
}

// vLLM's rule (sim/vllm_kv_rule.h, the rule `isim validate --kv-logs` checks against real
// servers): returns the KV bytes and says how they came about.
double vllm_kv_bytes(const Profile& p, const EngineConfig& c, std::string& rule) {
  VllmKvSettings k;
  k.max_num_batched_tokens = c.max_num_batched_tokens;
  k.max_num_seqs = c.max_num_seqs;
  k.gpu_memory_utilization = c.gpu_memory_utilization;
  const VllmKvTerms t = vllm_kv_terms(p.model, p.memory, k);
  rule = fmt::format(
      "vLLM rule: {:.3f} GiB usable x {} - {:.3f} GiB weights - {:.3f} GiB activation peak "
      "(the larger of forward at {} tokens {:.3f}, sampler at {} sequences {:.3f}) - {} GiB "
      "non-torch - "
      "{} GiB CUDA graphs = {:.3f} GiB",
      p.memory.usable_gib, c.gpu_memory_utilization, t.weights / kGiB, t.peak / kGiB,
      c.max_num_batched_tokens, t.forward / kGiB, t.seqs, t.sampler / kGiB, p.memory.non_torch_gib,
      p.memory.cuda_graph_gib, t.kv_bytes / kGiB);
  return t.kv_bytes;
}

// When the GPU holds the weights and a block but the activation reserve takes that room, the
// reserve is the engine setting at fault, not the profile: name the key.
void check_reserve_leaves_room(const Profile& p, const EngineConfig& c, double avail,
                               int64_t block_bytes) {
  const double room = avail + c.activation_reserve_gib * kGiB;  // before the reserve
  const auto block = static_cast<double>(block_bytes);
  if (avail >= block || room < block) return;
  throw InputError(fmt::format(
      "engine.activation_reserve_gib: {} GiB{} leaves no room for a KV block: the GPU has {} GiB "
      "x {} - {:.3f} GiB weights = {:.3f} GiB ({}); expected at most {:.3f} GiB (that less one "
      "{} B block)",
      c.activation_reserve_gib, c.activation_reserve_given ? "" : " (the default)",
      p.device.memory_gib, c.gpu_memory_utilization, p.model.weight_bytes_per_gpu() / kGiB,
      room / kGiB, p.path.empty() ? "profile" : p.path, (room - block) / kGiB, block_bytes));
}

}  // namespace

BlockCounts derive_block_counts(const Profile& p, const EngineConfig& c) {
  BlockCounts b;
  b.block_bytes = p.model.kv_bytes_per_token() * p.block_tokens;
  if (b.block_bytes <= 0) throw InputError(p.path + ": model: KV bytes per block must be > 0");
  double avail = 0;
  if (c.gpu_blocks > 0) {
    b.gpu = c.gpu_blocks;
    b.gpu_rule = "engine.gpu_blocks";
  } else {
    if (vllm_rule(p, c)) {
      avail = vllm_kv_bytes(p, c, b.gpu_rule);
    } else {
      avail = p.device.memory_gib * kGiB * c.gpu_memory_utilization -
              p.model.weight_bytes_per_gpu() - c.activation_reserve_gib * kGiB;
      b.gpu_rule = fmt::format(
          "reserve rule: {} GiB x {} - {:.3f} GiB weights - {} GiB activation reserve = {:.3f} "
          "GiB",
          p.device.memory_gib, c.gpu_memory_utilization, p.model.weight_bytes_per_gpu() / kGiB,
          c.activation_reserve_gib, avail / kGiB);
      check_reserve_leaves_room(p, c, avail, b.block_bytes);
    }
    const double gpu = avail > 0 ? std::floor(avail / static_cast<double>(b.block_bytes)) : 0;
    if (!(gpu <= static_cast<double>(kMaxPoolBlocks)))  // before the cast, which could overflow
      throw InputError(fmt::format(
          "{}: {}: {} blocks of {} B, more than a pool holds (at most {}); give "
          "engine.gpu_blocks",
          p.path.empty() ? "profile" : p.path, b.gpu_rule, gpu, b.block_bytes, kMaxPoolBlocks));
    b.gpu = static_cast<int64_t>(gpu);
    b.gpu_rule += fmt::format(" -> {} blocks of {} KiB", b.gpu, b.block_bytes / 1024);
  }
  if (b.gpu <= 0) {
    // An analytic MoE profile written at ep 1 that only fits spread over a DP/EP group says so.
    const std::string min_ep = p.provenance_value("min_ep");
    throw InputError(
        fmt::format("{}: no KV block fits on the GPU ({}); the {} B blocks need more{}",
                    p.path.empty() ? "profile" : p.path, b.gpu_rule, b.block_bytes,
                    min_ep.empty() ? std::string()
                                   : " (provenance min_ep: " + min_ep.substr(0, min_ep.find(':')) +
                                         ": the experts must be spread over that many GPUs)"));
  }
  if (c.cpu_blocks >= 0) {
    b.cpu = c.cpu_blocks;
    return b;
  }
  // Compared as a double, before the cast, so that no swap space can overflow it.
  const double cpu = std::floor(c.swap_space_gib * kGiB / static_cast<double>(b.block_bytes));
  if (!(cpu <= static_cast<double>(kMaxPoolBlocks)))
    throw InputError(fmt::format(
        "engine.swap_space_gib: {} GiB is {} blocks of {} B, more than a pool holds (at most "
        "{}); lower it, or give engine.cpu_blocks",
        c.swap_space_gib, cpu, b.block_bytes, kMaxPoolBlocks));
  b.cpu = static_cast<int64_t>(cpu);
  return b;
}

std::vector<uint64_t> prefix_chain(const std::string& id, const trace::PrefixHashes& p,
                                   int64_t prompt_tokens, int64_t block_tokens) {
  std::vector<uint64_t> chain;
  if (p.empty()) return chain;
  if (p.block_tokens % block_tokens != 0)
    throw InputError(
        fmt::format("session {}: prefix.block_tokens {} is not a multiple of the "
                    "profile's kv.block_tokens {}",
                    id, p.block_tokens, block_tokens));
  const int64_t covered =
      std::min(prompt_tokens, static_cast<int64_t>(p.hashes.size()) * p.block_tokens);
  const int64_t sub = p.block_tokens / block_tokens;
  uint64_t h = 0x9e3779b97f4a7c15ull;
  for (int64_t j = 0; (j + 1) * block_tokens <= covered; ++j) {
    // splitmix64 over (parent, the trace's block id, the position inside it): equal chains
    // give equal hashes, and a diverging block changes every hash after it.
    const uint64_t x = splitmix64(
        h ^ (p.hashes[static_cast<size_t>(j / sub)] + 0x632be59bd9b4e019ull * (j % sub + 1)));
    h = x == 0 ? 1 : x;  // 0 means "no hash" in the pool
    chain.push_back(h);
  }
  return chain;
}

std::vector<uint64_t> prefix_chain(const trace::Session& s, int64_t block_tokens) {
  return prefix_chain(s.id, s.prefix, s.segments.front().input, block_tokens);
}

}  // namespace isim::sim
