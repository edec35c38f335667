#include <doctest/doctest.h>

#include <filesystem>
#include <sstream>

#include "core/input_error.h"
#include "tests/test_paths.h"
#include "traces/jsonl.h"
#include "traces/mooncake.h"
#include "traces/stats.h"

using namespace isim::trace;

namespace {

std::string error_of(const std::string& text) {
  std::istringstream in(text);
  try {
    parse_mooncake(in, "m.jsonl");
  } catch (const isim::InputError& e) {
    return e.what();
  }
  return "";
}

Trace round_trip(const Trace& t) {
  std::ostringstream os;
  write_jsonl(os, t);
  std::istringstream in(os.str());
  return parse_jsonl(in, "round-trip");
}

}  // namespace

// Lines 1, 2, 67, 134 and 138 of conversation_trace.jsonl, unchanged.
TEST_CASE("mooncake: the excerpt converts to exact sessions") {
  MooncakeReport r;
  const Trace t = import_mooncake(isim::test::data_dir() + "/mooncake-excerpt.jsonl", &r);
  REQUIRE(t.size() == 5);
  CHECK(r == MooncakeReport{5, 0, 0, 0, 0, 0});
  CHECK(t[0].id == "m1");
  CHECK(t[0].arrival_s == 0);
  CHECK(t[0].segments == std::vector<Segment>{{6758, 500, {}}});
  CHECK(t[0].prefix == PrefixHashes{512, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}});
  CHECK(t[2].id == "m3");
  CHECK(t[2].arrival_s == 21.0);
  CHECK(t[2].segments == std::vector<Segment>{{2651, 366, {}}});
  CHECK(t[2].prefix == PrefixHashes{512, {0, 1541, 1542, 1543, 1544, 1545}});
  CHECK(t[4].arrival_s == 48.0);
  CHECK(t[4].segments == std::vector<Segment>{{7833, 374, {}}});
  CHECK(t[4].prefix.hashes.size() == 16);  // ceil(7833 / 512) = 16
  CHECK(round_trip(t) == t);

  // By hand: 14 + 15 + 6 + 6 + 16 = 57 blocks. Repeated: block 0 in lines 2..5 (4), 1541..1544
  // in line 4 (4), 14..26 in line 5 (13) -> 21; distinct 57 - 21 = 36.
  const PrefixStats p = prefix_stats(t);
  CHECK(p.sessions == 5);
  CHECK(p.blocks == 57);
  CHECK(p.repeated == 21);
  CHECK(p.distinct == 36);
  CHECK(p.block_tokens == std::vector<int64_t>{512});
  CHECK(p.repeated_fraction() == doctest::Approx(21.0 / 57));
}

TEST_CASE("mooncake: zero outputs, short chains and timestamps going back are counted") {
  const std::string text =
      R"({"timestamp": 1500, "input_length": 1024, "output_length": 0, "hash_ids": [3, 4]})"
      "\n\n"
      R"({"timestamp": 1000.5, "input_length": 1025, "output_length": 2, "hash_ids": [3, 4]})"
      "\n"
      R"({"timestamp": 2000, "input_length": 10, "output_length": 0, "hash_ids": []})"
      "\n";
  std::istringstream in(text);
  MooncakeReport r;
  const Trace t = parse_mooncake(in, "m.jsonl", &r);
  REQUIRE(t.size() == 3);
  CHECK(r.sessions == 3);
  CHECK(r.zero_outputs_raised == 2);
  CHECK(r.first_zero_output_line == 1);
  CHECK(r.short_hash_lines == 2);  // 1025 tokens are 3 blocks; 10 tokens are 1
  CHECK(r.first_short_hash_line == 3);
  CHECK(r.timestamps_going_back == 1);
  CHECK(t[0].segments[0] == Segment{1024, 1, {}});
  CHECK(t[1].id == "m3");  // the blank line 2 still counts
  CHECK(t[1].arrival_s == 1.0005);
  CHECK(t[2].prefix == PrefixHashes{512, {}});
  CHECK(round_trip(t) == t);
}

TEST_CASE("mooncake: bad lines name file, line and field") {
  const std::string ok =
      R"({"timestamp": 0, "input_length": 600, "output_length": 1, "hash_ids": [1, 2]})"
      "\n";
  CHECK(error_of(ok).empty());
  struct Case {
    std::string text;
    std::string expected;
  };
  const Case cases[] = {
      {"{", "m.jsonl:1: <json>: [json.exception.parse_error"},
      {"[]", "m.jsonl:1: <json>: expected an object, got []"},
      {R"({"input_length": 600, "output_length": 1, "hash_ids": []})",
       "m.jsonl:1: timestamp: missing"},
      {R"({"timestamp": -1, "input_length": 600, "output_length": 1, "hash_ids": []})",
       "m.jsonl:1: timestamp: expected milliseconds, a finite number >= 0, got -1"},
      {R"({"timestamp": 0, "input_length": 0, "output_length": 1, "hash_ids": []})",
       "m.jsonl:1: input_length: expected an integer >= 1, got 0"},
      {R"({"timestamp": 0, "input_length": 600, "output_length": 1.5, "hash_ids": []})",
       "m.jsonl:1: output_length: expected an integer >= 0, got 1.5"},
      {R"({"timestamp": 0, "input_length": 600, "output_length": 1})",
       "m.jsonl:1: hash_ids: missing"},
      {R"({"timestamp": 0, "input_length": 600, "output_length": 1, "hash_ids": 7})",
       "m.jsonl:1: hash_ids: expected an array of non-negative integers, got 7"},
      {R"({"timestamp": 0, "input_length": 600, "output_length": 1, "hash_ids": [1, -2]})",
       "m.jsonl:1: hash_ids[1]: expected a non-negative integer below 2^64, got -2"},
      {R"({"timestamp": 0, "input_length": 600, "output_length": 1, "hash_ids": [1, 2, 3]})",
       "m.jsonl:1: hash_ids[2]: 3 hash ids but input_length 600 has only ceil(600 / 512) = 2 "
       "blocks"},
      {R"({"timestamp": 0, "input_length": 600, "output_length": 1, "hash_ids": [], "x": 1})",
       "m.jsonl:1: x: unknown field; valid: timestamp, input_length, output_length, hash_ids"},
      {ok + "\n" + R"({"timestamp": 0})", "m.jsonl:3: input_length: missing"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.text);
    const std::string msg = error_of(c.text);
    CAPTURE(msg);
    CHECK(msg.starts_with(c.expected));
    if (c.expected.find("parse_error") == std::string::npos) CHECK(msg == c.expected);
  }
  CHECK_THROWS_WITH_AS(import_mooncake("/nonexistent-dir/m.jsonl"),
                       "/nonexistent-dir/m.jsonl: cannot open: No such file or directory",
                       isim::InputError);
}

TEST_CASE("mooncake: the full traces import, round-trip and reuse prefixes" *
          doctest::skip(isim::test::absent(!std::filesystem::exists(isim::test::shared_data() +
                                                 "/mooncake/conversation_trace.jsonl") ||
                        !std::filesystem::exists(isim::test::shared_data() +
                                                 "/mooncake/synthetic_trace.jsonl")))) {
  struct File {
    const char* name;
    size_t sessions;
  };
  for (const File f :
       {File{"conversation_trace.jsonl", 12031}, File{"synthetic_trace.jsonl", 3993}}) {
    const std::string path = isim::test::shared_data() + "/mooncake/" + f.name;
    CAPTURE(path);
    MooncakeReport r;
    const Trace t = import_mooncake(path, &r);
    CHECK(t.size() == f.sessions);
    CHECK(r.sessions == static_cast<int64_t>(f.sessions));
    CHECK(round_trip(t) == t);
    const PrefixStats p = prefix_stats(t);
    MESSAGE(std::string(f.name) << ": " << p.sessions << " sessions, " << p.blocks << " blocks, "
                                << p.distinct << " distinct hash ids, repeated-block fraction "
                                << p.repeated_fraction() << "; zero outputs raised "
                                << r.zero_outputs_raised << ", short hash chains "
                                << r.short_hash_lines << ", timestamps going back "
                                << r.timestamps_going_back);
    CHECK(p.sessions == static_cast<int64_t>(f.sessions));
    CHECK(p.distinct + p.repeated == p.blocks);
    CHECK(p.repeated_fraction() > 0);
    CHECK(p.repeated_fraction() < 1);
    CHECK(trace_stats(t).find("prefix hashes: " + std::to_string(f.sessions) +
                              " sessions, block_tokens 512, ") != std::string::npos);
  }
}
