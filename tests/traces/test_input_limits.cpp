// Hostile input to every trace reader (issue 17): values nested 200,000 deep in an error
// message, token counts and times past the documented limits (traces/limits.h), and prompts or
// outputs the engine could not run.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <functional>
#include <string>

#include "core/input_error.h"
#include "core/json_shown.h"
#include "tests/cli_helpers.h"
#include "traces/dynamo_agentic.h"
#include "traces/infercept.h"
#include "traces/jsonl.h"
#include "traces/mooncake.h"
#include "traces/tracelab.h"
#include "traces/weka.h"

using namespace isim::trace;
using isim::shown;  // core/json_shown.h

namespace {

// `text` written to a scratch file named `name`, read by `read`; the InputError with the
// scratch path shown as `name` ("" when it reads).
std::string error_of(const std::string& name, const std::string& text,
                     const std::function<void(const std::string&)>& read) {
  const std::string path = isim::test::write_file(isim::test::scratch("input-limits") / name, text);
  try {
    read(path);
  } catch (const isim::InputError& e) {
    const std::string msg = e.what();
    return msg.rfind(path, 0) == 0 ? name + msg.substr(path.size()) : msg;
  }
  return "";
}

std::string jsonl(const std::string& text) {
  return error_of("t.jsonl", text, [](const std::string& p) { read_jsonl(p); });
}
std::string mooncake(const std::string& text) {
  return error_of("m.jsonl", text, [](const std::string& p) { import_mooncake(p); });
}
std::string tracelab(const std::string& text) {
  return error_of("r.jsonl", text, [](const std::string& p) { import_tracelab(p); });
}
std::string infercept(const std::string& text) {
  return error_of("i.json", text, [](const std::string& p) { import_infercept(p); });
}
std::string weka(const std::string& text) {
  return error_of("w.json", text, [](const std::string& p) { import_weka(p); });
}
std::string dynamo(const std::string& text) {
  return error_of("d.jsonl", text, [](const std::string& p) { import_dynamo_agentic(p); });
}

const std::string kDeep = std::string(200'000, '[') + std::string(200'000, ']');
// What shown() makes of kDeep: its type and its first 40 characters.
const std::string kDeepShown = "an array of 1 element: " + std::string(40, '[') + "...";

std::string session(const std::string& arrival, const std::string& segments) {
  return fmt::format(R"({{"id":"s","arrival_s":{},"segments":[{}]}})", arrival, segments) + "\n";
}

std::string mooncake_line(const std::string& ts, const std::string& in, const std::string& out) {
  return fmt::format(R"({{"timestamp":{},"input_length":{},"output_length":{},"hash_ids":[]}})",
                     ts, in, out) +
         "\n";
}

std::string tracelab_line(const std::string& session, const std::string& total,
                          const std::string& output, const std::string& time) {
  return fmt::format(
             R"({{"session_id":{},"round_index":0,"input_tokens_total":{},"prefix_tokens":0,)"
             R"("newly_append_tokens":{},"output_tokens":{},"timing_events":[{{"event_type":)"
             R"("user_message","timestamp":"{}"}}],"tools":[]}})",
             session, total, total, output, time) +
         "\n";
}

std::string weka_file(const std::string& t, const std::string& in) {
  return fmt::format(R"({{"block_size":4,"requests":[{{"t":{},"in":{},"out":1,"hash_ids":[],)"
                     R"("stop":"end_turn","input_types":["text"]}}]}})",
                     t, in);
}

}  // namespace

TEST_CASE("shown: a value by its text when short, else by its type and 40 characters") {
  using json = nlohmann::json;
  CHECK(shown(json(-3)) == "-3");
  CHECK(shown(json::parse(R"({"a":[1,2]})")) == R"({"a":[1,2]})");
  CHECK(shown(json(std::string(38, 'x'))) == '"' + std::string(38, 'x') + '"');  // 40 chars
  CHECK(shown(json(std::string(100, 'x'))) ==
        "a string of 100 bytes: \"" + std::string(39, 'x') + "...");
  CHECK(shown(json::parse(kDeep)) == kDeepShown);
  CHECK(shown(nlohmann::ordered_json::parse(R"({"b":1,"a":2})")) == R"({"b":1,"a":2})");
  // [1,1,...] of 30 elements is 61 characters: its first 40 hold "[" and 20 ones.
  std::string ones = "[1";
  for (int i = 1; i < 30; ++i) ones += ",1";
  CHECK(shown(json::parse(ones + "]")) == "an array of 30 elements: " + ones.substr(0, 40) + "...");
}

TEST_CASE("limits: a value nested 200,000 deep is described, not serialised") {
  CHECK(jsonl(kDeep + "\n") == "t.jsonl:1: <json>: expected an object, got " + kDeepShown);
  CHECK(jsonl(session("0", R"({"input":)" + kDeep + R"(,"output":1})")) ==
        "t.jsonl:1: segments[0].input: expected a non-negative integer, got " + kDeepShown);
  CHECK(mooncake(mooncake_line(kDeep, "1", "1")) ==
        "m.jsonl:1: timestamp: expected milliseconds, a finite number >= 0, got " + kDeepShown);
  CHECK(tracelab(tracelab_line(kDeep, "1", "1", "2026-01-02T03:04:05Z")) ==
        "r.jsonl:1: session_id: expected a non-empty string, got " + kDeepShown);
  // InferCept's reader (ordered_json) copies values recursively while it parses: it refuses
  // nesting deeper than 64, and shows what it rejects like every other reader.
  CHECK(infercept(R"({"a":[{"prompt_tokens":)" + kDeep + R"(,"completion_tokens":1}]})") ==
        "i.json: <json>: values nested more than 64 deep (the format nests 3: {session_id: "
        "[{field: value}]})");
  const std::string deep50 = std::string(50, '[') + std::string(50, ']');
  CHECK(infercept(R"({"a":[{"prompt_tokens":)" + deep50 + R"(,"completion_tokens":1}]})") ==
        "i.json: a: segments[0].prompt_tokens: expected a non-negative integer, got an array of "
        "1 element: " + std::string(40, '[') + "...");
  CHECK(infercept(R"({"a":{"x":)" + deep50 + "}}") ==
        "i.json: a: segments: expected a non-empty array of segments, got an object of 1 key: "
        "{\"x\":" + std::string(35, '[') + "...");
}

TEST_CASE("limits: token counts above 10^9 are rejected where they are read") {
  const std::string big = "9223372036854775807";  // 2^63 - 1: max_context overflowed
  const std::string over = "1000000001";
  const std::string limit = "expected at most 1000000000 tokens (the limit on a token count), got ";
  CHECK(jsonl(session("0", R"({"input":1000000000,"output":1000000000})")).empty());
  CHECK(jsonl(session("0", R"({"input":1,"output":)" + over + "}")) ==
        "t.jsonl:1: segments[0].output: " + limit + over);
  CHECK(jsonl(session("0", R"({"input":1,"output":1,"intercept":{"kind":"k","duration_s":1}},)"
                           R"({"input":)" + big + R"(,"output":1})")) ==
        "t.jsonl:1: segments[1].input: " + limit + big);
  // Mooncake's block count (input + 511) / 512 overflowed here.
  CHECK(mooncake(mooncake_line("0", big, "1")) == "m.jsonl:1: input_length: " + limit + big);
  CHECK(mooncake(mooncake_line("0", "1", over)) == "m.jsonl:1: output_length: " + limit + over);
  CHECK(tracelab(tracelab_line("\"s\"", big, "1", "2026-01-02T03:04:05Z")) ==
        "r.jsonl:1: input_tokens_total: " + limit + big);
  CHECK(tracelab(tracelab_line("\"s\"", "1", over, "2026-01-02T03:04:05Z")) ==
        "r.jsonl:1: output_tokens: " + limit + over);
  CHECK(infercept(R"({"a":[{"prompt_tokens":)" + over + R"(,"completion_tokens":1}]})") ==
        "i.json: a: segments[0].prompt_tokens: " + limit + over);
  CHECK(weka(weka_file("0", big)) == "w.json: requests[0].in: " + limit + big);
  CHECK(weka(R"({"block_size":)" + big + R"(,"requests":[]})") == "w.json: block_size: " + limit +
                                                                       big);
  CHECK(dynamo(R"({"request_id":"r","input_length":)" + big +
               R"(,"output_length":1,"hash_ids":[],"timestamp":0})" + "\n") ==
        "d.jsonl:1: input_length: " + limit + big);
}

TEST_CASE("limits: times past 4e9 s are rejected where they are read") {
  const std::string s_limit =
      "expected at most 4000000000 s (about 126 years, the limit on a time), got ";
  const std::string pause = R"({"input":1,"output":1,"intercept":{"kind":"k","duration_s":)";
  CHECK(jsonl(session("4e9", R"({"input":1,"output":1})")).empty());
  // Each of these was scheduled "in the past" (exit 3) once rounded to int64 nanoseconds.
  CHECK(jsonl(session("1e300", R"({"input":1,"output":1})")) ==
        "t.jsonl:1: arrival_s: " + s_limit + "1e+300");
  CHECK(jsonl(session("0", pause + R"(1e300}},{"input":1,"output":1})")) ==
        "t.jsonl:1: segments[0].intercept.duration_s: " + s_limit + "1e+300");
  // Within the limit one by one, past it together: 3e9 + 2e9 = 5e9 s.
  CHECK(jsonl(session("3e9", pause + R"(2e9}},{"input":1,"output":1})")) ==
        "t.jsonl:1: segments[0].intercept.duration_s: the session's arrival_s plus its "
        "intercepts reach 5000000000 s, past the limit of 4000000000 s (about 126 years)");
  CHECK(mooncake(mooncake_line("1e300", "1", "1")) ==
        "m.jsonl:1: timestamp: expected at most 4000000000000 ms (about 126 years, the limit on "
        "a time), got 1e+300");
  CHECK(infercept(R"({"a":[{"prompt_tokens":1,"completion_tokens":1,"api_time":1e300,)"
                  R"("api_token_length":1},{"prompt_tokens":3,"completion_tokens":1}]})") ==
        "i.json: a: segments[0].api_time: " + s_limit + "1e+300");
  CHECK(weka(weka_file("1e300", "1")) == "w.json: requests[0].t: " + s_limit + "1e+300");
  CHECK(dynamo(R"({"request_id":"r","input_length":1,"output_length":1,"hash_ids":[1],)"
               R"("timestamp":1e300})" "\n") ==
        "d.jsonl:1: timestamp: expected at most 4000000000000 ms (about 126 years, the limit on "
        "a time), got 1e+300");
}

TEST_CASE("limits: TraceLab timestamps stay in 1970-2200 and within 4e9 s of each other") {
  const std::string ok = tracelab_line("\"a\"", "1", "1", "2026-01-02T03:04:05Z");
  // Year 9999 overflowed secs * 1e9, and the error then blamed another line and field.
  CHECK(tracelab(ok + tracelab_line("\"b\"", "1", "1", "9999-01-02T03:04:05Z")) ==
        "r.jsonl:2: timing_events[0].timestamp: '9999-01-02T03:04:05Z': expected a year from "
        "1970 to 2200");
  CHECK(tracelab(tracelab_line("\"b\"", "1", "1", "1677-01-02T03:04:05Z")) ==
        "r.jsonl:1: timing_events[0].timestamp: '1677-01-02T03:04:05Z': expected a year from "
        "1970 to 2200");
  // 1970-01-01 to 2200-01-01 is 84006 days: 7258118400 s.
  CHECK(tracelab(tracelab_line("\"a\"", "1", "1", "1970-01-01T00:00:00Z") +
                 tracelab_line("\"b\"", "1", "1", "2200-01-01T00:00:00Z")) ==
        "r.jsonl:2: timing_events[0].timestamp: 7258118400 s after the trace's first event "
        "(line 1); expected at most 4000000000 s (about 126 years, the limit on a time)");
  CHECK(parse_iso8601_ns("2200-12-31T23:59:59Z", "w") == (84371LL * 86400 - 1) * 1'000'000'000);
}

TEST_CASE("limits: a prompt of 0 tokens and an output of 0 tokens are rejected at read") {
  // The engine never admits a session with nothing to prefill ("no progress possible at t=0").
  CHECK(jsonl(session("0", R"({"input":0,"output":1})")) ==
        "t.jsonl:1: segments[0].input: must be >= 1 (the prompt; a session with nothing to "
        "prefill never starts), got 0");
  CHECK(jsonl(session("0", R"({"input":1,"output":0})")) ==
        "t.jsonl:1: segments[0].output: must be >= 1 (every segment decodes at least one "
        "token), got 0");
  CHECK(tracelab(tracelab_line("\"s\"", "0", "1", "2026-01-02T03:04:05Z")) ==
        "r.jsonl:1: input_tokens_total: must be >= 1 in a session's first round (the prompt; a "
        "session with nothing to prefill never starts), got 0");
  CHECK(infercept(R"({"a":[{"prompt_tokens":0,"completion_tokens":1}]})") ==
        "i.json: a: segments[0].prompt_tokens: must be >= 1 (the prompt; a session with nothing "
        "to prefill never starts), got 0");
  CHECK(infercept(R"({"a":[{"prompt_tokens":1,"completion_tokens":0}]})") ==
        "i.json: a: segments[0].completion_tokens: must be >= 1 (every segment decodes at least "
        "one token), got 0");
  // Text sessions count words: an empty completion is 0 tokens.
  CHECK(infercept(R"({"a":[{"prompt":"hi there","completion":" "}]})") ==
        "i.json: a: segments[0].completion: must be >= 1 (every segment decodes at least one "
        "token), got 0");
}

TEST_CASE("trace files: a directory or a file without sessions is an error naming it") {
  const auto dir = isim::test::scratch("input-limits-dir");
  const std::string d = dir.string();
  CHECK_THROWS_WITH_AS(read_jsonl(d),
                       (d + ": is a directory; expected a regular file (a trace file)").c_str(),
                       isim::InputError);
  CHECK_THROWS_WITH_AS(import_mooncake(d),
                       (d + ": is a directory; expected a regular file (a trace file)").c_str(),
                       isim::InputError);
  CHECK_THROWS_WITH_AS(
      import_infercept(d),
      (d + ": is a directory; expected a regular file (an InferCept trace)").c_str(),
      isim::InputError);
  const std::string none = "no sessions (the file is empty or holds only blank lines)";
  CHECK(jsonl("") == "t.jsonl: " + none);
  CHECK(jsonl("\n  \n") == "t.jsonl: " + none);
  CHECK(mooncake("") == "m.jsonl: " + none);
  CHECK(tracelab("") == "r.jsonl: " + none);
  CHECK(infercept("{}") == "i.json: no sessions (the file's object is empty)");
  CHECK(dynamo("") == "d.jsonl: no requests");
}
