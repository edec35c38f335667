#include <doctest/doctest.h>

#include <stdexcept>

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
