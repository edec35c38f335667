#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <initializer_list>
#include <numeric>
#include <sstream>
#include <utility>

#include "core/input_error.h"
#include "tests/test_paths.h"
#include "traces/jsonl.h"
#include "traces/tracelab.h"

using namespace isim::trace;

namespace {

// A minimal round line; `events` and `tools` are JSON arrays.
std::string round_line(const std::string& session, int index, int prefix, int appended, int output,
                       const std::string& events, const std::string& tools) {
  return fmt::format(
      R"({{"session_id":"{}","round_index":{},"input_tokens_total":{},"prefix_tokens":{},)"
      R"("newly_append_tokens":{},"output_tokens":{},"timing_events":{},"tools":{}}})"
      "\n",
      session, index, prefix + appended, prefix, appended, output, events, tools);
}

// A JSON array of events {type, seconds past 2026-01-02T03:04}.
std::string events(std::initializer_list<std::pair<const char*, const char*>> list) {
  std::string out = "[";
  for (const auto& [type, time] : list) {
    if (out.size() > 1) out += ',';
    out += fmt::format(R"({{"event_type":"{}","timestamp":"2026-01-02T03:04:{}Z"}})", type, time);
  }
  out += ']';
  return out;
}

std::string error_of(const std::string& text) {
  std::istringstream in(text);
  try {
    parse_tracelab(in, "r.jsonl");
  } catch (const isim::InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("tracelab: ISO 8601 times") {
  CHECK(parse_iso8601_ns("1970-01-01T00:00:00Z", "w") == 0);
  CHECK(parse_iso8601_ns("1970-01-02T00:00:01.5Z", "w") == 86401'500'000'000);
  // 2026-06-01 is day 20605 after 1970-01-01.
  CHECK(parse_iso8601_ns("2026-06-01T05:40:20.151Z", "w") ==
        (20605LL * 86400 + 5 * 3600 + 40 * 60 + 20) * 1'000'000'000 + 151'000'000);
  CHECK(parse_iso8601_ns("2026-06-01T07:40:20.151+02:00", "w") ==
        parse_iso8601_ns("2026-06-01T05:40:20.151Z", "w"));
  CHECK(parse_iso8601_ns("2000-02-29T00:00:00.000000001Z", "w") == 951782400'000'000'001);
  CHECK_THROWS_WITH_AS(parse_iso8601_ns("2026-06-01 05:40:20Z", "w"),
                       "w: '2026-06-01 05:40:20Z': expected 'T' at position 10 "
                       "(YYYY-MM-DDTHH:MM:SS[.f]Z)",
                       isim::InputError);
  CHECK_THROWS_WITH_AS(parse_iso8601_ns("2026-02-30T00:00:00Z", "w"),
                       "w: '2026-02-30T00:00:00Z': not a valid date and time", isim::InputError);
  CHECK_THROWS_WITH_AS(parse_iso8601_ns("2026-06-01T05:40:20", "w"),
                       "w: '2026-06-01T05:40:20': expected 'Z' at position 19 "
                       "(YYYY-MM-DDTHH:MM:SS[.f]Z)",
                       isim::InputError);
  CHECK_THROWS_AS(parse_iso8601_ns("2026-06-01T05:40:20.Z", "w"), isim::InputError);
  CHECK_THROWS_AS(parse_iso8601_ns("2026-06-01T05:40:20Zx", "w"), isim::InputError);
}

// Rounds 0-5 of the Claude session in round_trace.jsonl, unchanged. Expected values by hand from
// the file: growth = input_tokens_total[k] - input_tokens_total[k-1] - output_tokens[k-1], e.g.
// 35740 - 32272 - 931 = 2537; waits from the last event of round k to the last input event of
// round k+1, e.g. 05:40:31.647 -> 05:40:50.938 = 19.291 s (the WebSearch result).
TEST_CASE("tracelab: the excerpt converts to exact segments and intercepts") {
  TraceLabReport r;
  const std::string path = isim::test::data_dir() + "/tracelab-excerpt.jsonl";
  const Trace t = import_tracelab(path, &r);
  REQUIRE(t.size() == 1);
  const Session& s = t[0];
  CHECK(s.id == "claude:92ee5b8a-429c-e80b-5db6-5381512f4697");
  CHECK(s.arrival_s == 0);
  CHECK(s.segments == std::vector<Segment>{
                          {32272, 931, Intercept{"bash+websearch", 19.291}},
                          {2537, 1016, Intercept{"websearch", 12.688}},
                          {1836, 2475, Intercept{"write", 21.467}},
                          {64, 117, Intercept{"bash", 0.145}},
                          {341, 1275, Intercept{"user", 19.913}},
                          {12, 273, {}},
                      });
  // The simulated context before round 5 is the real input_tokens_total of round 5.
  CHECK(s.max_context() - 273 == 42876);
  CHECK(r.sessions == 1);
  CHECK(r.rounds == 6);
  CHECK(r.intercepts == 5);
  CHECK(r.intercepts_by_kind ==
        std::map<std::string, int64_t>{
            {"bash", 1}, {"bash+websearch", 1}, {"user", 1}, {"websearch", 1}, {"write", 1}});
  CHECK(r.intercept_s_by_kind.at("user") == 19.913);
  CHECK(r.growth_tokens == 2537 + 1836 + 64 + 341 + 12);
  CHECK(r.appended_tokens == 6360 + 2854 + 2541 + 460 + 1289);
  CHECK(r.inputs_raised == 0);
  CHECK(r.zero_outputs_raised == 0);
  CHECK(r.negative_waits_clamped == 0);
  CHECK(r.prefix_discrepancy == std::vector<int64_t>{-3823, -1018, -2477, -119, -1277});

  const Trace appended = import_tracelab(path, nullptr, TraceLabInput::appended);
  std::vector<int64_t> inputs;
  for (const Segment& seg : appended[0].segments) inputs.push_back(seg.input);
  CHECK(inputs == std::vector<int64_t>{32272, 6360, 2854, 2541, 460, 1289});

  std::ostringstream os;
  write_jsonl(os, t);
  std::istringstream in(os.str());
  CHECK(parse_jsonl(in, "rt") == t);
}

TEST_CASE("tracelab: sessions, shrinking context, zero outputs and clock skew") {
  const std::string text =
      round_line("a", 0, 0, 100, 0, events({{"user_message", "00.000"}, {"tool_call", "01.000"}}),
                 R"([{"tool_name":"Read"},{"tool_name":"Bash"},{"tool_name":"Read"}])") +
      round_line("a", 1, 90, 40, 5,
                 events({{"tool_result", "00.500"}, {"tool_result", "00.900"}, {"text", "03.000"}}),
                 "[]") +
      round_line("b", 0, 0, 10, 2, events({{"user_message", "10.000"}}), "[]") +
      round_line(
          "b", 1, 10, 1, 3,
          events({{"tool_result", "11.000"}, {"user_message", "12.250"}, {"text", "13.000"}}),
          "[]");
  std::istringstream in(text);
  TraceLabReport r;
  const Trace t = parse_tracelab(in, "r.jsonl", &r);
  REQUIRE(t.size() == 2);
  // a: growth 130 - 100 - 0 (the real output, before raising it to 1) = 30; wait 00.900 - 01.000
  // < 0 -> 0.
  CHECK(t[0].id == "a");
  CHECK(t[0].arrival_s == 0);
  CHECK(t[0].segments == std::vector<Segment>{{100, 1, Intercept{"read+bash", 0.0}}, {30, 5, {}}});
  // b: growth 11 - 10 - 2 = -1 -> 1; the resume run holds a user message -> user, 12.25 - 10.
  CHECK(t[1].arrival_s == 10);
  CHECK(t[1].segments == std::vector<Segment>{{10, 2, Intercept{"user", 2.25}}, {1, 3, {}}});
  CHECK(r.zero_outputs_raised == 1);
  CHECK(r.negative_waits_clamped == 1);
  CHECK(r.inputs_raised == 1);
  CHECK(r.growth_tokens == 30 - 1);
  CHECK(r.prefix_discrepancy == std::vector<int64_t>{90 - 100, 10 - 12});
}

TEST_CASE("tracelab: bad input names file, line and field") {
  const std::string r0 = round_line("a", 0, 0, 10, 1, events({{"user_message", "00.000"}}),
                                    R"([{"tool_name":"Bash"}])");
  const std::string r1 = round_line("a", 1, 10, 1, 1, events({{"tool_result", "01.000"}}), "[]");
  CHECK(error_of(r0 + r1).empty());
  struct Case {
    std::string text;
    std::string expected;
  };
  const Case cases[] = {
      {"[]", "r.jsonl:1: <json>: expected an object, got []"},
      {R"({"round_index":0})", "r.jsonl:1: session_id: missing"},
      {round_line("a", 0, 0, 10, 1, "[]", "[]"),
       "r.jsonl:1: timing_events: expected a non-empty array of events, got []"},
      {round_line("a", 0, 0, 10, 1, R"([{"event_type":"text","timestamp":"yesterday"}])", "[]"),
       "r.jsonl:1: timing_events[0].timestamp: 'yesterday': expected a digit at position 0"},
      {round_line("a", 0, 0, 10, 1, R"([{"timestamp":"2026-01-01T00:00:00Z"}])", "[]"),
       "r.jsonl:1: timing_events[0].event_type: missing"},
      {round_line("a", 0, 0, 10, 1, events({{"text", "00.000"}}), R"([{"tool_name":""}])"),
       "r.jsonl:1: tools[0].tool_name: expected a non-empty string, got \"\""},
      {R"({"session_id":"a","round_index":0,"input_tokens_total":5,"prefix_tokens":1,)"
       R"("newly_append_tokens":2,"output_tokens":1,"timing_events":[],"tools":[]})",
       "r.jsonl:1: input_tokens_total: 5 is not prefix_tokens + newly_append_tokens = 1 + 2"},
      {R"({"session_id":"a","round_index":0,"input_tokens_total":3,"prefix_tokens":1,)"
       R"("newly_append_tokens":2,"output_tokens":-1,"timing_events":[],"tools":[]})",
       "r.jsonl:1: output_tokens: expected a non-negative integer, got -1"},
      {r1, "r.jsonl:1: round_index: a session's first row must be round 0, got 1"},
      {r0 + r0, "r.jsonl:2: round_index: expected 1 (rounds in order), got 0"},
      {r0 + round_line("b", 0, 0, 1, 1, events({{"text", "00.000"}}), "[]") + r1,
       "r.jsonl:3: session_id: rows of session 'a' are not contiguous (it started on line 1)"},
      {r0 + round_line("a", 1, 10, 1, 1, events({{"text", "01.000"}}), "[]"),
       "r.jsonl:2: timing_events[0].event_type: 'text': a round after the first must start with "
       "its inputs (user_message or tool_result)"},
      {round_line("a", 0, 0, 10, 1, events({{"user_message", "00.000"}}), "[]") + r1,
       "r.jsonl:2: timing_events[0].event_type: tool_result, but round 0 (line 1) called no "
       "tool"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.text);
    CHECK(error_of(c.text) == c.expected);
  }
  CHECK_THROWS_WITH_AS(import_tracelab("/nonexistent-dir/r.jsonl"),
                       "/nonexistent-dir/r.jsonl: cannot open: No such file or directory",
                       isim::InputError);
}

TEST_CASE("tracelab: the full round trace" *
          doctest::skip(isim::test::absent(!std::filesystem::exists(isim::test::shared_data() +
                                                 "/tracelab/round_trace.jsonl")))) {
  const std::string path = isim::test::shared_data() + "/tracelab/round_trace.jsonl";
  TraceLabReport r;
  const Trace t = import_tracelab(path, &r);
  // The file holds two sessions: Claude (10 rounds) and Codex (9 rounds).
  REQUIRE(t.size() == 2);
  CHECK(r.rounds == 19);
  CHECK(t[0].segments.size() == 10);
  CHECK(t[1].segments.size() == 9);
  CHECK(r.intercepts == 17);
  int64_t total_input = 0, total_output = 0;
  for (const Session& s : t) {
    total_input += s.segments[0].input + s.returned_tokens();
    total_output += s.total_output();
  }
  std::string kinds;
  for (const auto& [kind, n] : r.intercepts_by_kind)
    kinds += fmt::format(" {} x{} {:.3f}s;", kind, n, r.intercept_s_by_kind.at(kind));
  const auto& d = r.prefix_discrepancy;
  const double mean_d =
      static_cast<double>(std::accumulate(d.begin(), d.end(), int64_t{0})) / double(d.size());
  MESSAGE("tracelab: " << t.size() << " sessions, " << r.rounds << " rounds, input " << total_input
                       << " tokens (growth " << r.growth_tokens << " vs appended "
                       << r.appended_tokens << " after round 0), output " << total_output
                       << ", intercept wait " << t[0].total_intercept_s() + t[1].total_intercept_s()
                       << " s; kinds:" << kinds << " prefix discrepancy mean " << mean_d << " min "
                       << *std::min_element(d.begin(), d.end()) << " max "
                       << *std::max_element(d.begin(), d.end()) << "; inputs raised "
                       << r.inputs_raised);
  // The Codex session's context shrinks twice (earlier reasoning dropped at a new user turn).
  CHECK(r.inputs_raised == 2);
  CHECK(r.negative_waits_clamped == 0);
  CHECK(r.intercepts_by_kind.at("user") == 3);
  // Arrivals keep the real offsets: the Codex session (2026-03-21T10:05:59.328Z) came first, the
  // Claude one (2026-06-01T05:40:20.151Z) 71 days, 19:34:20.823 later.
  CHECK(t[1].arrival_s == 0);
  CHECK(t[0].arrival_s == 71 * 86400 + 19 * 3600 + 34 * 60 + 20.823);
  // The simulated context reaches each round's real input_tokens_total where nothing was raised:
  // the Claude session's last round starts at 48305 tokens.
  CHECK(t[0].max_context() - t[0].segments.back().output == 48305);
  CHECK(d.size() == 17);
  CHECK(std::all_of(d.begin(), d.end(), [](int64_t x) { return x <= 0; }));
}
