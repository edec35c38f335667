// MinTree: a tournament tree over n slots, each holding a key: set one in O(log n), read the
// least in O(1).
//
// Contract:
// - `init(n, none)` makes n slots holding `none`, which must not be less than any key set later
//   (a slot that holds it is empty).
// - `set(i, k)` for i < n; `top()` is the least key (`none` when every slot is empty). Among
//   equal keys the lower slot wins, so a key that names its slot breaks ties by slot.
#pragma once

#include <cstddef>
#include <vector>

namespace isim {

template <typename K>
class MinTree {
 public:
  void init(size_t n, const K& none) {
    for (size_ = 1; size_ < n;) size_ *= 2;
    t_.assign(2 * size_, none);
  }
  void set(size_t i, const K& k) {
    i += size_;
    t_[i] = k;
    for (i /= 2; i > 0; i /= 2) t_[i] = t_[2 * i + 1] < t_[2 * i] ? t_[2 * i + 1] : t_[2 * i];
  }
  const K& top() const { return t_[1]; }
  const K& at(size_t i) const { return t_[size_ + i]; }

 private:
  size_t size_ = 1;
  std::vector<K> t_;
};

}  // namespace isim
