// A replica's capacity (KV blocks from the profile and the engine's settings) and the prefix
// chains that name its prompt blocks.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "sim/engine.h"
#include "traces/hash.h"
#include "traces/input_error.h"

namespace isim::sim {

BlockCounts derive_block_counts(const Profile& p, const EngineConfig& c) {
  BlockCounts b;
  b.block_bytes = p.model.kv_bytes_per_token() * p.block_tokens;
  if (b.block_bytes <= 0) throw InputError(p.path + ": model: KV bytes per block must be > 0");
  const double gib = 1024.0 * 1024.0 * 1024.0;
  if (c.gpu_blocks > 0) {
    b.gpu = c.gpu_blocks;
  } else {
    double avail = p.device.memory_gib * gib * c.gpu_memory_utilization -
                   p.model.weight_bytes_per_gpu() - c.activation_reserve_gib * gib;
    b.gpu = avail > 0 ? static_cast<int64_t>(std::floor(avail / static_cast<double>(b.block_bytes)))
                      : 0;
  }
  if (b.gpu <= 0)
    throw InputError(fmt::format(
        "{}: no KV block fits on the GPU: {} GiB x {} utilisation - {:.2f} GiB weights - {} GiB "
        "activation reserve leaves nothing for {} B blocks",
        p.path.empty() ? "profile" : p.path, p.device.memory_gib, c.gpu_memory_utilization,
        p.model.weight_bytes_per_gpu() / gib, c.activation_reserve_gib, b.block_bytes));
  b.cpu = c.cpu_blocks >= 0 ? c.cpu_blocks
                            : static_cast<int64_t>(std::floor(c.swap_space_gib * gib /
                                                              static_cast<double>(b.block_bytes)));
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
