// User-phases start windows (trace::StartAfter windows; cluster/arrivals.h) on the round
// profile (tests/sim_fixtures.h: T(x) = 10 ms + 1 ms per batched token), vllm-v0, every
// invariant checked. Two users, two phases of 62.5 ms, twice (binary-exact bounds): user A is
// active in the first phase of each cycle ([0, 62.5) and [125, 187.5) ms), user B in the second
// ([62.5, 125) and [187.5, 250) ms). Every session prefills 4 tokens and decodes its one token
// in that iteration: 14 ms alone. The users never overlap, so every time is worked out by hand.
#include <doctest/doctest.h>

#include <memory>

#include "cluster/cluster.h"
#include "cluster/simulation.h"
#include "policies/builtin.h"
#include "tests/sim_fixtures.h"

using namespace isim;
using isim::test::rec;
using isim::test::seg;

namespace {

// User `user`'s `n` sessions in a row, the first arriving at `first_s`.
void add_user(trace::Trace& t, const char* user, int n, double first_s,
              std::shared_ptr<const trace::ActiveWindows> w) {
  for (int k = 0; k < n; ++k) {
    trace::Session s{std::string(user) + std::to_string(k), first_s, {seg(4, 1)}};
    const int32_t prev = k == 0 ? -1 : static_cast<int32_t>(t.size()) - 1;
    s.start_after = trace::StartAfter{prev, true, 0, w};
    t.push_back(std::move(s));
  }
}

sim::Nanos at_ns(double s) {
  return sim::from_seconds(s);
}

}  // namespace

TEST_CASE("user phases: sessions start only in their user's windows, else wait or never start") {
  auto a = std::make_shared<const trace::ActiveWindows>(
      trace::ActiveWindows{{{0, 0.0625}, {0.125, 0.1875}}});
  auto b = std::make_shared<const trace::ActiveWindows>(
      trace::ActiveWindows{{{0.0625, 0.125}, {0.1875, 0.25}}});
  trace::Trace t;
  add_user(t, "a", 12, 0.0, a);
  add_user(t, "b", 3, 0.075, b);  // B's stagger puts its first session at 75 ms
  sim::EngineConfig cfg;
  cfg.gpu_blocks = 100;
  cfg.cpu_blocks = 0;
  const auto r = test::run(t, "preserve", cfg);
  // A: a0..a4 back to back from 0 (0-14, 14-28, 28-42, 42-56, 56-70: a4 starts at 56 < 62.5
  // and runs past the phase). a5's turn comes at 70 ms, outside A's windows: it waits for the
  // next one, 125 ms (125-139), then a6-a9 at 139, 153, 167, 181 (181 < 187.5; ends 195).
  // a10's turn at 195 ms: no window left, so neither it nor a11 starts.
  CHECK(at_ns(rec(r, "a4").arrival_s) == 56'000'000);
  CHECK(at_ns(rec(r, "a4").finish_s) == 70'000'000);
  CHECK(at_ns(rec(r, "a5").arrival_s) == 125'000'000);
  CHECK(at_ns(rec(r, "a5").finish_s) == 139'000'000);
  CHECK(at_ns(rec(r, "a5").ttft_s) == 14'000'000);  // counted from its start, not its turn
  CHECK(at_ns(rec(r, "a9").arrival_s) == 181'000'000);
  CHECK(at_ns(rec(r, "a9").finish_s) == 195'000'000);
  // B: 75-89, 89-103, 103-117; then it has no session left.
  CHECK(at_ns(rec(r, "b2").arrival_s) == 103'000'000);
  CHECK(at_ns(rec(r, "b2").finish_s) == 117'000'000);
  // Never started is not a failure: out of the records and the summary, counted apart.
  CHECK(r.not_started == 2);
  CHECK(r.sessions.size() == 13);
  CHECK_THROWS(rec(r, "a10"));
  CHECK_THROWS(rec(r, "a11"));
  CHECK(r.summary.sessions == 13);
  CHECK(r.summary.finished == 13);
  CHECK(r.summary.skipped == 0);
}
