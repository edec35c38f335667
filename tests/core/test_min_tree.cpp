// core/min_tree.h by hand: the least key after each set, ties by slot, empty slots.
#include <doctest/doctest.h>

#include <climits>
#include <utility>

#include "core/min_tree.h"

using isim::MinTree;

TEST_CASE("MinTree: the least key after each set, the lower slot among equals") {
  using Key = std::pair<int, int>;  // (load, slot): a key that names its slot
  const Key none{INT_MAX, INT_MAX};
  MinTree<Key> t;
  t.init(5, none);  // 5 slots in a tree of 8 leaves: the 3 beyond stay empty
  CHECK(t.top() == none);
  t.set(3, {7, 3});
  CHECK(t.top() == Key{7, 3});
  t.set(0, {9, 0});
  t.set(4, {7, 4});
  CHECK(t.top() == Key{7, 3});  // 7 at slots 3 and 4: slot 3
  t.set(3, {12, 3});            // slot 3 grows: slot 4 is the least
  CHECK(t.top() == Key{7, 4});
  t.set(4, none);  // emptied: 9 at slot 0, 12 at slot 3
  CHECK(t.top() == Key{9, 0});
  CHECK(t.at(3) == Key{12, 3});
}

TEST_CASE("MinTree: plain keys tie to the lower slot") {
  MinTree<long> t;
  t.init(3, LONG_MAX);
  t.set(2, 5);
  t.set(1, 5);
  CHECK(t.top() == 5);
  t.set(1, 6);
  t.set(2, 4);
  CHECK(t.top() == 4);
}
