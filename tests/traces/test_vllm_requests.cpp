// The importer of a real vLLM run's requests.jsonl (traces/vllm_requests.h): the excerpt's
// values, arrivals relative to the first queued_ts, and every error path.
#include <doctest/doctest.h>

#include <sstream>

#include "core/input_error.h"
#include "tests/test_paths.h"
#include "traces/vllm_requests.h"

using namespace isim::trace;

namespace {

std::string error_of(const std::string& text) {
  std::istringstream in(text);
  try {
    parse_vllm_requests(in, "r.jsonl");
  } catch (const isim::InputError& e) {
    return e.what();
  }
  return "";
}

// One request line with `fields` replacing (or removing, with "") the defaults.
std::string req(const std::string& extra, const std::string& id = "a", double q = 10, double s = 10,
                double f = 11, double l = 12) {
  std::ostringstream os;
  os << R"({"request_id": ")" << id << R"(", "input_toks": 5, "output_toks": 3, )"
     << R"("queued_ts": )" << q << R"(, "scheduled_ts": )" << s << R"(, "first_token_ts": )" << f
     << R"(, "last_token_ts": )" << l << extra << "}";
  return os.str();
}

}  // namespace

// The first three lines of the RTX 4090 run's requests.jsonl, unchanged.
TEST_CASE("vllm-requests: the excerpt converts to exact requests and sessions") {
  const auto r = read_vllm_requests(isim::test::data_dir() + "/vllm-requests-excerpt.jsonl");
  REQUIRE(r.size() == 3);
  CHECK(r[0].id == "bench-0");
  CHECK(r[0].line == 1);
  CHECK(r[0].input == 2358);
  CHECK(r[0].output == 531);
  CHECK(r[0].queued_s == 27536.660701067);
  CHECK(r[0].scheduled_s == 27536.660721646);
  CHECK(r[0].first_token_s == 27537.350135653);
  CHECK(r[0].last_token_s == 27554.231018618);
  CHECK(r[2].id == "bench-2");
  const Trace t = vllm_requests_to_trace(r);
  REQUIRE(t.size() == 3);
  CHECK(t[0].arrival_s == 0);
  CHECK(t[1].arrival_s == doctest::Approx(27537.047603549 - 27536.660701067).epsilon(1e-12));
  CHECK(t[2].arrival_s == doctest::Approx(27537.221809715 - 27536.660701067).epsilon(1e-12));
  CHECK(t[1].segments == std::vector<Segment>{{1034, 769, {}}});
  CHECK(t[2].prefix.empty());
}

TEST_CASE("vllm-requests: arrivals count from the earliest queued_ts, in file order") {
  const std::string text = req("", "late", 7.5, 8, 9, 9) + "\n\n" + req("", "early", 2, 2, 3, 4);
  std::istringstream in(text);
  const auto r = parse_vllm_requests(in, "r.jsonl");
  REQUIRE(r.size() == 2);
  CHECK(r[1].line == 3);
  const Trace t = vllm_requests_to_trace(r);
  CHECK(t[0].id == "late");
  CHECK(t[0].arrival_s == 5.5);
  CHECK(t[1].arrival_s == 0);
}

TEST_CASE("vllm-requests: bad lines name file, line and field") {
  CHECK(error_of(req("")).empty());
  CHECK(error_of(req(R"(, "arrival_time": 1787267980.08)")).empty());
  struct Case {
    std::string text, expected;
  };
  const Case cases[] = {
      {"", "r.jsonl: no requests (expected one JSON object a line)"},
      {"{", "r.jsonl:1: <json>: [json.exception.parse_error"},
      {"3", "r.jsonl:1: <json>: expected an object, got 3"},
      {R"({"input_toks": 5})", "r.jsonl:1: request_id: missing"},
      {R"({"request_id": "", "input_toks": 5})",
       "r.jsonl:1: request_id: expected a non-empty string, got \"\""},
      {R"({"request_id": 4, "input_toks": 5})",
       "r.jsonl:1: request_id: expected a non-empty string, got 4"},
      {R"({"request_id": "a", "input_toks": 0})",
       "r.jsonl:1: input_toks: expected an integer >= 1, got 0"},
      {R"({"request_id": "a", "input_toks": 5, "output_toks": 0})",
       "r.jsonl:1: output_toks: expected an integer >= 1, got 0"},
      {R"({"request_id": "a", "input_toks": 5, "output_toks": 1})",
       "r.jsonl:1: queued_ts: missing"},
      {R"({"request_id": "a", "input_toks": 5, "output_toks": 1, "arrival_time": "x"})",
       "r.jsonl:1: arrival_time: expected a number (wall-clock epoch), got \"x\""},
      {R"({"request_id": "a", "input_toks": 5, "output_toks": 1, "queued_ts": null})",
       "r.jsonl:1: queued_ts: expected seconds on the server's monotonic clock, a finite "
       "number, got null"},
      {req(R"(, "ttft": 1)"),
       "r.jsonl:1: ttft: unknown field; valid: request_id, input_toks, output_toks, "
       "arrival_time, queued_ts, scheduled_ts, first_token_ts, last_token_ts"},
      {req("", "a", 10, 9, 11, 12), "r.jsonl:1: scheduled_ts: 9 is before queued_ts 10"},
      {req("", "a", 10, 10, 9.5, 12), "r.jsonl:1: first_token_ts: 9.5 is before scheduled_ts 10"},
      {req("", "a", 10, 10, 11, 10.5),
       "r.jsonl:1: last_token_ts: 10.5 is before first_token_ts 11"},
      {req("") + "\n" + req(""), "r.jsonl:2: request_id: 'a' is already the id of line 1"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.text);
    const std::string msg = error_of(c.text);
    CAPTURE(msg);
    CHECK(msg.starts_with(c.expected));
    if (c.expected.find("parse_error") == std::string::npos) CHECK(msg == c.expected);
  }
  CHECK_THROWS_WITH_AS(read_vllm_requests("/nonexistent-dir/r.jsonl"),
                       "/nonexistent-dir/r.jsonl: cannot open: No such file or directory",
                       isim::InputError);
}
