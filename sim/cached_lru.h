// CachedLru: a block pool's cached (unheld, hashed) blocks in eviction order, as two intrusive
// doubly linked lists over block ids held in vectors (no per-block allocation).
//
// Contract:
// - Two classes, plain and valued; within each, blocks are in the order they were pushed
//   (oldest first). `front` is the block eviction takes: the oldest plain block, or with none
//   the oldest valued one; -1 when empty. This is the order of a sorted set keyed by
//   (valued, push order), which BlockPool used before.
// - `push_back(b, valued)` appends a block that is not listed; `erase(b)` unlinks a listed
//   block in O(1). `grow(n)` makes room for ids below n (ids are BlockPool's, dense from 0).
// - `for_each` visits the listed blocks in eviction order (plain, then valued).
// - Misuse (pushing a listed block, erasing one not listed) throws std::logic_error.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <vector>

namespace isim::sim {

class CachedLru {
 public:
  void grow(size_t n) {
    if (n > prev_.size()) {
      prev_.resize(n, kUnlisted);
      next_.resize(n, kUnlisted);
      valued_.resize(n, 0);
    }
  }

  void push_back(int32_t b, bool valued) {
    const auto i = static_cast<size_t>(b);
    if (b < 0 || i >= prev_.size() || prev_[i] != kUnlisted)
      throw std::logic_error("CachedLru: pushing a block already listed");
    List& l = lists_[valued ? 1 : 0];
    prev_[i] = l.tail;
    next_[i] = kEnd;
    if (l.tail >= 0)
      next_[static_cast<size_t>(l.tail)] = b;
    else
      l.head = b;
    l.tail = b;
    valued_[i] = valued ? 1 : 0;
    ++size_;
  }

  void erase(int32_t b) {
    const auto i = static_cast<size_t>(b);
    if (b < 0 || i >= prev_.size() || prev_[i] == kUnlisted)
      throw std::logic_error("CachedLru: erasing a block not listed");
    List& l = lists_[valued_[i]];
    const int32_t p = prev_[i], n = next_[i];
    if (p >= 0)
      next_[static_cast<size_t>(p)] = n;
    else
      l.head = n;
    if (n >= 0)
      prev_[static_cast<size_t>(n)] = p;
    else
      l.tail = p;
    prev_[i] = kUnlisted;
    next_[i] = kUnlisted;
    --size_;
  }

  int32_t front() const { return lists_[0].head >= 0 ? lists_[0].head : lists_[1].head; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  template <class F>
  void for_each(F&& f) const {
    for (const List& l : lists_)
      for (int32_t b = l.head; b >= 0; b = next_[static_cast<size_t>(b)]) f(b);
  }

 private:
  static constexpr int32_t kEnd = -1;
  static constexpr int32_t kUnlisted = -2;
  struct List {
    int32_t head = kEnd;
    int32_t tail = kEnd;
  };

  List lists_[2];
  std::vector<int32_t> prev_;  // kEnd: first of its list; kUnlisted: not listed
  std::vector<int32_t> next_;
  std::vector<uint8_t> valued_;  // the list a listed block is in
  size_t size_ = 0;
};

}  // namespace isim::sim
