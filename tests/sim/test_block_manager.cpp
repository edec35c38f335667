#include <doctest/doctest.h>

#include <stdexcept>

#include "sim/block_manager.h"

using namespace isim::sim;

TEST_CASE("allocation is all-or-nothing and deterministic") {
  BlockPool p("gpu", 5);
  std::vector<BlockId> a, b;
  REQUIRE(p.allocate(1, 3, a));
  CHECK(a == std::vector<BlockId>{0, 1, 2});
  CHECK(p.free() == 2);
  CHECK_FALSE(p.allocate(2, 3, b));  // only 2 free
  CHECK(b.empty());
  CHECK(p.free() == 2);
  CHECK(p.owner_of(1) == 1);
  p.release(1, a);
  CHECK(a.empty());
  CHECK(p.free() == 5);
  REQUIRE(p.allocate(2, 3, b));
  CHECK(b == std::vector<BlockId>{0, 1, 2});  // same ids again after a full release
  CHECK_NOTHROW(p.check());
}

TEST_CASE("releasing a block one does not own is a bookkeeping bug") {
  BlockPool p("gpu", 2);
  std::vector<BlockId> a;
  REQUIRE(p.allocate(1, 1, a));
  CHECK_THROWS_AS(p.release(2, a), std::logic_error);
}

TEST_CASE("blocks_for rounds up") {
  CHECK(blocks_for(0, 16) == 0);
  CHECK(blocks_for(1, 16) == 1);
  CHECK(blocks_for(16, 16) == 1);
  CHECK(blocks_for(17, 16) == 2);
}
