// The link's fluid model, by hand: 1 GB/s is one byte per nanosecond.
#include <doctest/doctest.h>

#include <stdexcept>

#include "cluster/link.h"

using namespace isim;
using cluster::Link;
using cluster::LinkSpec;

TEST_CASE("a lone transfer takes latency + bytes / bandwidth") {
  Link l(LinkSpec{"nvlink", 1.0, 1e-6});  // 1 B/ns, 1 us
  const int64_t id = l.start(0, 1e6);
  CHECK(l.in_flight() == 1);
  CHECK(l.next_event() == 1000);  // it starts moving
  CHECK(l.advance(1000).empty());
  CHECK(l.next_event() == 1001000);
  CHECK(l.advance(1000999).empty());
  const auto done = l.advance(1001000);
  REQUIRE(done.size() == 1);
  CHECK(done[0] == id);
  CHECK(l.in_flight() == 0);
  CHECK(l.next_event() == sim::kForever);
  CHECK(l.bytes_moved() == doctest::Approx(1e6));
}

TEST_CASE("two transfers started together share the link: each gets half") {
  Link l(LinkSpec{"infiniband", 1.0, 0});
  const int64_t a = l.start(0, 1e6);
  const int64_t b = l.start(0, 1e6);
  CHECK(l.next_event() == 2000000);
  const auto done = l.advance(2000000);
  REQUIRE(done.size() == 2);
  CHECK(done[0] == a);  // ties complete in id order
  CHECK(done[1] == b);
}

TEST_CASE("a transfer joining later slows the first; rates are recomputed at each change") {
  // A alone moves 0.5 MB by 0.5 ms; then both move at 0.5 B/ns: A's last 0.5 MB takes 1 ms
  // (done at 1.5 ms), by when B has moved 0.5 MB; B's last 0.5 MB alone takes 0.5 ms (2 ms).
  Link l(LinkSpec{"nvlink", 1.0, 0});
  const int64_t a = l.start(0, 1e6);
  CHECK(l.advance(500000).empty());
  const int64_t b = l.start(500000, 1e6);
  CHECK(l.next_event() == 1500000);
  auto done = l.advance(1500000);
  REQUIRE(done.size() == 1);
  CHECK(done[0] == a);
  CHECK(l.next_event() == 2000000);
  done = l.advance(2000000);
  REQUIRE(done.size() == 1);
  CHECK(done[0] == b);
}

TEST_CASE("latency is not shared: a transfer in its latency leaves the bandwidth to others") {
  // A (1 MB) starts at 0 with 1 ms latency, moving from 1 ms; B (0.5 MB) starts at 0.5 ms and
  // moves from 1.5 ms. A alone 1 -> 1.5 ms: 0.5 MB; both 1.5 -> 2.5 ms: 0.5 MB each, so both
  // finish at 2.5 ms.
  Link l(LinkSpec{"nvlink", 1.0, 1e-3});
  l.start(0, 1e6);
  l.start(500000, 5e5);
  const auto done = l.advance(2500000);
  CHECK(done.size() == 2);
  CHECK(l.in_flight() == 0);
}

TEST_CASE("advance is idempotent and time only goes forward") {
  Link l(LinkSpec{"nvlink", 2.0, 0});  // 2 B/ns
  l.start(100, 1000);                   // done at 600
  CHECK(l.advance(300).empty());
  CHECK(l.advance(300).empty());
  CHECK(l.advance(600).size() == 1);
  CHECK_THROWS_AS(l.start(500, 10), std::logic_error);
}

TEST_CASE("late in a long run a transfer still completes (the clock's resolution runs out)") {
  // At t = 3e13 ns (8 h) a double resolves about 4e-3 ns; 1e8 bytes at 450 B/ns leave rests
  // below that after rounding, which must complete rather than stall the clock.
  Link l(LinkSpec{"nvlink", 450.0, 3e-6});
  sim::Nanos t = 30'000'000'000'000;
  for (int i = 0; i < 50; ++i) {
    l.start(t, 1e8 + 7.0 * i);
    t += 97'531;
  }
  int done = 0;
  for (int guard = 0; guard < 1000 && l.in_flight() > 0; ++guard) {
    const sim::Nanos e = l.next_event();
    REQUIRE(e != sim::kForever);
    done += static_cast<int>(l.advance(e).size());
  }
  CHECK(done == 50);
  CHECK(l.in_flight() == 0);
}
