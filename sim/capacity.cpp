// A replica's capacity (KV blocks from the profile and the engine's settings) and the prefix
// chains that name its prompt blocks.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "sim/engine.h"
#include "traces/hash.h"
#include "traces/input_error.h"

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

// vLLM's rule (sim/profile.h MemorySpec): returns the KV bytes and says how they came about.
double vllm_kv_bytes(const Profile& p, const EngineConfig& c, std::string& rule) {
  const MemorySpec& m = p.memory;
  const double weights = p.model.weight_bytes_per_gpu() + m.weights_extra_bytes;
  const auto tokens = static_cast<double>(c.max_num_batched_tokens);
  const auto seqs =
      static_cast<double>(std::min<int64_t>(c.max_num_seqs, c.max_num_batched_tokens));
  const double forward = m.activation_bytes_per_token * tokens;
  const double sampler = m.sampler_bytes_per_sequence * seqs;
  const double peak = std::max(forward, sampler);
  const double requested = m.usable_gib * kGiB * c.gpu_memory_utilization;
  const double kv = requested - weights - peak - (m.non_torch_gib + m.cuda_graph_gib) * kGiB;
  rule = fmt::format(
      "vLLM rule: {:.3f} GiB usable x {} - {:.3f} GiB weights - {:.3f} GiB activation peak "
      "(the larger of forward at {} tokens {:.3f}, sampler at {} sequences {:.3f}) - {} GiB "
      "non-torch - "
      "{} GiB CUDA graphs = {:.3f} GiB",
      m.usable_gib, c.gpu_memory_utilization, weights / kGiB, peak / kGiB, c.max_num_batched_tokens,
      forward / kGiB, static_cast<int64_t>(seqs), sampler / kGiB, m.non_torch_gib, m.cuda_graph_gib,
      kv / kGiB);
  return kv;
}

// floor(bytes / block_bytes) as a block count a pool can hold (BlockId is int32), or an
// InputError naming what the bytes came from: a cast of a larger double would be undefined.
int64_t blocks_of(double bytes, int64_t block_bytes, const std::string& from) {
  const double n = std::floor(bytes / static_cast<double>(block_bytes));
  if (!(n <= static_cast<double>(INT32_MAX)))
    throw InputError(fmt::format("{}: gives {} blocks of {} B, more than a pool holds ({}); give "
                                 "less memory or larger blocks",
                                 from, n, block_bytes, INT32_MAX));
  return n > 0 ? static_cast<int64_t>(n) : 0;
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
    }
    b.gpu = blocks_of(avail, b.block_bytes,
                      fmt::format("{}: {}", p.path.empty() ? "profile" : p.path, b.gpu_rule));
    b.gpu_rule += fmt::format(" -> {} blocks of {} KiB", b.gpu, b.block_bytes / 1024);
  }
  if (b.gpu <= 0)
    throw InputError(fmt::format("{}: no KV block fits on the GPU ({}); the {} B blocks need more",
                                 p.path.empty() ? "profile" : p.path, b.gpu_rule, b.block_bytes));
  b.cpu = c.cpu_blocks >= 0
              ? c.cpu_blocks
              : blocks_of(c.swap_space_gib * kGiB, b.block_bytes,
                          fmt::format("engine.swap_space_gib {}", c.swap_space_gib));
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
