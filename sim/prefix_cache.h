// PrefixCache: a replica's GPU prefix cache over content-hash chains.
//
// Contract:
// - `adopt` names a session's blocks when it lands here: a chain computed elsewhere in the same
//   block size is kept (content is append-only), a fork takes its parent's chain, otherwise the
//   prompt's prefix hashes are chained in this block size.
// - A session rebuilding from nothing (no KV anywhere) may start from cached blocks: its
//   leading chain blocks, short of its last context token (one token is always computed, for
//   the next token's logits). `preview` says what `match` would take without taking anything.
// - `publish` names each full GPU block a session computed past what it had published
//   (prompt blocks; every full block when the scheduler hashes every block). The prefix hit
//   rate counts each prompt once; blocks this replica published, evicted before they were
//   needed again, are counted as lost reuse (prefix_evicted_tokens).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "sim/hash_set.h"
#include "sim/kv_residency.h"

namespace isim::sim {

class PrefixCache {
 public:
  PrefixCache(KvResidency& kv, Counters& counters, bool prefix_caching, bool hash_every_block)
      : kv_(kv), counters_(counters), caching_(prefix_caching), every_block_(hash_every_block) {}

  void adopt(SessionState& t);
  void match(SessionState& s);
  void publish(SessionState& s);
  // Cached prompt blocks a session would hit now, and how many of them are unheld (taking
  // them uses free capacity); nothing is acquired.
  std::pair<int64_t, int64_t> preview(const SessionState& s) const;
  // Leading blocks of `chain` that the GPU prefix cache holds now.
  int64_t cached_prefix_blocks(const std::vector<uint64_t>& chain) const;
  bool caching() const { return caching_; }
  bool hashes_every_block() const { return every_block_; }
  // Some session may share blocks with another (WasteMeter counts shared blocks once).
  bool shares_blocks() const { return shared_blocks_; }

 private:
  bool can_match(const SessionState& s) const;
  int64_t matchable_blocks(const SessionState& s) const;

  KvResidency& kv_;
  Counters& counters_;
  bool caching_;
  bool every_block_;
  bool shared_blocks_ = false;
  HashSet ever_published_;  // prefix hashes this replica computed
};

}  // namespace isim::sim
