#include <doctest/doctest.h>

#include <map>
#include <stdexcept>

#include "sim/block_manager.h"

using namespace isim::sim;

TEST_CASE("allocation is all-or-nothing and deterministic") {
  BlockPool p("gpu", 5);
  std::vector<BlockId> a, b;
  REQUIRE(p.allocate(3, a));
  CHECK(a == std::vector<BlockId>{0, 1, 2});
  CHECK(p.free() == 2);
  CHECK_FALSE(p.allocate(3, b));  // only 2 free
  CHECK(b.empty());
  CHECK(p.free() == 2);
  CHECK(p.refcount(1) == 1);
  p.release(a);
  CHECK(a.empty());
  CHECK(p.free() == 5);
  REQUIRE(p.allocate(3, b));
  CHECK(b == std::vector<BlockId>{0, 1, 2});  // same ids again after a full release
  CHECK_NOTHROW(p.check());
}

TEST_CASE("releasing a block that is not held is a bookkeeping bug") {
  BlockPool p("gpu", 2);
  std::vector<BlockId> a;
  REQUIRE(p.allocate(1, a));
  std::vector<BlockId> twice = a;
  p.release(a);
  CHECK_THROWS_AS(p.release(twice), std::logic_error);
}

TEST_CASE("shared blocks are freed only when the last holder lets go, then stay cached") {
  BlockPool p("gpu", 4);
  std::vector<BlockId> s1, s2;
  REQUIRE(p.allocate(2, s1));  // blocks 0, 1
  CHECK(p.publish(s1[0], 111));
  CHECK(p.publish(s1[1], 222));
  CHECK_FALSE(p.publish(s1[1], 333));  // already named
  // A second session with the same prefix takes holds on the same blocks.
  CHECK(p.acquire_cached(111) == 0);
  CHECK(p.acquire_cached(222) == 1);
  CHECK(p.acquire_cached(999) == -1);
  s2 = {0, 1};
  CHECK(p.refcount(0) == 2);
  CHECK(p.used() == 2);
  p.release(s1);
  CHECK(p.refcount(0) == 1);
  CHECK(p.used() == 2);  // still held by the second session
  p.release(s2);
  CHECK(p.refcount(0) == 0);
  CHECK(p.free() == 4);
  CHECK(p.cached() == 2);  // not held, but still findable
  CHECK_NOTHROW(p.check());
  std::vector<BlockId> s3 = {p.acquire_cached(222)};
  CHECK(s3[0] == 1);
  CHECK(p.cached() == 1);
  p.release(s3);
  // Allocation takes free blocks first, then evicts cached ones, least recently released first.
  std::vector<BlockId> big;
  REQUIRE(p.allocate(3, big));
  CHECK(big == std::vector<BlockId>{2, 3, 0});  // 0 was released before 1
  CHECK(p.acquire_cached(111) == -1);
  CHECK(p.acquire_cached(222) == 1);
  CHECK(p.evictions() == 1);
  CHECK_NOTHROW(p.check());
}

TEST_CASE("blocks_for rounds up") {
  CHECK(blocks_for(0, 16) == 0);
  CHECK(blocks_for(1, 16) == 1);
  CHECK(blocks_for(16, 16) == 1);
  CHECK(blocks_for(17, 16) == 2);
}

TEST_CASE("HashIndex: lookups, collisions and backward-shift erasure agree with a map") {
  // 64 slots for 32 entries; keys chosen to collide at home positions and wrap around.
  isim::sim::HashIndex h(32);
  std::map<uint64_t, int32_t> ref;
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (int round = 0; round < 2000; ++round) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    const uint64_t key = 1 + (x % 97);  // a small key space: many collisions and re-inserts
    if (ref.count(key)) {
      h.erase(key);
      ref.erase(key);
    } else if (ref.size() < 32) {
      h.insert(key, static_cast<int32_t>(round));
      ref[key] = round;
    }
    for (uint64_t k = 1; k <= 97; ++k) {
      const auto it = ref.find(k);
      REQUIRE(h.find(k) == (it == ref.end() ? -1 : it->second));
    }
    REQUIRE(h.size() == ref.size());
  }
  CHECK_THROWS_AS(h.insert(0, 1), std::logic_error);
  CHECK_THROWS_AS(h.erase(98), std::logic_error);
}

TEST_CASE("valued cached blocks are evicted only after every other cached block") {
  // 4 blocks, all published and released together: the release runs in reverse, so the LRU
  // order (oldest first) is 3, 2, 1, 0. Valuing block 3 moves it behind the others.
  for (const bool valued : {false, true}) {
    CAPTURE(valued);
    BlockPool p("gpu", 4);
    std::vector<BlockId> all;
    REQUIRE(p.allocate(4, all));
    for (BlockId b = 0; b < 4; ++b) REQUIRE(p.publish(b, 100 + static_cast<uint64_t>(b)));
    if (valued) p.value(3);
    CHECK(p.valued(3) == valued);
    p.release(all);
    CHECK_NOTHROW(p.check());
    std::vector<BlockId> got;
    REQUIRE(p.allocate(1, got));
    CHECK(got == std::vector<BlockId>{valued ? 2 : 3});
    REQUIRE(p.allocate(2, got));
    CHECK(got == (valued ? std::vector<BlockId>{2, 1, 0} : std::vector<BlockId>{3, 2, 1}));
    CHECK(p.has_hash(103) == valued);  // the valued block is the only one left cached
    CHECK(p.has_hash(100) == !valued);
    CHECK(p.evictions() == 3);
    CHECK_NOTHROW(p.check());
    // The last one goes too; its mark goes with it, so a block reused from it starts plain.
    REQUIRE(p.allocate(1, got));
    CHECK(got.back() == (valued ? 3 : 0));
    CHECK_FALSE(p.valued(got.back()));
    CHECK_NOTHROW(p.check());
  }
}

TEST_CASE("a valued block reacquired from the cache keeps its class; unhashed, it loses it") {
  BlockPool p("gpu", 3);
  std::vector<BlockId> a;
  REQUIRE(p.allocate(3, a));  // 0, 1, 2
  REQUIRE(p.publish(0, 7));
  REQUIRE(p.publish(1, 8));
  p.value(0);
  p.value(2);  // not hashed: it is freed, not cached, and loses the mark
  p.release(a);
  CHECK_FALSE(p.valued(2));
  CHECK(p.cached() == 2);
  std::vector<BlockId> b;
  CHECK(p.acquire_cached(7) == 0);  // held again: out of the cache, still valued
  CHECK(p.valued(0));
  std::vector<BlockId> held{0};
  p.release(held);                  // released after block 1, yet evicted after it
  REQUIRE(p.allocate(2, b));        // the free block 2, then the cached block 1
  CHECK(b == std::vector<BlockId>{2, 1});
  CHECK(p.has_hash(7));
  CHECK(p.forget(0));
  CHECK_FALSE(p.valued(0));
  CHECK_NOTHROW(p.check());
  CHECK_THROWS_AS(p.value(0), std::logic_error);  // not held
}

TEST_CASE("a pool's memory grows with the blocks it hands out, not with its size") {
  // The largest pool a config may ask for: nothing is allocated for blocks never handed out.
  BlockPool big("cpu", INT32_MAX);
  CHECK(big.total() == INT32_MAX);
  CHECK(big.free() == INT32_MAX);
  CHECK(big.touched() == 0);
  CHECK(big.refcount(123456789) == 0);
  CHECK_NOTHROW(big.check());
  // Ids come 0, 1, 2, ...; a freed block is handed out again before a new id (LIFO), as a
  // free list holding every block would hand them out.
  BlockPool p("gpu", 6);
  std::vector<BlockId> a, b, c;
  REQUIRE(p.allocate(3, a));
  CHECK(a == std::vector<BlockId>{0, 1, 2});
  CHECK(p.touched() == 3);
  CHECK(p.free() == 3);
  std::vector<BlockId> one = {a[1]};
  p.release(one);
  REQUIRE(p.allocate(2, b));
  CHECK(b == std::vector<BlockId>{1, 3});
  CHECK(p.touched() == 4);
  // Cached blocks go only when nothing free (recycled or new) is left.
  REQUIRE(p.publish(b[1], 77));
  std::vector<BlockId> cached = {b[1]};
  p.release(cached);
  REQUIRE(p.allocate(2, c));
  CHECK(c == std::vector<BlockId>{4, 5});
  CHECK(p.find(77) == 3);
  std::vector<BlockId> d;
  REQUIRE(p.allocate(1, d));
  CHECK(d == std::vector<BlockId>{3});  // the cached block, evicted
  CHECK(p.find(77) == -1);
  CHECK(p.free() == 0);
  CHECK_NOTHROW(p.check());
  // A block id past touched() was never handed out: releasing it is a bookkeeping bug.
  BlockPool q("gpu", 4);
  std::vector<BlockId> never = {2};
  CHECK_THROWS_AS(q.release(never), std::logic_error);
}

TEST_CASE("HashIndex: reserve doubles the table and keeps every lookup") {
  isim::sim::HashIndex h(4);  // 8 slots: 4 entries at most
  for (uint64_t k = 1; k <= 4; ++k) h.insert(k * 1000003, static_cast<int32_t>(k));
  CHECK_THROWS_AS(h.insert(99, 9), std::logic_error);  // full
  h.reserve(100);
  for (uint64_t k = 5; k <= 100; ++k) h.insert(k * 1000003, static_cast<int32_t>(k));
  CHECK(h.size() == 100);
  for (uint64_t k = 1; k <= 100; ++k) REQUIRE(h.find(k * 1000003) == static_cast<int32_t>(k));
  CHECK(h.find(99) == -1);
  h.erase(3 * 1000003);
  CHECK(h.find(3 * 1000003) == -1);
  CHECK(h.find(4 * 1000003) == 4);
}
