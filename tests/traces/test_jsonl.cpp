#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <sstream>

#include "core/input_error.h"
#include "tests/traces/trace_helpers.h"
#include "traces/jsonl.h"

using namespace isim::trace;

namespace {

const char* kExample =
    R"({"id":"s1","arrival_s":0.31,"segments":[{"input":392,"output":127,"intercept":)"
    R"({"kind":"math","duration_s":8.6e-05}},{"input":21,"output":47}]})"
    "\n";

Trace parse(const std::string& text) { return isim::test::parse_jsonl_text(text); }
std::string error_of(const std::string& text) { return isim::test::jsonl_error(text); }

// One session line with `segments` spliced in.
std::string line(const std::string& segments) {
  return R"({"id":"s","arrival_s":1,"segments":)" + segments + "}\n";
}

}  // namespace

TEST_CASE("jsonl: the design example parses to exact values") {
  const Trace t = parse(kExample);
  REQUIRE(t.size() == 1);
  const Session& s = t[0];
  CHECK(s.id == "s1");
  CHECK(s.arrival_s == 0.31);
  REQUIRE(s.segments.size() == 2);
  CHECK(s.segments[0] == Segment{392, 127, Intercept{"math", 8.6e-5}});
  CHECK(s.segments[1] == Segment{21, 47, std::nullopt});
  CHECK(s.max_context() == 587);
}

TEST_CASE("jsonl: writer gives the documented bytes and round-trips exactly") {
  std::ostringstream os;
  write_jsonl(os, parse(kExample));
  CHECK(os.str() == kExample);

  Trace t = {
      // Prompts and outputs >= 1 and times within 4e9 s: what the reader accepts.
      Session{"a \"quoted\" \\ id\n", 0.1 + 0.2, {{1, 1, Intercept{"tool/x", 5e-324}}, {0, 1, {}}}},
      Session{"b", 1e-300, {{7, 8, {}}}},
      Session{"c", 123456.789012345678, {{1, 1, Intercept{"ü", 3.9e9}}, {2, 2, {}}}},
  };
  std::ostringstream out;
  write_jsonl(out, t);
  CHECK(parse(out.str()) == t);
  std::ostringstream again;
  write_jsonl(again, parse(out.str()));
  CHECK(again.str() == out.str());  // deterministic bytes
}

TEST_CASE("jsonl: file round trip and unreadable file") {
  const auto path = std::filesystem::temp_directory_path() / "isim_test_jsonl_roundtrip.jsonl";
  const Trace t = parse(kExample);
  write_jsonl_file(path.string(), t);
  CHECK(read_jsonl(path.string()) == t);
  std::filesystem::remove(path);

  CHECK_THROWS_WITH_AS(read_jsonl("/nonexistent-dir/x.jsonl"),
                       "/nonexistent-dir/x.jsonl: cannot open: No such file or directory",
                       isim::InputError);
  CHECK_THROWS_AS(write_jsonl_file("/nonexistent-dir/x.jsonl", t), isim::InputError);
}

TEST_CASE("jsonl: blank lines are skipped but counted") {
  const std::string text = "\n   \n" + line(R"([{"input":1,"output":2}])") + "\r\n" +
                           R"({"id":"t","arrival_s":2,"segments":[{"input":-1,"output":2}]})";
  CHECK(error_of(text).starts_with("t.jsonl:5: segments[0].input:"));
  // Built by append: GCC 12 gives a false -Wrestrict on `"literal" + std::string` (bug 105651).
  std::string text2 = "\n";
  text2 += line(R"([{"input":1,"output":2}])");
  const Trace t = parse(text2);
  REQUIRE(t.size() == 1);
  CHECK(t[0].segments[0] == Segment{1, 2, {}});
}

TEST_CASE("jsonl: every schema error names file, line and field") {
  struct Case {
    std::string text;
    std::string prefix;
  };
  const std::string ok = line(R"([{"input":1,"output":2}])");
  const Case cases[] = {
      {"{\"id\":", "t.jsonl:1: <json>: [json.exception.parse_error"},
      {"[1,2]", "t.jsonl:1: <json>: expected an object, got [1,2]"},
      {R"({"arrival_s":0,"segments":[{"input":1,"output":2}]})", "t.jsonl:1: id: missing"},
      {R"({"id":"s","segments":[{"input":1,"output":2}]})", "t.jsonl:1: arrival_s: missing"},
      {R"({"id":"s","arrival_s":0})", "t.jsonl:1: segments: missing"},
      {line(R"([{"input":1}])"), "t.jsonl:1: segments[0].output: missing"},
      {line(R"([{"output":1}])"), "t.jsonl:1: segments[0].input: missing"},
      {R"({"id":5,"arrival_s":0,"segments":[{"input":1,"output":2}]})",
       "t.jsonl:1: id: expected a non-empty string, got 5"},
      {R"({"id":"s","arrival_s":"0","segments":[{"input":1,"output":2}]})",
       "t.jsonl:1: arrival_s: expected a number of seconds >= 0, got \"0\""},
      {line("{}"), "t.jsonl:1: segments: expected a non-empty array of segments, got {}"},
      {line("[5]"), "t.jsonl:1: segments[0]: expected an object, got 5"},
      {line(R"([{"input":1,"output":2,"intercept":5},{"input":1,"output":1}])"),
       "t.jsonl:1: segments[0].intercept: expected an object {kind, duration_s}, got 5"},
      {line(
           R"([{"input":1,"output":2,"intercept":{"kind":3,"duration_s":1}},{"input":1,"output":1}])"),
       "t.jsonl:1: segments[0].intercept.kind: expected a non-empty string, got 3"},
      {line(R"([{"input":1,"output":2,"intercept":{"kind":"k"}},{"input":1,"output":1}])"),
       "t.jsonl:1: segments[0].intercept.duration_s: missing"},
      {line(
           R"([{"input":1,"output":2,"intercept":{"kind":"k","duration_s":null}},{"input":1,"output":1}])"),
       "t.jsonl:1: segments[0].intercept.duration_s: expected a number of seconds >= 0, got null"},
      {line(R"([{"input":-1,"output":2}])"),
       "t.jsonl:1: segments[0].input: expected a non-negative integer, got -1"},
      {line(R"([{"input":1,"output":2.5}])"),
       "t.jsonl:1: segments[0].output: expected a non-negative integer, got 2.5"},
      {line(R"([{"input":1,"output":3.0}])"),
       "t.jsonl:1: segments[0].output: expected a non-negative integer, got 3.0"},
      {line(R"([{"input":"1","output":3}])"),
       "t.jsonl:1: segments[0].input: expected a non-negative integer, got \"1\""},
      {line(R"([{"input":9223372036854775808,"output":3}])"),
       "t.jsonl:1: segments[0].input: expected at most 1000000000 tokens (the limit on a token "
       "count), got 9223372036854775808"},
      {R"({"id":"s","arrival_s":-0.5,"segments":[{"input":1,"output":2}]})",
       "t.jsonl:1: arrival_s: must be finite and >= 0, got -0.5"},
      {R"({"id":"s","arrival_s":1e400,"segments":[{"input":1,"output":2}]})",
       "t.jsonl:1: <json>: [json.exception.out_of_range.406]"},
      {line(
           R"([{"input":1,"output":2,"intercept":{"kind":"k","duration_s":-2}},{"input":1,"output":1}])"),
       "t.jsonl:1: segments[0].intercept.duration_s: must be finite and >= 0, got -2"},
      {line("[]"), "t.jsonl:1: segments: must have at least one segment"},
      {R"({"id":"","arrival_s":0,"segments":[{"input":1,"output":2}]})",
       "t.jsonl:1: id: must be a non-empty string"},
      {ok + ok, "t.jsonl:2: id: duplicate id 's' (first on line 1)"},
      {ok + "\n" + R"({"id":"t","arrival_s":0,"segments":[{"input":1,"output":2}]})" + "\n" + ok,
       "t.jsonl:4: id: duplicate id 's' (first on line 1)"},
      {line(
           R"([{"input":1,"output":2,"intercept":{"kind":"","duration_s":1}},{"input":1,"output":1}])"),
       "t.jsonl:1: segments[0].intercept.kind: must be a non-empty string"},
      {line(
           R"([{"input":1,"output":2},{"input":1,"output":1,"intercept":{"kind":"k","duration_s":1}}])"),
       "t.jsonl:1: segments[1].intercept: the last segment cannot pause"},
      {R"({"id":"s","arrival_s":0,"segments":[{"input":1,"output":2}],"priority":1})",
       "t.jsonl:1: priority: unknown field; valid: id, arrival_s, segments, prefix"},
      {line(R"([{"input":1,"output":2,"tokens":3}])"),
       "t.jsonl:1: segments[0].tokens: unknown field; valid: input, output, intercept, "
       "context_event, retention"},
      {line(
           R"([{"input":1,"output":2,"intercept":{"kind":"k","duration_s":1,"p":0}},{"input":1,"output":1}])"),
       "t.jsonl:1: segments[0].intercept.p: unknown field; valid: kind, duration_s"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.text);
    const std::string msg = error_of(c.text);
    CAPTURE(msg);
    CHECK(msg.starts_with(c.prefix));
  }
}

TEST_CASE("jsonl: validate_session and the writer reject what the reader would") {
  Session s{"x", std::numeric_limits<double>::infinity(), {{1, 1, {}}}};
  CHECK_THROWS_WITH_AS(validate_session(s, "here"),
                       "here: arrival_s: must be finite and >= 0, got inf", isim::InputError);
  s.arrival_s = 0;
  s.segments[0].output = -4;
  CHECK_THROWS_WITH_AS(validate_session(s, "here"),
                       "here: segments[0].output: must be >= 0, got -4", isim::InputError);
  s.segments[0].output = 1;
  auto& segs = s.segments.mut();  // a SharedList (traces/shared_list.h): written through mut()
  segs.insert(segs.begin(), Segment{1, 1, Intercept{"k", std::nan("")}});
  CHECK_THROWS_WITH_AS(validate_session(s, "here"),
                       "here: segments[0].intercept.duration_s: must be finite and >= 0, got nan",
                       isim::InputError);
  std::ostringstream os;
  CHECK_THROWS_WITH_AS(write_jsonl(os, Trace{s}),
                       "write_jsonl: session 0: segments[0].intercept.duration_s: must be finite "
                       "and >= 0, got nan",
                       isim::InputError);
}

TEST_CASE("jsonl: prefix hashes are written last, only when set, and round-trip") {
  Session s{"p", 2.5, {{1025, 3, {}}}};
  s.prefix = PrefixHashes{512, {0, 18446744073709551615ULL, 7}};  // ceil(1025 / 512) = 3 blocks
  Session none{"q", 0, {{5, 1, {}}}};
  Session empty_hashes{"r", 0, {{5, 1, {}}}};
  empty_hashes.prefix.block_tokens = 16;
  const Trace t = {s, none, empty_hashes};
  std::ostringstream os;
  write_jsonl(os, t);
  CHECK(os.str() == R"({"id":"p","arrival_s":2.5,"segments":[{"input":1025,"output":3}],)"
                    R"("prefix":{"block_tokens":512,"hashes":[0,18446744073709551615,7]}})"
                    "\n"
                    R"({"id":"q","arrival_s":0,"segments":[{"input":5,"output":1}]})"
                    "\n"
                    R"({"id":"r","arrival_s":0,"segments":[{"input":5,"output":1}],)"
                    R"("prefix":{"block_tokens":16,"hashes":[]}})"
                    "\n");
  CHECK(parse(os.str()) == t);
  // Without prefixes the bytes are those of the design example, unchanged.
  std::ostringstream plain;
  write_jsonl(plain, parse(kExample));
  CHECK(plain.str() == kExample);
}

TEST_CASE("jsonl: prefix errors name the field") {
  auto with_prefix = [](const std::string& prefix) {
    return R"({"id":"s","arrival_s":0,"segments":[{"input":1500,"output":1}],"prefix":)" + prefix +
           "}\n";
  };
  struct Case {
    std::string text;
    std::string expected;
  };
  const Case cases[] = {
      {with_prefix("[1]"), "t.jsonl:1: prefix: expected an object {block_tokens, hashes}, got [1]"},
      {with_prefix(R"({"hashes":[1]})"),
       "t.jsonl:1: prefix.block_tokens: missing; expected a non-negative integer"},
      {with_prefix(R"({"block_tokens":0,"hashes":[]})"),
       "t.jsonl:1: prefix.block_tokens: must be > 0, got 0"},
      {with_prefix(R"({"block_tokens":-512,"hashes":[]})"),
       "t.jsonl:1: prefix.block_tokens: expected a non-negative integer, got -512"},
      {with_prefix(R"({"block_tokens":512})"),
       "t.jsonl:1: prefix.hashes: missing; expected an array of non-negative integers"},
      {with_prefix(R"({"block_tokens":512,"hashes":5})"),
       "t.jsonl:1: prefix.hashes: expected an array of non-negative integers, got 5"},
      {with_prefix(R"({"block_tokens":512,"hashes":[1,2,-3]})"),
       "t.jsonl:1: prefix.hashes[2]: expected a non-negative integer below 2^64, got -3"},
      {with_prefix(R"({"block_tokens":512,"hashes":[1,2.5]})"),
       "t.jsonl:1: prefix.hashes[1]: expected a non-negative integer below 2^64, got 2.5"},
      {with_prefix(R"({"block_tokens":512,"hashes":[18446744073709551616]})"),
       "t.jsonl:1: prefix.hashes[0]: expected a non-negative integer below 2^64, got "
       "1.8446744073709552e+19"},
      {with_prefix(R"({"block_tokens":512,"hashes":["a"]})"),
       "t.jsonl:1: prefix.hashes[0]: expected a non-negative integer below 2^64, got \"a\""},
      // 1500 tokens are ceil(1500 / 512) = 3 blocks: a fourth hash is one too many.
      {with_prefix(R"({"block_tokens":512,"hashes":[1,2,3,4]})"),
       "t.jsonl:1: prefix.hashes[3]: more hashes (4) than the prompt has blocks: ceil(1500 / 512) "
       "= 3"},
      {with_prefix(R"({"block_tokens":512,"hashes":[],"salt":1})"),
       "t.jsonl:1: prefix.salt: unknown field; valid: block_tokens, hashes"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.text);
    CHECK(error_of(c.text) == c.expected);
  }
  CHECK(error_of(with_prefix(R"({"block_tokens":512,"hashes":[1,2,3]})")).empty());

  Session s{"x", 0, {{10, 1, {}}}};
  s.prefix.hashes = {4};
  CHECK_THROWS_WITH_AS(validate_session(s, "here"),
                       "here: prefix.block_tokens: must be > 0 when there are hashes",
                       isim::InputError);
  s.prefix.block_tokens = 8;
  s.prefix.hashes = {4, 5, 6};
  CHECK_THROWS_WITH_AS(
      validate_session(s, "here"),
      "here: prefix.hashes[2]: more hashes (3) than the prompt has blocks: ceil(10 / 8) = 2",
      isim::InputError);
}
