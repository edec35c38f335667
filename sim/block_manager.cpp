#include "sim/block_manager.h"

#include <stdexcept>

namespace isim::sim {

namespace {
constexpr uint64_t kValuedKey = uint64_t{1} << 63;  // release counts stay far below it
}  // namespace

BlockPool::BlockPool(std::string name, int64_t total)
    : name_(std::move(name)),
      total_(total),
      by_hash_(std::min<int64_t>(std::max<int64_t>(total, 0), 1024)) {
  if (total < 0 || total > INT32_MAX) throw std::logic_error(name_ + ": bad pool size");
}

BlockId BlockPool::touch_next() {
  // Ids are handed out 0, 1, 2, ... after the free list is used up, as a free list holding every
  // block with 0 on top would hand them out.
  const auto b = static_cast<BlockId>(touched());
  refcount_.push_back(0);
  hash_.push_back(0);
  cached_since_.push_back(0);
  valued_.push_back(0);
  cached_.grow(refcount_.size());
  by_hash_.reserve(touched());  // each block carries at most one hash
  return b;
}

void BlockPool::evict_one() {
  const BlockId b = cached_.front();
  cached_.erase(b);
  by_hash_.erase(hash_[static_cast<size_t>(b)]);
  hash_[static_cast<size_t>(b)] = 0;
  valued_[static_cast<size_t>(b)] = 0;
  free_list_.push_back(b);
  ++evictions_;
}

bool BlockPool::forget(BlockId b) {
  ++version_;
  const auto i = static_cast<size_t>(b);
  if (b < 0 || b >= touched() || refcount_[i] != 0 || hash_[i] == 0) return false;
  cached_.erase(b);
  by_hash_.erase(hash_[i]);
  hash_[i] = 0;
  valued_[i] = 0;
  free_list_.push_back(b);
  return true;
}

int64_t BlockPool::forget_cached() {
  int64_t n = 0;
  while (!cached_.empty()) n += forget(cached_.front()) ? 1 : 0;
  return n;
}

bool BlockPool::allocate(int64_t n, std::vector<BlockId>& out) {
  ++version_;
  if (n < 0) throw std::logic_error(name_ + ": negative allocation");
  if (n > free()) return false;
  for (int64_t i = 0; i < n; ++i) {
    BlockId b;
    if (free_list_.empty() && touched() < total_) {
      b = touch_next();
    } else {
      if (free_list_.empty()) evict_one();
      b = free_list_.back();
      free_list_.pop_back();
    }
    refcount_[static_cast<size_t>(b)] = 1;
    out.push_back(b);
  }
  holds_ += n;
  return true;
}

void BlockPool::release(std::vector<BlockId>& blocks) {
  ++version_;
  // Released in reverse so that a release followed by an allocation of the same size returns
  // the same ids in the same order.
  for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) {
    BlockId b = *it;
    if (b < 0 || b >= touched() || refcount_[static_cast<size_t>(b)] <= 0)
      throw std::logic_error(name_ + ": block " + std::to_string(b) + " released but not held");
    --holds_;
    if (--refcount_[static_cast<size_t>(b)] > 0) continue;
    const auto i = static_cast<size_t>(b);
    if (hash_[i] != 0) {
      cached_since_[i] = ++release_seq_ | (valued_[i] ? kValuedKey : 0);
      cached_.push_back(b, valued_[i] != 0);
    } else {
      valued_[i] = 0;
      free_list_.push_back(b);
    }
  }
  blocks.clear();
}

BlockId BlockPool::acquire_cached(uint64_t hash) {
  ++version_;
  const BlockId b = find(hash);
  if (b < 0) return -1;
  auto& rc = refcount_[static_cast<size_t>(b)];
  if (rc == 0) cached_.erase(b);
  ++rc;
  ++holds_;
  return b;
}

void BlockPool::value(BlockId b) {
  ++version_;
  if (b < 0 || b >= touched() || refcount_[static_cast<size_t>(b)] <= 0)
    throw std::logic_error(name_ + ": valuing a block that is not held");
  valued_[static_cast<size_t>(b)] = 1;
}

bool BlockPool::publish(BlockId b, uint64_t hash) {
  ++version_;
  if (hash == 0) throw std::logic_error(name_ + ": hash 0 is reserved");
  if (b < 0 || b >= touched() || refcount_[static_cast<size_t>(b)] <= 0)
    throw std::logic_error(name_ + ": publishing a block that is not held");
  if (hash_[static_cast<size_t>(b)] != 0 || by_hash_.contains(hash)) return false;
  hash_[static_cast<size_t>(b)] = hash;
  by_hash_.insert(hash, b);
  return true;
}

void BlockPool::check() const {
  std::vector<char> seen(refcount_.size(), 0);
  auto bad = [&](const std::string& m) { throw std::logic_error(name_ + ": " + m); };
  for (BlockId b : free_list_) {
    if (b < 0 || b >= touched()) bad("free list holds a bad id");
    if (seen[static_cast<size_t>(b)]++) bad("block " + std::to_string(b) + " listed twice");
    if (refcount_[static_cast<size_t>(b)] != 0 || hash_[static_cast<size_t>(b)] != 0 ||
        valued_[static_cast<size_t>(b)] != 0)
      bad("block " + std::to_string(b) + " is free but held, hashed or valued");
  }
  uint64_t last_key = 0;
  cached_.for_each([&](BlockId b) {
    const uint64_t seq = cached_since_[static_cast<size_t>(b)];
    if (seq <= last_key) bad("cached block " + std::to_string(b) + " is out of eviction order");
    last_key = seq;
    if (seen[static_cast<size_t>(b)]++) bad("block " + std::to_string(b) + " listed twice");
    if (refcount_[static_cast<size_t>(b)] != 0 || hash_[static_cast<size_t>(b)] == 0)
      bad("cached block " + std::to_string(b) + " is held or has no hash");
    if (((seq & kValuedKey) != 0) != (valued_[static_cast<size_t>(b)] != 0))
      bad("cached block " + std::to_string(b) + " is out of its eviction class");
  });
  int64_t held = 0, hashed = 0, holds = 0;
  for (size_t b = 0; b < refcount_.size(); ++b) {
    hashed += hash_[b] != 0;
    holds += refcount_[b];
    if (refcount_[b] < 0) bad("negative refcount");
    if (refcount_[b] > 0) ++held;
    if (refcount_[b] == 0 && !seen[b]) bad("block " + std::to_string(b) + " lost");
    if (hash_[b] != 0) {
      if (by_hash_.find(hash_[b]) != static_cast<BlockId>(b))
        bad("hash index disagrees with block " + std::to_string(b));
    }
  }
  if (static_cast<size_t>(hashed) != by_hash_.size())
    bad("hash index holds " + std::to_string(by_hash_.size()) + " hashes, the blocks " +
        std::to_string(hashed));
  if (holds != holds_)
    bad("refcounts sum to " + std::to_string(holds) + ", the hold count is " +
        std::to_string(holds_));
  if (held + free() != total())
    bad("blocks not conserved: free " + std::to_string(free()) + " + held " + std::to_string(held) +
        " != total " + std::to_string(total()));
}

}  // namespace isim::sim
