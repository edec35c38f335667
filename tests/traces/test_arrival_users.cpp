// The `users` arrival process (traces/arrival.h) on tiny hand-built pools. The seeded draws were
// computed by an independent Python port of splitmix64 + xoshiro256** (the known answers of
// test_arrival.cpp check the same generator): seed 7 shuffles the 3 roots to [b, c, a] then
// [b, c, a] again, then draws the users' offsets 0.9908602788330683 and 0.060752079492816136 of
// stagger_s; seed 8 shuffles to [c, a, b] first, then 0.39588518180949983 for user 0; seed 3
// with four users to [b, a, c], [b, a, c], [a, b, c].
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/input_error.h"
#include "traces/arrival.h"
#include "traces/jsonl.h"

using namespace isim::trace;

namespace {

Segment seg(int64_t in, int64_t out, const char* kind = "", double dur = 0) {
  Segment s{in, out, std::nullopt};
  if (kind[0] != 0) s.intercept = Intercept{kind, dur};
  return s;
}

Session child(const char* id, double at, const char* parent, std::vector<Segment> segs) {
  Session s{id, at, std::move(segs)};
  s.segments[0].event = {ContextEventKind::kFork, 0, 0, parent};
  return s;
}

// Roots a, b, c (trace order), b with a subagent b/x 3 s after it.
Trace pool3() {
  return {Session{"a", 0.0, {seg(10, 2, "tool", 100.0), seg(3, 1)}},
          Session{"b", 2.0, {seg(8, 1, "tool", 5.0), seg(2, 1)}},
          child("b/x", 5.0, "b", {seg(4, 1)}), Session{"c", 1.0, {seg(6, 1)}}};
}

ArrivalSpec users(int64_t c, int64_t k, uint64_t seed) {
  ArrivalSpec a;
  a.process = "users";
  a.users = c;
  a.sessions_per_user = k;
  a.seed = seed;
  return a;
}

Trace replayed(Trace t, const ArrivalSpec& a) {
  apply_arrivals(t, a);
  return t;
}

std::vector<std::string> ids(const Trace& t) {
  std::vector<std::string> v;
  for (const auto& s : t) v.push_back(s.id);
  return v;
}

// Every session passes the format's checks, forks included, and each dependency points back.
void check_valid(Trace t) {
  for (size_t i = 0; i < t.size(); ++i) {
    validate_session(t[i], t[i].id);
    CHECK(t[i].start_after.session < static_cast<int32_t>(i));
  }
  validate_forks(t, [&](size_t i) { return t[i].id; });
  CHECK(drop_broken_forks(t) == 0);
}

std::string error(const ArrivalSpec& a) {
  try {
    replayed(pool3(), a);
  } catch (const isim::InputError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("users: copies, ids, order and dependencies of two users with two sessions each") {
  ArrivalSpec a = users(2, 2, 7);
  a.stagger_s = 10;
  const Trace t = replayed(pool3(), a);
  // Draw k * users + u: u0 gets b then a, u1 gets c then b.
  CHECK(ids(t) ==
        std::vector<std::string>{"u0/0/b", "u0/0/b/x", "u0/1/a", "u1/0/c", "u1/1/b", "u1/1/b/x"});
  const double u0 = 10 * 0.9908602788330683, u1 = 10 * 0.060752079492816136;
  CHECK(t[0].arrival_s == u0);
  CHECK(t[0].start_after == StartAfter{});
  CHECK(t[1].start_after == StartAfter{0, false, 3.0});
  CHECK(t[1].arrival_s == u0 + 3.0);
  CHECK(t[1].segments[0].event.parent == "u0/0/b");
  CHECK(t[2].start_after == StartAfter{0, true, 0});
  CHECK(t[2].arrival_s == u0);  // a lower bound; the cluster ignores it
  CHECK(t[3].arrival_s == u1);
  CHECK(t[3].start_after == StartAfter{});
  CHECK(t[4].start_after == StartAfter{3, true, 0});
  CHECK(t[5].start_after == StartAfter{4, false, 3.0});
  CHECK(t[5].segments[0].event.parent == "u1/1/b");
  // max_delay_s (default 60) caps a's 100 s tool call; b's 5 s stays.
  CHECK(t[2].segments[0].intercept->duration_s == 60);
  CHECK(t[0].segments[0].intercept->duration_s == 5);
  // Otherwise a copy is its original.
  Session want = pool3()[0];
  want.id = t[2].id;
  want.arrival_s = t[2].arrival_s;
  want.start_after = t[2].start_after;
  want.segments[0].intercept->duration_s = 60;
  CHECK(t[2] == want);
  check_valid(t);
}

TEST_CASE("users: the seed decides the draws and the stagger, reproducibly") {
  ArrivalSpec a = users(2, 2, 7);
  CHECK(replayed(pool3(), a) == replayed(pool3(), a));
  ArrivalSpec b = a;
  b.seed = 8;
  const Trace t8 = replayed(pool3(), b);
  CHECK(t8 != replayed(pool3(), a));
  CHECK(ids(t8) == std::vector<std::string>{"u0/0/c", "u0/1/b", "u0/1/b/x", "u1/0/a", "u1/1/c"});
  CHECK(t8[0].arrival_s == 60 * 0.39588518180949983);
  a.stagger_s = 0;
  for (const auto& s : replayed(pool3(), a))
    if (s.start_after.session < 0) CHECK(s.arrival_s == 0);
}

TEST_CASE("users: each root is drawn once before any repeats") {
  ArrivalSpec a = users(4, 2, 3);
  const Trace t = replayed(pool3(), a);
  // Root copies by draw index k * users + u.
  std::map<int, std::string> drawn;
  for (const auto& s : t) {
    const auto first = s.id.find('/'), second = s.id.find('/', first + 1);
    const std::string orig = s.id.substr(second + 1);
    if (orig == "b/x") continue;
    const int u = std::stoi(s.id.substr(1, first - 1)), k = std::stoi(s.id.substr(first + 1));
    drawn[k * 4 + u] = orig;
  }
  std::vector<std::string> order;
  for (const auto& [d, id] : drawn) order.push_back(id);
  CHECK(order == std::vector<std::string>{"b", "a", "c", "b", "a", "c", "a", "b"});
  for (size_t cycle = 0; cycle + 3 <= order.size(); cycle += 3)
    CHECK(std::set<std::string>(order.begin() + cycle, order.begin() + cycle + 3).size() == 3);
  check_valid(t);
}

TEST_CASE("users: max_delay_s 0 keeps every intercept; another value caps them all") {
  ArrivalSpec a = users(3, 1, 7);
  a.max_delay_s = 0;
  const Trace t = replayed(pool3(), a);  // u0 b, u1 c, u2 a
  CHECK(t.back().id == "u2/0/a");
  CHECK(t.back().segments[0].intercept->duration_s == 100);
  a.max_delay_s = 4;
  for (const auto& s : replayed(pool3(), a))
    for (const auto& g : s.segments)
      if (g.intercept) CHECK(g.intercept->duration_s == 4);
}

TEST_CASE("users: under the cap a subagent keeps its place in its parent's shortened timeline") {
  // p's tool calls take 100 and 80 s, capped to 60 each. A subagent 50 s in is before any cut;
  // 90 s in is past the first call's 60 s (90 - 30 = 60); 170 s in, 70 s into the second call,
  // loses the first call's 40 s and 10 s of the second (120); 250 s in loses 40 + 20 (190).
  Trace t = {Session{"p", 10.0, {seg(8, 1, "tool", 100), seg(4, 1, "tool", 80), seg(2, 1)}}};
  const std::pair<const char*, double> kids[] = {
      {"c50", 50}, {"c90", 90}, {"c170", 170}, {"c250", 250}};
  for (const auto& [id, at] : kids) t.push_back(child(id, 10 + at, "p", {seg(4, 1)}));
  ArrivalSpec a = users(1, 1, 1);
  a.stagger_s = 0;
  const Trace capped = replayed(t, a);
  REQUIRE(capped.size() == 5);
  const double want[] = {50, 60, 120, 190};
  for (size_t i = 0; i < 4; ++i) CHECK(capped[i + 1].start_after == StartAfter{0, false, want[i]});
  check_valid(capped);
  a.max_delay_s = 0;  // no cap: the trace's own offsets
  const Trace whole = replayed(t, a);
  for (size_t i = 0; i < 4; ++i) CHECK(whole[i + 1].start_after.delay_s == t[i + 1].arrival_s - 10);
}

TEST_CASE("users: ids are zero-padded to the widest user number") {
  const Trace t = replayed(pool3(), users(11, 1, 7));
  CHECK(t.front().id.substr(0, 4) == "u00/");
  CHECK(t.back().id.substr(0, 4) == "u10/");
}

namespace {

// r: 4 segments, a reset on the third keeping 9 of the 20 tokens, prompt hashes of 4-token
// blocks (the third partial); subagents r/k (2.5 s in) with its own r/k/g, and r/m (3.5 s in).
Trace pool_advance() {
  Session r{"r",
            1.0,
            {seg(10, 2, "tool", 1.0), seg(5, 3, "tool", 2.0), seg(4, 1, "user", 4.0), seg(6, 2)},
            PrefixHashes{4, {1, 2, 3}}};
  r.segments[2].event = {ContextEventKind::kReset, 12, 9, ""};
  r.segments[3].retention = {Retention{0, 20, 80, 0}};
  return {r, child("r/k", 3.5, "r", {seg(4, 1)}), child("r/k/g", 4.0, "r/k", {seg(4, 1)}),
          child("r/m", 4.5, "r", {seg(4, 1)})};
}

Trace advanced(double f) {
  ArrivalSpec a = users(1, 2, 1);
  a.stagger_s = 0;
  a.max_delay_s = 0;
  a.advance_min = a.advance_max = f;
  Trace t = replayed(pool_advance(), a);
  check_valid(t);
  return t;
}

}  // namespace

TEST_CASE("users: a first session advanced past half of its segments") {
  // floor(0.5 * 4) = 2 segments skipped. Before the third segment's input the context is its
  // reset's 12 tokens, so its input becomes 12 + 4 = 16 and the reset goes. The reset kept only
  // 9 prompt tokens: the hashes of the 2 full blocks within them stay. The skipped part spans
  // 1 + 2 = 3 s of intercepts: r/k (2.5 s in) forked inside it and is dropped with r/k/g; r/m
  // arrives 3.5 - 3 = 0.5 s after the advanced copy. The second session is whole.
  const Trace t = advanced(0.5);
  CHECK(ids(t) == std::vector<std::string>{"u0/0/r", "u0/0/r/m", "u0/1/r", "u0/1/r/k", "u0/1/r/k/g",
                                           "u0/1/r/m"});
  const Session& r = t[0];
  REQUIRE(r.segments.size() == 2);
  CHECK(r.segments[0].input == 16);
  CHECK(r.segments[0].output == 1);
  CHECK(r.segments[0].event == ContextEvent{});
  CHECK(r.segments[0].intercept == Intercept{"user", 4.0});
  CHECK(r.segments[1] == pool_advance()[0].segments[3]);  // its retention still fits
  CHECK(r.prefix == PrefixHashes{4, {1, 2}});
  CHECK(r.max_context() == pool_advance()[0].max_context());
  CHECK(t[1].start_after == StartAfter{0, false, 0.5});
  CHECK(t[2].segments == pool_advance()[0].segments);
  CHECK(t[2].start_after == StartAfter{0, true, 0});
  CHECK(t[3].start_after == StartAfter{2, false, 2.5});
  CHECK(t[4].start_after == StartAfter{3, false, 0.5});
  CHECK(t[5].start_after == StartAfter{2, false, 3.5});
}

TEST_CASE("users: advanced by one segment, and at most all but the last") {
  SUBCASE("floor(0.25 * 4) = 1: the context so far is 12") {
    const Trace t = advanced(0.25);
    const Session& r = t[0];
    REQUIRE(r.segments.size() == 3);
    CHECK(r.segments[0].input == 12 + 5);
    CHECK(r.segments[1].event == ContextEvent{ContextEventKind::kReset, 12, 9, ""});
    CHECK(r.prefix == PrefixHashes{4, {1, 2}});  // the partial third block's hash goes
    CHECK(t[1].id == "u0/0/r/k");                // 2.5 s in, after the 1 s skipped
    CHECK(t[1].start_after == StartAfter{0, false, 1.5});
    CHECK(t[2].start_after == StartAfter{1, false, 0.5});
    CHECK(t[3].start_after == StartAfter{0, false, 2.5});
  }
  SUBCASE("fraction 1: only the last segment is left, every subagent forked before it") {
    const Trace t = advanced(1.0);
    REQUIRE(t[0].segments.size() == 1);
    CHECK(t[0].segments[0].input == 17 + 6);
    CHECK(t[1].id == "u0/1/r");
  }
  SUBCASE("fraction 0 changes nothing") {
    const Trace t = advanced(0);
    CHECK(t[0].segments == pool_advance()[0].segments);
    CHECK(t[0].prefix == pool_advance()[0].prefix);
  }
}

TEST_CASE("users: bad settings name the key and what is expected") {
  ArrivalSpec a = users(0, 2, 1);
  CHECK(error(a) ==
        "arrival.users: must be an integer >= 1 (how many users replay sessions at "
        "once), got 0");
  a = users(2, 0, 1);
  CHECK(error(a) == "arrival.sessions_per_user: must be an integer >= 1, got 0");
  a = users(2, 2, 1);
  a.stagger_s = -1;
  CHECK(error(a) == "arrival.stagger_s: must be a finite number of seconds >= 0, got -1");
  a = users(2, 2, 1);
  a.max_delay_s = std::nan("");
  CHECK(error(a) ==
        "arrival.max_delay_s: must be a finite number of seconds >= 0 (0: no cap), got nan");
  a = users(2, 2, 1);
  a.advance_min = -0.1;
  CHECK(error(a) == "arrival.advance_min: must be a fraction in [0, 1], got -0.1");
  a = users(2, 2, 1);
  a.advance_max = 1.5;
  CHECK(error(a) == "arrival.advance_max: must be a fraction in [0, 1], got 1.5");
  a = users(2, 2, 1);
  a.advance_min = 0.5;
  a.advance_max = 0.25;
  CHECK(error(a) == "arrival.advance_min: must be <= advance_max (0.25), got 0.5");
  a = users(100000, 1000, 1);
  CHECK(error(a) ==
        "arrival.users: users x sessions_per_user must be at most 10000000, got "
        "100000 x 1000");
  Trace cycle = {child("p", 0, "q", {seg(1, 1)}), child("q", 0, "p", {seg(1, 1)})};
  CHECK_THROWS_WITH_AS(apply_arrivals(cycle, users(1, 1, 1)),
                       doctest::Contains("arrival.process: users needs a session that forks "
                                         "from no other"),
                       isim::InputError);
  Trace none;
  apply_arrivals(none, users(2, 2, 1));
  CHECK(none.empty());
}

TEST_CASE("users and phases: the upper ends of the seconds and cycles keys") {
  // 10^7 s is the most (116 days, longer than any trace); one second more is refused.
  ArrivalSpec a = users(2, 2, 1);
  a.stagger_s = 1e7;
  CHECK(error(a) == "(no error)");
  a.stagger_s = 10000001;
  CHECK(error(a) ==
        "arrival.stagger_s: must be <= 10000000 (10^7 s (116 days): longer than any trace), got "
        "10000001");
  a = users(2, 2, 1);
  a.max_delay_s = 1e12;
  CHECK(error(a) ==
        "arrival.max_delay_s: must be <= 10000000 (10^7 s (116 days): longer than any trace), "
        "got 1000000000000");
  ArrivalSpec p;
  p.process = "user-phases";
  p.phases = {{1e8, {{"math", 1}}}};
  CHECK(phases_problem(p).key == "phases[0].duration_s");
  CHECK(phases_problem(p).reason ==
        "must be <= 10000000 (10^7 s (116 days): longer than any trace), got 100000000");
  p.phases = {{60, {{"math", 1}}}};
  p.cycles = 100000;  // the most
  CHECK(phases_problem(p).key.empty());
  p.cycles = 100001;
  CHECK(phases_problem(p).key == "cycles");
  CHECK(phases_problem(p).reason ==
        "must be <= 100000 (each cycle adds a window per phase), got 100001");
}
