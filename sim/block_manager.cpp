#include "sim/block_manager.h"

#include <stdexcept>

namespace isim::sim {

BlockPool::BlockPool(std::string name, int64_t total) : name_(std::move(name)) {
  if (total < 0 || total > INT32_MAX) throw std::logic_error(name_ + ": bad pool size");
  owner_.assign(static_cast<size_t>(total), kNoOwner);
  free_list_.reserve(static_cast<size_t>(total));
  // Highest id at the bottom so that the first allocation hands out block 0, 1, 2, ...
  for (int64_t b = total - 1; b >= 0; --b) free_list_.push_back(static_cast<BlockId>(b));
}

bool BlockPool::allocate(int32_t owner, int64_t n, std::vector<BlockId>& out) {
  if (n < 0) throw std::logic_error(name_ + ": negative allocation");
  if (n > free()) return false;
  for (int64_t i = 0; i < n; ++i) {
    BlockId b = free_list_.back();
    free_list_.pop_back();
    owner_[static_cast<size_t>(b)] = owner;
    out.push_back(b);
  }
  return true;
}

void BlockPool::release(int32_t owner, std::vector<BlockId>& blocks) {
  // Released in reverse so that a release followed by an allocation of the same size returns
  // the same ids in the same order.
  for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) {
    BlockId b = *it;
    if (b < 0 || b >= total() || owner_[static_cast<size_t>(b)] != owner)
      throw std::logic_error(name_ + ": block " + std::to_string(b) + " released by " +
                             std::to_string(owner) + " which does not own it");
    owner_[static_cast<size_t>(b)] = kNoOwner;
    free_list_.push_back(b);
  }
  blocks.clear();
}

void BlockPool::check() const {
  std::vector<char> seen(owner_.size(), 0);
  for (BlockId b : free_list_) {
    if (b < 0 || b >= total()) throw std::logic_error(name_ + ": free list holds a bad id");
    if (seen[static_cast<size_t>(b)]++)
      throw std::logic_error(name_ + ": block " + std::to_string(b) + " free twice");
    if (owner_[static_cast<size_t>(b)] != kNoOwner)
      throw std::logic_error(name_ + ": block " + std::to_string(b) + " both free and owned");
  }
  int64_t owned = 0;
  for (int32_t o : owner_)
    if (o != kNoOwner) ++owned;
  if (owned + free() != total())
    throw std::logic_error(name_ + ": blocks not conserved: free " + std::to_string(free()) +
                           " + owned " + std::to_string(owned) + " != total " +
                           std::to_string(total()));
}

}  // namespace isim::sim
