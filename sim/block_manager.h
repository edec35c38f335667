// BlockPool: paged KV memory in fixed-size blocks (one pool per tier: GPU, CPU), with
// reference counts and a content-hash cache for prefix sharing.
//
// Contract:
// - A block is held by `refcount` sessions (0: not held). A block that is not held is either
//   free, or cached: it keeps the content hash it was published under and can be acquired again
//   by hash until allocation needs the room and evicts it: least recently released first,
//   except that a block marked valued (`value`, while held) goes only after every cached block
//   that is not. Without `value`, the order is plain LRU.
// - `free()` counts every block an allocation may take: free plus cached.
// - Memory grows with the blocks handed out, not with the pool's size: ids from `touched()`
//   up have never been handed out and are free. A 64 GiB CPU pool of a tiny test model (17M
//   blocks) costs nothing until it is used.
// - Allocation is all-or-nothing and deterministic (LIFO free list, then oldest cached), so a
//   live executor can map ids onto real KV slots one-to-one.
// - Releasing a block that is not held throws std::logic_error (a bookkeeping bug).
// - `check` verifies that free, cached and held blocks partition the pool, that the hash
//   index agrees with the blocks and that `holds` is the sum of the refcounts; the engine
//   checks refcounts against its sessions.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "sim/cached_lru.h"
#include "sim/hash_index.h"

namespace isim::sim {

using BlockId = int32_t;

class BlockPool {
 public:
  BlockPool(std::string name, int64_t total);

  int64_t total() const { return total_; }
  int64_t free() const {
    return static_cast<int64_t>(free_list_.size() + cached_.size()) + total_ - touched();
  }
  // Blocks [0, touched()) have been handed out at least once; the rest are free.
  int64_t touched() const { return static_cast<int64_t>(refcount_.size()); }
  int64_t used() const { return total() - free(); }
  int64_t cached() const { return static_cast<int64_t>(cached_.size()); }

  // Appends n newly held blocks to `out`; returns false (changing nothing) if fewer than n are
  // free. Cached blocks are evicted, oldest first, once the free list is empty.
  bool allocate(int64_t n, std::vector<BlockId>& out);
  // Drops one hold on every block in `blocks` and clears the vector.
  void release(std::vector<BlockId>& blocks);
  int32_t refcount(BlockId b) const {
    return b < touched() ? refcount_[static_cast<size_t>(b)] : 0;
  }
  // The sum of all refcounts (kept as blocks are taken and released): the engine's check
  // compares it with its sessions' listings without visiting every block.
  int64_t holds() const { return holds_; }
  // Changes with every call that may change the pool (allocate, release, acquire_cached,
  // publish, forget, value): a pool `check` passed at one version is still consistent.
  uint64_t version() const { return version_; }

  // Prefix cache. `acquire_cached` takes a hold on the block published under `hash`, or
  // returns -1. `publish` names a held block's content; false if another block already has it.
  BlockId acquire_cached(uint64_t hash);
  bool publish(BlockId b, uint64_t hash);
  // A block (held or cached) is published under `hash`: acquire_cached would find it.
  bool has_hash(uint64_t hash) const { return hash != 0 && by_hash_.contains(hash); }
  // The block published under `hash` (held or cached), or -1; takes no hold.
  BlockId find(uint64_t hash) const { return hash == 0 ? -1 : by_hash_.find(hash); }
  int64_t evictions() const { return evictions_; }
  // Unhashes cached block `b` (not held) and frees it now, before any other cached block is
  // evicted: its content will never be asked for. False (changing nothing) if `b` is held or
  // not cached. Not counted as an eviction.
  bool forget(BlockId b);
  // Forgets every cached block (a worker restart empties its prefix cache); returns how many.
  int64_t forget_cached();

  // Marks held block `b` as worth keeping: once cached, it is evicted only after every cached
  // block that is not marked (LRU within each class). The mark goes when the block is freed.
  void value(BlockId b);
  bool valued(BlockId b) const { return b < touched() && valued_[static_cast<size_t>(b)] != 0; }

  // Throws std::logic_error describing the first inconsistency.
  void check() const;
  const std::string& name() const { return name_; }

 private:
  void evict_one();
  BlockId touch_next();  // hands out the lowest id never handed out yet

  std::string name_;
  int64_t total_ = 0;
  std::vector<int32_t> refcount_;
  std::vector<uint64_t> hash_;          // 0: no content hash
  std::vector<uint64_t> cached_since_;  // a cached block's release order, with kValuedKey set
                                        // for a valued block (check: cached_ runs in key order)
  std::vector<uint8_t> valued_;
  std::vector<BlockId> free_list_;
  CachedLru cached_;  // evicted from the front: plain blocks by release order, then valued
  HashIndex by_hash_;
  uint64_t release_seq_ = 0;
  int64_t evictions_ = 0;
  int64_t holds_ = 0;
  uint64_t version_ = 0;
};

// Blocks needed to hold `tokens` tokens.
inline int64_t blocks_for(int64_t tokens, int64_t block_tokens) {
  return (tokens + block_tokens - 1) / block_tokens;
}

}  // namespace isim::sim
