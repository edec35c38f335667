// The prefix cache's flat structures: HashSet (hashes published here before) and CachedLru
// (a pool's cached blocks in eviction order). Expected values are worked out by hand below.
#include <doctest/doctest.h>

#include <stdexcept>
#include <vector>

#include "sim/block_manager.h"
#include "sim/cached_lru.h"
#include "sim/hash_set.h"

using isim::sim::BlockId;
using isim::sim::BlockPool;
using isim::sim::CachedLru;
using isim::sim::HashSet;

namespace {
std::vector<int32_t> lru_order(const CachedLru& l) {
  std::vector<int32_t> out;
  l.for_each([&](int32_t b) { out.push_back(b); });
  return out;
}
}  // namespace

TEST_CASE("HashSet: insert, contains, duplicates, the reserved key and growth") {
  HashSet s;
  CHECK(s.slots() == 8);
  CHECK_FALSE(s.contains(0));
  CHECK_THROWS_AS(s.insert(0), std::logic_error);
  // At most half full: 4 keys fit in 8 slots, the 5th doubles the table to 16, the 9th to 32.
  for (uint64_t k = 1; k <= 4; ++k) CHECK(s.insert(k * 0x10000000001ull));
  CHECK(s.slots() == 8);
  CHECK_FALSE(s.insert(3 * 0x10000000001ull));  // present: left alone
  CHECK(s.size() == 4);
  CHECK(s.insert(5 * 0x10000000001ull));
  CHECK(s.slots() == 16);
  for (uint64_t k = 6; k <= 9; ++k) CHECK(s.insert(k * 0x10000000001ull));
  CHECK(s.slots() == 32);
  CHECK(s.size() == 9);
  for (uint64_t k = 1; k <= 9; ++k) CHECK(s.contains(k * 0x10000000001ull));
  CHECK_FALSE(s.contains(10 * 0x10000000001ull));
  CHECK_FALSE(s.contains(0x10000000001ull + 1));
}

TEST_CASE("HashSet: keys sharing a home slot all stay findable across growth") {
  // home(k) = bits 32.. of k * 0x9E3779B97F4A7C15, masked. For k = j << 40 that is
  // ((j * C) << 8) & mask: a multiple of 256, so in 2,048 slots 1,000 keys share 8 home
  // slots; probe runs are long and wrap past the end. 1,000 keys need 2,000 slots: 8 doubles
  // to 2,048 (8 -> 16 -> ... -> 2048, each at half full).
  HashSet s;
  for (uint64_t k = 1; k <= 1000; ++k) REQUIRE(s.insert(k << 40));
  CHECK(s.size() == 1000);
  CHECK(s.slots() == 2048);  // smallest power of two >= 2 * 1000
  for (uint64_t k = 1; k <= 1000; ++k) REQUIRE(s.contains(k << 40));
  for (uint64_t k = 1001; k <= 1100; ++k) REQUIRE_FALSE(s.contains(k << 40));
}

TEST_CASE("CachedLru: plain blocks go first, each class oldest first, O(1) unlinking") {
  CachedLru l;
  l.grow(6);
  CHECK(l.front() == -1);
  l.push_back(4, false);
  l.push_back(1, true);
  l.push_back(2, false);
  l.push_back(0, true);
  l.push_back(5, false);
  // Plain in push order 4, 2, 5; then valued 1, 0.
  CHECK(lru_order(l) == std::vector<int32_t>{4, 2, 5, 1, 0});
  CHECK(l.front() == 4);
  CHECK(l.size() == 5);
  l.erase(2);  // the middle of the plain list
  CHECK(lru_order(l) == std::vector<int32_t>{4, 5, 1, 0});
  l.erase(4);  // its head
  CHECK(l.front() == 5);
  l.erase(5);  // the last plain block: valued ones come next
  CHECK(l.front() == 1);
  l.erase(0);  // the valued list's tail
  l.push_back(3, false);
  l.push_back(0, true);  // re-listed after it left
  CHECK(lru_order(l) == std::vector<int32_t>{3, 1, 0});
  CHECK_THROWS_AS(l.push_back(3, true), std::logic_error);   // already listed
  CHECK_THROWS_AS(l.erase(2), std::logic_error);             // not listed
  CHECK_THROWS_AS(l.push_back(6, false), std::logic_error);  // past grow
  l.erase(3);
  l.erase(1);
  l.erase(0);
  CHECK(l.empty());
  CHECK(l.front() == -1);
}

TEST_CASE("BlockPool: eviction order after cache hits follows release order, plain first") {
  // 5 blocks, each published under 10 + id. Release 0..4 one at a time: LRU 0, 1, 2, 3, 4.
  BlockPool p("gpu", 5);
  std::vector<BlockId> all;
  REQUIRE(p.allocate(5, all));
  for (BlockId b = 0; b < 5; ++b) REQUIRE(p.publish(b, 10 + static_cast<uint64_t>(b)));
  p.value(1);
  for (BlockId b = 0; b < 5; ++b) {
    std::vector<BlockId> one{b};
    p.release(one);
  }
  // Plain LRU: 0, 2, 3, 4; valued: 1. A hit on 2 takes it out; released again, it goes last
  // among the plain ones: 0, 3, 4, 2, then 1.
  std::vector<BlockId> hit{p.acquire_cached(12)};
  CHECK(hit[0] == 2);
  p.release(hit);
  CHECK_NOTHROW(p.check());
  std::vector<BlockId> got;
  REQUIRE(p.allocate(5, got));
  CHECK(got == std::vector<BlockId>{0, 3, 4, 2, 1});
  CHECK(p.evictions() == 5);
  CHECK_NOTHROW(p.check());
}

TEST_CASE("HashSet: added keys are seen before and after their batch goes in") {
  HashSet s;
  s.add(42);
  CHECK(s.contains(42));  // queued, not inserted yet
  CHECK(s.size() == 0);
  CHECK(s.slots() == 8);
  s.flush();
  CHECK(s.size() == 1);
  CHECK(s.contains(42));
  // 64 more (kBatch): the 64th add inserts the batch at once. 65 keys need 130 slots: the
  // table doubles from 8 to 256 before the batch goes in.
  for (uint64_t k = 1; k <= 63; ++k) s.add(k << 40);
  CHECK(s.size() == 1);
  s.add(64ull << 40);
  CHECK(s.size() == 65);
  CHECK(s.slots() == 256);
  for (uint64_t k = 1; k <= 64; ++k) REQUIRE(s.contains(k << 40));
  s.add(42);  // already present: the batch leaves it alone
  s.flush();
  CHECK(s.size() == 65);
  CHECK_FALSE(s.contains(65ull << 40));
  CHECK_THROWS_AS(s.add(0), std::logic_error);
}
