// The agent context signals in the native JSONL format: exact bytes, round trips, every read,
// validate and trace-level error message, and Session::max_context with resets.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <sstream>

#include "core/input_error.h"
#include "tests/traces/trace_helpers.h"
#include "traces/jsonl.h"

using namespace isim::trace;

namespace {

Trace parse(const std::string& text) { return isim::test::parse_jsonl_text(text); }
std::string error_of(const std::string& text) { return isim::test::jsonl_error(text); }

std::string validate_error(const Session& s) {
  try {
    validate_session(s, "here");
  } catch (const isim::InputError& e) {
    return e.what();
  }
  return "";
}

std::string line(const std::string& segments) {
  return R"({"id":"s","arrival_s":1,"segments":)" + segments + "}\n";
}

// Segment 0 of 10 + 2 tokens pausing for a tool, then `second` as segment 1.
std::string two(const std::string& second) {
  return line(R"([{"input":10,"output":2,"intercept":{"kind":"k","duration_s":1}},)" + second +
              "]");
}

const std::string kSignals =
    R"({"id":"p","arrival_s":0,"segments":[{"input":100,"output":10,"intercept":{"kind":"tool",)"
    R"("duration_s":2.5},"retention":[{"begin":0,"end":50,"priority":90,"duration_s":0},)"
    R"({"begin":50,"end":100,"priority":10,"duration_s":1.5}]},{"input":20,"output":5,)"
    R"("intercept":{"kind":"user","duration_s":30},"context_event":{"kind":"reset","tokens":40,)"
    R"("shared":30},"retention":[{"begin":0,"end":30,"priority":100,"duration_s":0}]},)"
    R"({"input":7,"output":3}]})"
    "\n"
    R"({"id":"c","arrival_s":1,"segments":[{"input":60,"output":4,"intercept":{"kind":"tool",)"
    R"("duration_s":1},"context_event":{"kind":"fork","parent":"p","tokens":30}},{"input":2,)"
    R"("output":1,"context_event":{"kind":"end"}}],"prefix":{"block_tokens":16,"hashes":[1,2]}})"
    "\n";

Trace signals_trace() {
  Session p{"p", 0, {{100, 10, Intercept{"tool", 2.5}}, {20, 5, Intercept{"user", 30}}, {7, 3, {}}}};
  p.segments[0].retention = {{0, 50, 90, 0}, {50, 100, 10, 1.5}};
  p.segments[1].event = {ContextEventKind::kReset, 40, 30, ""};
  p.segments[1].retention = {{0, 30, 100, 0}};
  Session c{"c", 1, {{60, 4, Intercept{"tool", 1}}, {2, 1, {}}}};
  c.segments[0].event = {ContextEventKind::kFork, 30, 0, "p"};
  c.segments[1].event.kind = ContextEventKind::kEnd;
  c.prefix = PrefixHashes{16, {1, 2}};
  return {p, c};
}

}  // namespace

TEST_CASE("jsonl signals: exact bytes, written after the intercept, round trip") {
  const Trace t = signals_trace();
  std::ostringstream os;
  write_jsonl(os, t);
  CHECK(os.str() == kSignals);
  CHECK(parse(kSignals) == t);
  std::ostringstream again;
  write_jsonl(again, parse(os.str()));
  CHECK(again.str() == kSignals);
  // Doubles in retention keep their exact value.
  Trace odd = t;
  odd[0].segments[0].retention[1].duration_s = 0.1 + 0.2;
  std::ostringstream o2;
  write_jsonl(o2, odd);
  CHECK(parse(o2.str()) == odd);
  // An empty retention list reads as no retention, and is not written.
  const Trace empty = parse(line(R"([{"input":1,"output":1,"retention":[]}])"));
  CHECK(empty[0].segments[0].retention.empty());
  std::ostringstream o3;
  write_jsonl(o3, empty);
  CHECK(o3.str() == line(R"([{"input":1,"output":1}])"));
}

TEST_CASE("jsonl signals: max_context honours resets") {
  // p: 100 + 10 = 110; reset to 40, + 20 + 5 = 65; + 7 + 3 = 75 -> 110 (the plain sum is 145).
  CHECK(signals_trace()[0].max_context() == 110);
  // 10 + 2 = 12; reset to 4, + 1 + 1 = 6; + 20 + 5 = 31 (the plain sum would be 39).
  Session s{"x", 0, {{10, 2, Intercept{"k", 1}}, {1, 1, Intercept{"k", 1}}, {20, 5, {}}}};
  s.segments[1].event = {ContextEventKind::kReset, 4, 3, ""};
  CHECK(s.max_context() == 31);
}

TEST_CASE("jsonl signals: every read error names the field, listing what is valid") {
  struct Case {
    std::string text, expected;
  };
  const Case cases[] = {
      {line(R"([{"input":1,"output":1,"context_event":5}])"),
       "t.jsonl:1: segments[0].context_event: expected an object {kind, ...}, got 5"},
      {two(R"({"input":1,"output":1,"context_event":{}})"),
       "t.jsonl:1: segments[1].context_event.kind: missing; expected one of reset, fork, end"},
      {two(R"({"input":1,"output":1,"context_event":{"kind":3}})"),
       "t.jsonl:1: segments[1].context_event.kind: expected one of reset, fork, end, got 3"},
      {two(R"({"input":1,"output":1,"context_event":{"kind":"compact"}})"),
       "t.jsonl:1: segments[1].context_event.kind: unknown kind \"compact\"; valid: reset, fork, "
       "end"},
      {two(R"({"input":1,"output":1,"context_event":{"kind":"reset","tokens":1,"shared":0,)"
           R"("parent":"p"}})"),
       "t.jsonl:1: segments[1].context_event.parent: unknown field for kind reset; valid: kind, "
       "tokens, shared"},
      {line(R"([{"input":1,"output":1,"context_event":{"kind":"fork","parent":"p","tokens":1,)"
            R"("shared":0}}])"),
       "t.jsonl:1: segments[0].context_event.shared: unknown field for kind fork; valid: kind, "
       "parent, tokens"},
      {two(R"({"input":1,"output":1,"context_event":{"kind":"end","tokens":0}})"),
       "t.jsonl:1: segments[1].context_event.tokens: unknown field for kind end; valid: kind"},
      {two(R"({"input":1,"output":1,"context_event":{"kind":"reset","shared":0}})"),
       "t.jsonl:1: segments[1].context_event.tokens: missing; expected a non-negative integer"},
      {two(R"({"input":1,"output":1,"context_event":{"kind":"reset","tokens":1}})"),
       "t.jsonl:1: segments[1].context_event.shared: missing; expected a non-negative integer"},
      {two(R"({"input":1,"output":1,"context_event":{"kind":"reset","tokens":1,"shared":-1}})"),
       "t.jsonl:1: segments[1].context_event.shared: expected a non-negative integer, got -1"},
      {two(R"({"input":1,"output":1,"context_event":{"kind":"reset","tokens":2.5,"shared":0}})"),
       "t.jsonl:1: segments[1].context_event.tokens: expected a non-negative integer, got 2.5"},
      {line(R"([{"input":1,"output":1,"context_event":{"kind":"fork","parent":7,"tokens":0}}])"),
       "t.jsonl:1: segments[0].context_event.parent: expected a non-empty string, got 7"},
      {line(R"([{"input":1,"output":1,"context_event":{"kind":"fork","tokens":0}}])"),
       "t.jsonl:1: segments[0].context_event.parent: missing; expected a non-empty string"},
      {line(R"([{"input":1,"output":1,"retention":5}])"),
       "t.jsonl:1: segments[0].retention: expected an array of {begin, end, priority, "
       "duration_s}, got 5"},
      {line(R"([{"input":1,"output":1,"retention":[3]}])"),
       "t.jsonl:1: segments[0].retention[0]: expected an object {begin, end, priority, "
       "duration_s}, got 3"},
      {line(R"([{"input":9,"output":1,"retention":[{"begin":0,"end":1,"priority":0,)"
            R"("duration_s":0,"weight":2}]}])"),
       "t.jsonl:1: segments[0].retention[0].weight: unknown field; valid: begin, end, priority, "
       "duration_s"},
      {line(R"([{"input":9,"output":1,"retention":[{"begin":0,"priority":0,"duration_s":0}]}])"),
       "t.jsonl:1: segments[0].retention[0].end: missing; expected a non-negative integer"},
      {line(R"([{"input":9,"output":1,"retention":[{"begin":-1,"end":1,"priority":0,)"
            R"("duration_s":0}]}])"),
       "t.jsonl:1: segments[0].retention[0].begin: expected a non-negative integer, got -1"},
      {line(R"([{"input":9,"output":1,"retention":[{"begin":0,"end":1,"duration_s":0}]}])"),
       "t.jsonl:1: segments[0].retention[0].priority: missing; expected an integer in 0..100"},
      {line(R"([{"input":9,"output":1,"retention":[{"begin":0,"end":1,"priority":101,)"
            R"("duration_s":0}]}])"),
       "t.jsonl:1: segments[0].retention[0].priority: expected an integer in 0..100, got 101"},
      {line(R"([{"input":9,"output":1,"retention":[{"begin":0,"end":1,"priority":-1,)"
            R"("duration_s":0}]}])"),
       "t.jsonl:1: segments[0].retention[0].priority: expected an integer in 0..100, got -1"},
      {line(R"([{"input":9,"output":1,"retention":[{"begin":0,"end":1,"priority":50}]}])"),
       "t.jsonl:1: segments[0].retention[0].duration_s: missing; expected a number of seconds >= "
       "0"},
      {line(R"([{"input":9,"output":1,"retention":[{"begin":0,"end":1,"priority":5,)"
            R"("duration_s":"x"}]}])"),
       "t.jsonl:1: segments[0].retention[0].duration_s: expected a number of seconds >= 0, got "
       "\"x\""},
      {line(R"([{"input":1,"output":2,"tokens":3}])"),
       "t.jsonl:1: segments[0].tokens: unknown field; valid: input, output, intercept, "
       "context_event, retention"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.text);
    CHECK(error_of(c.text) == c.expected);
  }
}

TEST_CASE("jsonl signals: semantic errors, resets counted in the context") {
  const std::string reset_0 = R"({"kind":"reset","tokens":0,"shared":0})";
  struct Case {
    std::string text, expected;
  };
  const Case cases[] = {
      {line(R"([{"input":1,"output":1,"context_event":)" + reset_0 + "}]"),
       "t.jsonl:1: segments[0].context_event.kind: reset is only valid on segments k >= 1 "
       "(segment 0 has no context)"},
      {two(R"({"input":1,"output":1,"context_event":{"kind":"reset","tokens":4,"shared":5}})"),
       "t.jsonl:1: segments[1].context_event.shared: must be <= tokens (4), got 5"},
      // The context before segment 1 is 10 + 2 = 12.
      {two(R"({"input":1,"output":1,"context_event":{"kind":"reset","tokens":20,"shared":13}})"),
       "t.jsonl:1: segments[1].context_event.shared: must be <= the context before the reset "
       "(12), got 13"},
      // After a reset to 4: 4 + 1 + 1 = 6 before segment 2 (the plain sum would be 14).
      {line(R"([{"input":10,"output":2,"intercept":{"kind":"k","duration_s":1}},{"input":1,)"
            R"("output":1,"intercept":{"kind":"k","duration_s":1},"context_event":{"kind":)"
            R"("reset","tokens":4,"shared":3}},{"input":1,"output":1,"context_event":{"kind":)"
            R"("reset","tokens":9,"shared":7}}])"),
       "t.jsonl:1: segments[2].context_event.shared: must be <= the context before the reset "
       "(6), got 7"},
      {two(R"({"input":1,"output":1,"context_event":{"kind":"fork","parent":"p","tokens":0}})"),
       "t.jsonl:1: segments[1].context_event.kind: fork is only valid on segment 0 (where a "
       "subagent starts)"},
      {line(R"([{"input":10,"output":1,"context_event":{"kind":"fork","parent":"p",)"
            R"("tokens":11}}])"),
       "t.jsonl:1: segments[0].context_event.tokens: must be <= segments[0].input (10), got 11"},
      {line(R"([{"input":10,"output":1,"context_event":{"kind":"fork","parent":"","tokens":0}}])"),
       "t.jsonl:1: segments[0].context_event.parent: must be a non-empty string"},
      {line(R"([{"input":10,"output":1,"context_event":{"kind":"fork","parent":"s","tokens":0}}])"),
       "t.jsonl:1: segments[0].context_event.parent: must name another session, not the session "
       "itself (\"s\")"},
      {line(R"([{"input":10,"output":1,"intercept":{"kind":"k","duration_s":1},"context_event":)"
            R"({"kind":"end"}},{"input":1,"output":1}])"),
       "t.jsonl:1: segments[0].context_event.kind: end is only valid on the last segment "
       "(segments[1])"},
      {line(R"([{"input":9,"output":1,"retention":[{"begin":3,"end":3,"priority":0,)"
            R"("duration_s":0}]}])"),
       "t.jsonl:1: segments[0].retention[0].end: must be > begin (3), got 3"},
      {line(R"([{"input":10,"output":1,"retention":[{"begin":0,"end":11,"priority":0,)"
            R"("duration_s":0}]}])"),
       "t.jsonl:1: segments[0].retention[0].end: must be <= the context after segments[0].input "
       "(10), got 11"},
      // After the reset to 4, segment 1's input makes 5 (13 without the reset).
      {two(R"({"input":1,"output":1,"context_event":{"kind":"reset","tokens":4,"shared":3},)"
           R"("retention":[{"begin":0,"end":6,"priority":1,"duration_s":0}]})"),
       "t.jsonl:1: segments[1].retention[0].end: must be <= the context after segments[1].input "
       "(5), got 6"},
      {line(R"([{"input":10,"output":1,"retention":[{"begin":0,"end":5,"priority":0,)"
            R"("duration_s":0},{"begin":4,"end":8,"priority":0,"duration_s":0}]}])"),
       "t.jsonl:1: segments[0].retention[1].begin: must be >= retention[0].end (5): ranges are "
       "sorted by begin and do not overlap, got 4"},
      {line(R"([{"input":10,"output":1,"retention":[{"begin":5,"end":8,"priority":0,)"
            R"("duration_s":0},{"begin":0,"end":2,"priority":0,"duration_s":0}]}])"),
       "t.jsonl:1: segments[0].retention[1].begin: must be >= retention[0].end (8): ranges are "
       "sorted by begin and do not overlap, got 0"},
      {line(R"([{"input":10,"output":1,"retention":[{"begin":0,"end":5,"priority":0,)"
            R"("duration_s":-1}]}])"),
       "t.jsonl:1: segments[0].retention[0].duration_s: must be finite and >= 0, got -1"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.text);
    CHECK(error_of(c.text) == c.expected);
  }
  // The limits themselves are valid: shared = tokens = the context before; end = the context;
  // adjacent ranges; a fork sharing the whole prompt; an end on a single segment.
  CHECK(error_of(two(R"({"input":1,"output":1,"context_event":{"kind":"reset","tokens":12,)"
                     R"("shared":12},"retention":[{"begin":0,"end":5,"priority":0,)"
                     R"("duration_s":0},{"begin":5,"end":13,"priority":100,"duration_s":9}]})")) ==
        "");
  CHECK(error_of(line(R"([{"input":1,"output":1,"context_event":{"kind":"end"}}])")) == "");
}

TEST_CASE("jsonl signals: validate_session checks what JSON types cannot") {
  Session s{"x", 0, {{10, 2, Intercept{"k", 1}}, {1, 1, {}}}};
  s.segments[0].retention = {{0, 5, -1, 0}};
  CHECK(validate_error(s) == "here: segments[0].retention[0].priority: must be in 0..100, got -1");
  s.segments[0].retention = {{0, 5, 101, 0}};
  CHECK(validate_error(s) == "here: segments[0].retention[0].priority: must be in 0..100, got 101");
  s.segments[0].retention = {{0, 5, 7, std::nan("")}};
  CHECK(validate_error(s) ==
        "here: segments[0].retention[0].duration_s: must be finite and >= 0, got nan");
  s.segments[0].retention = {{0, 5, 7, std::numeric_limits<double>::infinity()}};
  CHECK(validate_error(s) ==
        "here: segments[0].retention[0].duration_s: must be finite and >= 0, got inf");
  s.segments[0].retention = {{-1, 5, 7, 0}};
  CHECK(validate_error(s) == "here: segments[0].retention[0].begin: must be >= 0, got -1");
  s.segments[0].retention.clear();
  s.segments[1].event = {ContextEventKind::kReset, -1, 0, ""};
  CHECK(validate_error(s) == "here: segments[1].context_event.tokens: must be >= 0, got -1");
  s.segments[1].event = {ContextEventKind::kReset, 3, -2, ""};
  CHECK(validate_error(s) == "here: segments[1].context_event.shared: must be >= 0, got -2");
  s.segments[1].event = {ContextEventKind::kReset, 3, 1, "p"};
  CHECK(validate_error(s) ==
        "here: segments[1].context_event.parent: unused by kind reset; must be empty, got \"p\"");
  s.segments[1].event = {ContextEventKind::kEnd, 0, 2, ""};
  CHECK(validate_error(s) ==
        "here: segments[1].context_event.shared: unused by kind end; must be 0, got 2");
  s.segments[1].event = {ContextEventKind::kNone, 3, 0, ""};
  CHECK(validate_error(s) ==
        "here: segments[1].context_event.tokens: unused by kind none; must be 0, got 3");
  s.segments[1].event = {};
  s.segments[0].event = {ContextEventKind::kFork, 1, 1, "p"};
  CHECK(validate_error(s) ==
        "here: segments[0].context_event.shared: unused by kind fork; must be 0, got 1");
  s.segments[0].event = {ContextEventKind::kFork, -1, 0, "p"};
  CHECK(validate_error(s) == "here: segments[0].context_event.tokens: must be >= 0, got -1");
  s.segments[0].event = {ContextEventKind::kFork, 10, 0, "p"};
  CHECK(validate_error(s) == "");
  // The writer refuses what the reader would, with its own location.
  s.segments[0].event = {ContextEventKind::kFork, 11, 0, "p"};
  std::ostringstream os;
  CHECK_THROWS_WITH_AS(write_jsonl(os, Trace{Session{"p", 0, {{1, 1, {}}}}, s}),
                       "write_jsonl: session 1: segments[0].context_event.tokens: must be <= "
                       "segments[0].input (10), got 11",
                       isim::InputError);
}

TEST_CASE("jsonl signals: a fork's parent is another session arriving no later") {
  const std::string child =
      R"({"id":"c","arrival_s":1,"segments":[{"input":10,"output":1,"context_event":)"
      R"({"kind":"fork","parent":"p","tokens":0}}]})"
      "\n";
  const std::string parent_at_5 = R"({"id":"p","arrival_s":5,"segments":[{"input":3,"output":1}]})"
                                  "\n";
  const std::string parent_at_1 = R"({"id":"p","arrival_s":1,"segments":[{"input":3,"output":1}]})"
                                  "\n";
  CHECK(error_of(child) ==
        "t.jsonl:1: segments[0].context_event.parent: no session \"p\" in the trace");
  // The message names the child's line (3: the blank line 1 is counted).
  CHECK(error_of("\n" + parent_at_5 + child) ==
        "t.jsonl:3: segments[0].context_event.parent: session \"p\" arrives at 5 s, after this "
        "one (1 s); a parent arrives no later");
  // Arriving at the same time is no later, and the parent may come later in the file.
  const Trace t = parse(child + parent_at_1);
  REQUIRE(t.size() == 2);
  CHECK(t[0].segments[0].event == ContextEvent{ContextEventKind::kFork, 0, 0, "p"});
  // validate_forks directly, with the caller's location; the writer checks it too.
  Trace dangling = {t[0]};
  CHECK_THROWS_WITH_AS(validate_forks(dangling, [](size_t i) { return "s#" + std::to_string(i); }),
                       "s#0: segments[0].context_event.parent: no session \"p\" in the trace",
                       isim::InputError);
  std::ostringstream os;
  CHECK_THROWS_WITH_AS(
      write_jsonl(os, dangling),
      "write_jsonl: session 0: segments[0].context_event.parent: no session \"p\" in the trace",
      isim::InputError);
  CHECK_NOTHROW(validate_forks(t, [](size_t) { return std::string("unused"); }));
}

TEST_CASE("drop_broken_forks: a fork whose parent was cut or now arrives later starts unforked") {
  auto forked = [](std::string id, double at, std::string parent) {
    Session s{std::move(id), at, {Segment{10, 1, std::nullopt}}};
    s.segments[0].event = ContextEvent{ContextEventKind::kFork, 4, 0, std::move(parent)};
    return s;
  };
  Trace t = {Session{"p", 1.0, {Segment{10, 1, std::nullopt}}},
             forked("kept", 1.0, "p"),       // the parent arrives at the same time: kept
             forked("early", 0.5, "p"),      // re-timed before its parent: dropped
             forked("orphan", 2.0, "gone")};  // its parent was cut: dropped
  CHECK(drop_broken_forks(t) == 2);
  CHECK(t[1].segments[0].event.kind == ContextEventKind::kFork);
  CHECK(t[2].segments[0].event.kind == ContextEventKind::kNone);
  CHECK(t[3].segments[0].event.kind == ContextEventKind::kNone);
  CHECK(t[3].segments[0].input == 10);  // nothing else changes
  validate_forks(t, [](size_t i) { return std::to_string(i); });  // now valid
  CHECK(drop_broken_forks(t) == 0);
}
