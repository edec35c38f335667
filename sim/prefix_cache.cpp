// The replica's prefix cache: naming, matching and publishing blocks by content hash.
#include "sim/prefix_cache.h"

#include <algorithm>

#include "core/hash.h"

namespace isim::sim {

namespace {

// Extends a session's hash chain over its full blocks past the prompt (hash_every_block).
void extend_chain(SessionState& s, int64_t block_tokens) {
  const int64_t full = s.kv / block_tokens;
  // Past the prompt's content hashes, blocks hold this session's own tokens: a hash chained
  // from the last one and salted with the session's trace index names them uniquely.
  uint64_t h = s.chain.empty() ? splitmix64(0x51ed270b27a2f0d1ull + static_cast<uint64_t>(s.idx))
                               : s.chain.back();
  for (auto k = static_cast<int64_t>(s.chain.size()); k < full; ++k) {
    // After a reset the same positions hold new content: the generation salts them apart.
    const uint64_t x = splitmix64(h ^ (0x94d049bb133111ebull * static_cast<uint64_t>(k + 1)) ^
                                  (static_cast<uint64_t>(s.idx) << 20) ^
                                  (static_cast<uint64_t>(s.generation) << 48));
    h = x == 0 ? 1 : x;
    s.chain.push_back(h);
  }
}

}  // namespace

void PrefixCache::adopt(SessionState& t) {
  const int64_t bt = kv_.block_tokens();
  // Content is append-only: a chain computed in this block size elsewhere still names the
  // session's leading blocks here, past the prompt too.
  if (t.chain_block_tokens != bt) {
    if (!t.fork_chain.empty() && t.fork_block_tokens == bt) {
      // A fork: its prompt starts with the parent's context, named by the parent's chain.
      t.chain = t.fork_chain;
      t.chain_shared = true;
      ++counters_.forks;
    } else {
      t.chain = prefix_chain(t.id(), t.prefix(), t.prompt_tokens(), bt);
    }
    t.prompt_chain_blocks = static_cast<int64_t>(t.chain.size());
    t.chain_block_tokens = bt;
  }
  t.published = 0;
  shared_blocks_ = shared_blocks_ || (caching_ && (!t.chain.empty() || every_block_));
}

bool PrefixCache::can_match(const SessionState& s) const {
  return caching_ && !s.chain.empty() && s.kv == 0 && s.gpu_blocks.empty() && s.cpu_blocks.empty();
}

int64_t PrefixCache::matchable_blocks(const SessionState& s) const {
  // One token is always left to compute, so that the prefill produces the next token's logits.
  return std::min<int64_t>(static_cast<int64_t>(s.chain.size()),
                           (s.context - 1) / kv_.block_tokens());
}

std::pair<int64_t, int64_t> PrefixCache::preview(const SessionState& s) const {
  if (!can_match(s)) return {0, 0};
  const BlockPool& gpu = kv_.gpu();
  int64_t j = 0, unheld = 0;
  for (const int64_t limit = matchable_blocks(s); j < limit; ++j) {
    const BlockId b = gpu.find(s.chain[static_cast<size_t>(j)]);
    if (b < 0) break;
    if (gpu.refcount(b) == 0) ++unheld;
  }
  return {j, unheld};
}

void PrefixCache::match(SessionState& s) {
  if (!can_match(s)) return;
  BlockPool& gpu = kv_.gpu();
  const int64_t bt = kv_.block_tokens();
  // The hit rate counts each prompt once; later rebuilds (after a preemption or a discard)
  // still reuse what is cached.
  const bool first = s.m.prefix_lookup_tokens == 0;
  const auto lookup = std::min<int64_t>(s.context, s.prompt_tokens());
  if (first) {
    s.m.prefix_lookup_tokens += lookup;
    counters_.prefix_lookup_tokens += lookup;
  }
  int64_t j = 0;
  for (const int64_t limit = matchable_blocks(s); j < limit; ++j) {
    BlockId b = gpu.acquire_cached(s.chain[static_cast<size_t>(j)]);
    if (b < 0) break;
    if (kv_.manager().values_shared() && gpu.refcount(b) > 1) gpu.value(b);  // two hold it
    s.gpu_blocks.push_back(b);
  }
  s.published = j;
  const int64_t hit = j * bt;
  s.kv = hit;
  kv_.take_recompute(s, hit, /*recomputed=*/false);
  if (!first) return;
  s.m.prefix_hit_tokens += hit;
  counters_.prefix_hit_tokens += hit;
  // Blocks this replica had computed and published before, evicted since: lost reuse. (The
  // first pass readies the set's slots, so their cache misses overlap.)
  const int64_t limit = matchable_blocks(s);
  if (j >= limit) return;
  ever_published_.flush();
  for (int64_t k = j; k < limit; ++k) ever_published_.prefetch(s.chain[static_cast<size_t>(k)]);
  for (int64_t k = j; k < limit; ++k)
    if (ever_published_.contains(s.chain[static_cast<size_t>(k)]))
      counters_.prefix_evicted_tokens += bt;
}

void PrefixCache::publish(SessionState& s) {
  BlockPool& gpu = kv_.gpu();
  const int64_t bt = kv_.block_tokens();
  if (every_block_ && caching_) extend_chain(s, bt);
  auto full = std::min<int64_t>(s.kv / bt, static_cast<int64_t>(s.chain.size()));
  // Mid-restore, only the restored lead's blocks sit at their places in the chain.
  if (s.dropped_blocks > 0) full = std::min(full, s.restored_blocks);
  for (; s.published < full && s.published < static_cast<int64_t>(s.gpu_blocks.size());
       ++s.published) {
    const uint64_t hash = s.chain[static_cast<size_t>(s.published)];
    const BlockId b = s.gpu_blocks[static_cast<size_t>(s.published)];
    gpu.publish(b, hash);
    ever_published_.add(hash);
    // Block position: the prompt's (or a fork's parent's) blocks are the shareable ones.
    if (kv_.manager().values_shared() && s.published < s.prompt_chain_blocks) gpu.value(b);
  }
}

int64_t PrefixCache::cached_prefix_blocks(const std::vector<uint64_t>& chain) const {
  const BlockPool& gpu = kv_.gpu();
  int64_t j = 0;
  while (j < static_cast<int64_t>(chain.size()) && gpu.has_hash(chain[static_cast<size_t>(j)])) ++j;
  return j;
}

}  // namespace isim::sim
