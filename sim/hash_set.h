// HashSet: a set of 64-bit content hashes that only grows, as one flat open-addressing table.
//
// Contract:
// - Key 0 is reserved (no content hash is 0); `insert` of 0 throws std::logic_error.
// - `insert` adds a key (a key present is left alone: false); `contains` says whether a key was
//   ever inserted. Nothing is erased, so there are no tombstones.
// - The table is a power of two of at least 8 slots, at most half full: it doubles (reinserting
//   what it holds) when an insertion would pass half. Answers never depend on the table size.
// - `add` is `insert` deferred: keys queue up and go in kBatch at a time, the slots they land
//   in prefetched first, so that the cache misses of a table far bigger than the cache overlap
//   instead of costing one each. `contains` sees queued keys; `flush` inserts them now and
//   `prefetch` readies a key's slot for a `contains` soon after. `size` counts inserted keys.
// - One 8-byte slot per key at worst twice over, no per-key allocation: the prefix cache's
//   "published here before" set of millions of hashes costs no node allocation or free.
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

namespace isim::sim {

class HashSet {
 public:
  HashSet() : keys_(8, 0), mask_(7) {}

  static constexpr size_t kBatch = 64;

  bool contains(uint64_t key) const {
    if (key == 0) return false;
    for (size_t i = home(key);; i = (i + 1) & mask_) {
      if (keys_[i] == key) return true;
      if (keys_[i] == 0) break;
    }
    return std::find(pending_.begin(), pending_.end(), key) != pending_.end();
  }

  void add(uint64_t key) {
    if (key == 0) throw std::logic_error("HashSet: key 0 is reserved");
    pending_.push_back(key);
    if (pending_.size() >= kBatch) flush();
  }

  void flush() {
    if (pending_.empty()) return;
    while (2 * (size_ + pending_.size()) > keys_.size()) grow();
    for (uint64_t k : pending_) __builtin_prefetch(&keys_[home(k)], 1);
    for (uint64_t k : pending_) insert(k);
    pending_.clear();
  }

  void prefetch(uint64_t key) const { __builtin_prefetch(&keys_[home(key)]); }

  bool insert(uint64_t key) {
    if (key == 0) throw std::logic_error("HashSet: key 0 is reserved");
    size_t i = home(key);
    for (; keys_[i] != 0; i = (i + 1) & mask_)
      if (keys_[i] == key) return false;
    if (2 * (size_ + 1) > keys_.size()) {
      grow();
      i = home(key);
      while (keys_[i] != 0) i = (i + 1) & mask_;
    }
    keys_[i] = key;
    ++size_;
    return true;
  }

  size_t size() const { return size_; }
  size_t slots() const { return keys_.size(); }

 private:
  size_t home(uint64_t key) const {
    return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> 32) & mask_;
  }

  void grow() {
    std::vector<uint64_t> old(keys_.size() * 2, 0);
    std::swap(old, keys_);
    mask_ = keys_.size() - 1;
    for (uint64_t k : old) {
      if (k == 0) continue;
      size_t i = home(k);
      while (keys_[i] != 0) i = (i + 1) & mask_;
      keys_[i] = k;
    }
  }

  std::vector<uint64_t> keys_;
  std::vector<uint64_t> pending_;  // added, not inserted yet (at most kBatch)
  size_t mask_;
  size_t size_ = 0;
};

}  // namespace isim::sim
