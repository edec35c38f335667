// traces/shared_list.h (copy-on-write segments) and what trace.draw makes of it: drawn copies
// of one pool session read one storage of segments, and reads along the way (arrivals, broken
// forks) never give a copy storage of its own.
#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

#include "traces/arrival.h"
#include "traces/generator.h"
#include "traces/jsonl.h"
#include "traces/session.h"
#include "traces/workload.h"

using namespace isim::trace;

namespace {

Segment shared_list_seg(int64_t in, int64_t out, double tool_s) {
  Segment s{in, out, std::nullopt};
  if (tool_s >= 0) s.intercept = Intercept{"tool", tool_s};
  return s;
}

}  // namespace

TEST_CASE("SharedList: a copy shares the storage until one of them is written") {
  SharedList<int> a = std::vector<int>{1, 2, 3};
  SharedList<int> b = a;
  CHECK(b.shares_with(a));
  CHECK(&std::as_const(a)[0] == &std::as_const(b)[0]);  // one storage
  CHECK(b == std::vector<int>{1, 2, 3});
  b[1] = 20;  // b gets its own storage; a keeps {1, 2, 3}
  CHECK_FALSE(b.shares_with(a));
  CHECK(a == std::vector<int>{1, 2, 3});
  CHECK(b == std::vector<int>{1, 20, 3});
  SharedList<int> c = a;
  c.erase(c.begin(), c.begin() + 2);  // {1, 2, 3} less its first two: {3}
  CHECK(c == std::vector<int>{3});
  CHECK(a == std::vector<int>{1, 2, 3});
  SharedList<int> d = a;
  d.push_back(4);
  d.resize(2);  // {1, 2, 3, 4} cut to {1, 2}
  CHECK(d == std::vector<int>{1, 2});
  CHECK(a.size() == 3);
  SharedList<int> e;
  CHECK(e.empty());
  CHECK(e == std::vector<int>{});
  CHECK_FALSE(e.shares_with(SharedList<int>{}));  // no storage to share
  e.push_back(7);
  CHECK(e == SharedList<int>{7});
  const SharedList<int> f = a;  // const reads keep sharing
  int sum = 0;
  for (int x : f) sum += x;
  CHECK(sum == 6);  // 1 + 2 + 3
  CHECK(f.shares_with(a));
}

TEST_CASE("trace.draw: 5 draws from a pool of 2 share the pool's segments") {
  // Pool: p0 = {10 in, 2 out, tool 1.5 s; 3 in, 4 out}, p1 = {7 in, 1 out}.
  const Trace pool = {Session{"p0", 0, {shared_list_seg(10, 2, 1.5), shared_list_seg(3, 4, -1)}},
                      Session{"p1", 0, {shared_list_seg(7, 1, -1)}}};
  const Trace t = bootstrap(pool, 5, 11);
  REQUIRE(t.size() == 5);
  size_t of_p0 = 0;
  for (const Session& s : t) of_p0 += s.id.substr(0, 2) == "p0";
  CHECK((of_p0 >= 1 && of_p0 <= 4));  // both pool sessions drawn: each shares with its copies
  for (size_t k = 0; k < t.size(); ++k) {
    // The k-th draw of pool session <id> is "<id>#<k>": its first two characters name it.
    const size_t from = t[k].id.substr(0, 2) == "p0" ? 0 : 1;
    CHECK(t[k].id == pool[from].id + "#" + std::to_string(k));
    CHECK(t[k].segments.shares_with(pool[from].segments));  // no copy of the segments
    CHECK(&t[k].segments[0] == &pool[from].segments[0]);    // the same address
    CHECK(t[k].segments == pool[from].segments);
  }
  // Poisson arrivals re-time the copies and keep them sharing (they only read segments).
  Trace timed = t;
  ArrivalSpec a;
  a.process = "poisson";
  a.rate = 4;
  a.seed = 3;
  apply_arrivals(timed, a);
  CHECK(drop_broken_forks(timed) == 0);  // no fork in the pool
  for (size_t k = 0; k < timed.size(); ++k) {
    CHECK(timed[k].arrival_s > (k == 0 ? 0 : timed[k - 1].arrival_s));  // exponential gaps > 0
    CHECK(timed[k].segments.shares_with(t[k].segments));
  }
}

TEST_CASE("trace.draw: a drawn fork loses its fork in its own copy, not in the pool") {
  Segment forked = shared_list_seg(8, 1, -1);
  forked.event = ContextEvent{ContextEventKind::kFork, 4, 0, "p0"};
  const Trace pool = {Session{"p0", 0, {shared_list_seg(10, 2, -1)}}, Session{"p1", 0, {forked}}};
  const Trace t = bootstrap(pool, 5, 11);  // the same draws as above: p1 among them
  for (const Session& s : t) {
    const bool of_p1 = s.id.substr(0, 2) == "p1";
    CHECK(s.segments[0].event.kind == ContextEventKind::kNone);
    CHECK(s.segments.shares_with(pool[of_p1 ? 1 : 0].segments) == !of_p1);
  }
  CHECK(pool[1].segments[0].event.kind == ContextEventKind::kFork);  // the pool is untouched
}
