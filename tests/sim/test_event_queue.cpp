#include <doctest/doctest.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "sim/event_queue.h"

using namespace isim::sim;

TEST_CASE("events pop by time, then priority, then insertion order") {
  EventQueue q;
  q.schedule(20, kPrioArrival, 0, 0, 1);
  q.schedule(10, kPrioArrival, 0, 0, 2);
  q.schedule(10, kPrioIterationEnd, 0, 0, 3);
  q.schedule(10, kPrioArrival, 0, 0, 4);
  q.schedule(10, kPrioInterceptEnd, 0, 0, 5);
  std::vector<int64_t> order;
  while (!q.empty()) order.push_back(q.pop().arg);
  CHECK(order == std::vector<int64_t>{3, 5, 2, 4, 1});
  CHECK(q.now() == 20);
}

TEST_CASE("scheduling in the past throws: time never goes backwards") {
  EventQueue q;
  q.schedule(100, kPrioArrival, 0, 0, 0);
  q.pop();
  CHECK_THROWS_AS(q.schedule(99, kPrioArrival, 0, 0, 0), std::logic_error);
  CHECK_NOTHROW(q.schedule(100, kPrioArrival, 0, 0, 0));  // "now" is allowed
}

TEST_CASE("a heap of many events pops them in (time, priority, insertion) order") {
  // 2,000 events at pseudo-random times among 50 values and three priorities, interleaved with
  // pops, so the 4-ary heap sifts both ways many times: 20 rounds of 100 events at or after
  // now, then 60 pops. Each pop must be the smallest pending key (time, priority, insertion
  // number), which the test keeps in its own sorted list.
  struct Key {
    int64_t time;
    int32_t prio;
    int64_t n;  // insertion number, the arg
    bool operator<(const Key& o) const {
      if (time != o.time) return time < o.time;
      if (prio != o.prio) return prio < o.prio;
      return n < o.n;
    }
  };
  const int32_t prios[3] = {kPrioIterationEnd, kPrioInterceptEnd, kPrioArrival};
  EventQueue q;
  std::vector<Key> pending;
  uint64_t x = 12345;
  int64_t n = 0, base = 0;
  for (int round = 0; round < 20; ++round) {
    for (int i = 0; i < 100; ++i) {
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;  // a fixed LCG
      const int64_t t = base + static_cast<int64_t>((x >> 33) % 50);
      const int32_t p = prios[(x >> 20) % 3];
      q.schedule(t, p, 0, 0, n);
      pending.push_back({t, p, n++});
    }
    std::sort(pending.begin(), pending.end());
    for (int i = 0; i < 60; ++i) {  // pop 60 of the round's events, smallest keys first
      const Event e = q.pop();
      REQUIRE(e.arg == pending.front().n);
      CHECK(e.time == pending.front().time);
      CHECK(e.priority == pending.front().prio);
      pending.erase(pending.begin());
    }
    base = q.now();  // the next round schedules at or after now
  }
  while (!q.empty()) {
    REQUIRE(q.pop().arg == pending.front().n);
    pending.erase(pending.begin());
  }
  CHECK(pending.empty());
}
