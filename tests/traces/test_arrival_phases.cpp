// The user-phases arrival process (traces/arrival.h, traces/arrival_phases.h), session_class
// and trace.kinds (traces/workload.h) on tiny pools of one root per class, so that no seeded
// shuffle matters, with stagger_s 0 (every offset 0) and no advance: every expected value is
// worked out by hand below.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "core/input_error.h"
#include "traces/arrival.h"
#include "traces/arrival_phases.h"
#include "traces/workload.h"

using namespace isim::trace;

namespace {

Trace class_pool() {
  return {Session{"x-0", 0.0, {Segment{4, 1, std::nullopt}}},
          Session{"y-0", 0.0, {Segment{4, 1, std::nullopt}}}};
}

// Two phases of 1/16 s (binary-exact sums), x: 2 users then 1, y: 0 then 1; twice.
ArrivalSpec shifting() {
  ArrivalSpec a;
  a.process = "user-phases";
  a.sessions_per_user = 2;
  a.stagger_s = 0;
  a.phases = {{0.0625, {{"x", 2}, {"y", 0}}}, {0.0625, {{"x", 1}, {"y", 1}}}};
  a.cycles = 2;
  return a;
}

std::string problem_key(const ArrivalSpec& a) {
  return phases_problem(a).key;
}

using Spans = std::vector<std::pair<double, double>>;

}  // namespace

TEST_CASE("session_class: the id before its first '/', less a trailing -<number>") {
  CHECK(session_class("computer-use-12/sub-0") == "computer-use");
  CHECK(session_class("math-3") == "math");
  CHECK(session_class("x-0") == "x");
  CHECK(session_class("v1-2") == "v1");
  CHECK(session_class("trace_0002") == "trace_0002");
  CHECK(session_class("trace_0002/agent-7") == "trace_0002");
  CHECK(session_class("abc123") == "abc123");
  CHECK(session_class("a-") == "a-");
  CHECK(session_class("-5") == "-5");
}

TEST_CASE("user-phases: each user's windows, ids and start dependencies") {
  Trace t = class_pool();
  apply_arrivals(t, shifting());
  // Classes in order of first appearance (x, y); x has 2 users (its most), y 1; 2 sessions
  // each, user by user.
  REQUIRE(t.size() == 6);
  const std::vector<std::string> ids = {"x/u0/0/x-0", "x/u0/1/x-0", "x/u1/0/x-0",
                                        "x/u1/1/x-0", "y/u0/0/y-0", "y/u0/1/y-0"};
  for (size_t i = 0; i < ids.size(); ++i) CHECK(t[i].id == ids[i]);
  // x user 0 is active in every phase (0 < 2, 0 < 1): one window [0, 4/16). x user 1 only in
  // the first phase of each cycle; y user 0 only in the second.
  REQUIRE(t[0].start_after.windows);
  CHECK(t[0].start_after.windows->spans == Spans{{0, 0.25}});
  CHECK(t[2].start_after.windows->spans == Spans{{0, 0.0625}, {0.125, 0.1875}});
  CHECK(t[4].start_after.windows->spans == Spans{{0.0625, 0.125}, {0.1875, 0.25}});
  // One list per user, shared by its sessions.
  CHECK(t[0].start_after.windows == t[1].start_after.windows);
  // First sessions arrive at their first window's start (offset 0) with no predecessor; later
  // ones after the user's previous root copy finishes.
  CHECK(t[0].start_after.session == -1);
  CHECK(t[0].arrival_s == 0);
  CHECK(t[4].start_after.session == -1);
  CHECK(t[4].arrival_s == 0.0625);
  CHECK(t[1].start_after.session == 0);
  CHECK(t[1].start_after.on_finish);
  CHECK(t[3].start_after.session == 2);
  CHECK(t[5].start_after.session == 4);
  CHECK(t[5].arrival_s == 0.0625);
  // The same spec, the same trace (windows compared by value).
  Trace again = class_pool();
  apply_arrivals(again, shifting());
  CHECK(again == t);
}

TEST_CASE("user-phases: next_start keeps an instant inside a window, else the next begin") {
  const ActiveWindows w{{{0, 0.0625}, {0.125, 0.1875}}};
  CHECK(w.next_start(0.03) == 0.03);
  CHECK(w.next_start(0.0625) == 0.125);  // a window's end is outside it
  CHECK(w.next_start(0.1) == 0.125);
  CHECK(w.next_start(0.1875) == -1);
}

TEST_CASE("user-phases: a stagger past the user's last window leaves it without sessions") {
  ArrivalSpec a = shifting();
  a.cycles = 1;
  a.stagger_s = 1000;  // every offset lands past 1/8 s, for a seed whose draws are > 0.001
  Trace t = class_pool();
  apply_arrivals(t, a);
  // Every window ends by 1/8 s; seed 1's three offsets are far above it (a draw below 1/8000
  // of stagger_s would be needed to land inside), so no user plays anything.
  CHECK(t.empty());
}

TEST_CASE("user-phases: bad phases name their key") {
  ArrivalSpec a = shifting();
  CHECK(problem_key(a) == "");
  a.phases.clear();
  CHECK(problem_key(a) == "phases");
  a = shifting();
  a.phases[0].duration_s = 0;
  CHECK(problem_key(a) == "phases[0].duration_s");
  a = shifting();
  a.phases[1].users[1].second = -1;
  CHECK(problem_key(a) == "phases[1].users.y");
  a = shifting();
  a.cycles = 0;
  CHECK(problem_key(a) == "cycles");
  a = shifting();
  a.sessions_per_user = 0;
  CHECK(problem_key(a) == "sessions_per_user");
  a = shifting();
  a.phases[0].users.push_back({"z", 1});
  Trace t = class_pool();
  CHECK_THROWS_WITH_AS(apply_arrivals(t, a),
                       doctest::Contains("users of class 'z', but no root session"),
                       isim::InputError);
}

TEST_CASE("user-phases: sessions started per class per phase window") {
  Trace t = class_pool();
  const ArrivalSpec a = shifting();
  apply_arrivals(t, a);
  // x/u0/0 and x/u1/0 start at 0 (cycle 0, phase 0), x/u0/1 at 0.07 (cycle 0, phase 1),
  // x/u1/1 never; y/u0/0 at 1/16 (cycle 0, phase 1), y/u0/1 at 0.2 (cycle 1, phase 1).
  const std::vector<double> at = {0, 0.07, 0, -1, 0.0625, 0.2};
  const auto w = phase_starts(a, t, [&](size_t i) { return at[i]; });
  REQUIRE(w.size() == 4);
  using Counts = std::vector<std::pair<std::string, int64_t>>;
  CHECK(w[0].started == Counts{{"x", 2}, {"y", 0}});
  CHECK(w[1].started == Counts{{"x", 1}, {"y", 1}});
  CHECK(w[2].started == Counts{{"x", 0}, {"y", 0}});
  CHECK(w[3].started == Counts{{"x", 0}, {"y", 1}});
  CHECK(w[3].cycle == 1);
  CHECK(w[3].phase == 1);
  CHECK(w[3].begin_s == 0.1875);
  CHECK(w[3].end_s == 0.25);
  // The users' last root copies: x/u0/1 started (x user 0 ran out), x/u1/1 did not, y/u0/1
  // started (y user 0 ran out).
  CHECK(ran_out(a, t, [&](size_t i) { return at[i]; }) == Counts{{"x", 1}, {"y", 1}});
}

TEST_CASE("trace.kinds keeps the sessions of the listed classes") {
  WorkloadSpec ws;
  ws.from = "agents";
  ws.sessions = 40;
  ws.kinds = {"math"};
  ArrivalSpec replay;
  replay.process = "replay";
  const Workload w = make_workload(ws, replay, 1, "test");
  REQUIRE(!w.trace.empty());
  for (const auto& s : w.trace) CHECK(session_class(s.id) == "math");
  ws.kinds = {"nope"};
  CHECK_THROWS_WITH_AS(make_workload(ws, replay, 1, "test"),
                       doctest::Contains("trace.kinds: no session of the classes [nope]"),
                       isim::InputError);
}
