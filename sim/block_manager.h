// BlockPool / BlockManager: paged KV memory in fixed-size blocks, on a GPU tier and a CPU tier.
//
// Contract:
// - A block is free or owned by exactly one session; `owner_of` answers which.
// - Allocation is all-or-nothing and deterministic (LIFO free list): the same call sequence
//   gives the same block ids, so a live executor can map ids onto real KV slots one-to-one.
// - Releasing a block the caller does not own throws std::logic_error (a bookkeeping bug).
// - `check` verifies free + owned == total and that every block is listed once.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace isim::sim {

using BlockId = int32_t;
constexpr int32_t kNoOwner = -1;

class BlockPool {
 public:
  BlockPool(std::string name, int64_t total);

  int64_t total() const { return static_cast<int64_t>(owner_.size()); }
  int64_t free() const { return static_cast<int64_t>(free_list_.size()); }
  int64_t used() const { return total() - free(); }

  // Appends n blocks owned by `owner` to `out`; returns false (and changes nothing) if fewer
  // than n are free.
  bool allocate(int32_t owner, int64_t n, std::vector<BlockId>& out);
  // Releases every block in `blocks` (owned by `owner`) and clears the vector.
  void release(int32_t owner, std::vector<BlockId>& blocks);
  int32_t owner_of(BlockId b) const { return owner_[static_cast<size_t>(b)]; }

  // Throws std::logic_error describing the first inconsistency.
  void check() const;
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  std::vector<int32_t> owner_;
  std::vector<BlockId> free_list_;
};

// Blocks needed to hold `tokens` tokens.
inline int64_t blocks_for(int64_t tokens, int64_t block_tokens) {
  return (tokens + block_tokens - 1) / block_tokens;
}

}  // namespace isim::sim
