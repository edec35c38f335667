// HashIndex: content hash -> block id for one block pool, as a flat open-addressing table.
//
// Contract:
// - Holds at most `max_entries` keys (the blocks a pool has handed out: each block carries at
//   most one hash): the table has a power-of-two size of at least twice that, and probes stay
//   short. `reserve` raises the limit, doubling the table and reinserting what it holds. Key 0
//   is reserved (the pool's "no hash").
// - `find` returns the value or -1; `insert` takes a key not present; `erase` a key present
//   (std::logic_error otherwise). Erasure shifts the probe run back (no tombstones), so the
//   table's state depends only on the keys present and the order they came in.
// - Same results as a std::unordered_map, several times faster on the prefix walks that
//   routers and the engine make for every placement.
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

namespace isim::sim {

class HashIndex {
 public:
  explicit HashIndex(int64_t max_entries) {
    size_t cap = 8;
    while (cap < static_cast<size_t>(2 * std::max<int64_t>(max_entries, 1))) cap <<= 1;
    keys_.assign(cap, 0);
    vals_.assign(cap, -1);
    mask_ = cap - 1;
  }

  // Room for `max_entries` keys; the lookups' results do not change.
  void reserve(int64_t max_entries) {
    if (static_cast<size_t>(2 * std::max<int64_t>(max_entries, 1)) <= keys_.size()) return;
    HashIndex bigger(std::max<int64_t>(max_entries, static_cast<int64_t>(keys_.size())));
    for (size_t i = 0; i < keys_.size(); ++i)
      if (keys_[i] != 0) bigger.insert(keys_[i], vals_[i]);
    *this = std::move(bigger);
  }

  int32_t find(uint64_t key) const {
    for (size_t i = home(key);; i = (i + 1) & mask_) {
      if (keys_[i] == key) return vals_[i];
      if (keys_[i] == 0) return -1;
    }
  }
  bool contains(uint64_t key) const { return find(key) >= 0; }
  size_t size() const { return size_; }

  void insert(uint64_t key, int32_t value) {
    if (key == 0) throw std::logic_error("HashIndex: key 0 is reserved");
    if (2 * (size_ + 1) > keys_.size()) throw std::logic_error("HashIndex: full");
    size_t i = home(key);
    for (; keys_[i] != 0; i = (i + 1) & mask_)
      if (keys_[i] == key) throw std::logic_error("HashIndex: key present");
    keys_[i] = key;
    vals_[i] = value;
    ++size_;
  }

  void erase(uint64_t key) {
    size_t i = home(key);
    while (keys_[i] != key) {
      if (keys_[i] == 0) throw std::logic_error("HashIndex: erasing a key not present");
      i = (i + 1) & mask_;
    }
    // Backward shift: move later members of the probe run into the hole when their home
    // position does not lie (cyclically) in (hole, j].
    for (size_t j = (i + 1) & mask_; keys_[j] != 0; j = (j + 1) & mask_) {
      const size_t k = home(keys_[j]);
      const bool stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
      if (stays) continue;
      keys_[i] = keys_[j];
      vals_[i] = vals_[j];
      i = j;
    }
    keys_[i] = 0;
    vals_[i] = -1;
    --size_;
  }

 private:
  size_t home(uint64_t key) const {
    return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> 32) & mask_;
  }

  std::vector<uint64_t> keys_;
  std::vector<int32_t> vals_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

}  // namespace isim::sim
