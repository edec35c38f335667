// The LLMServingSim dataset importer (traces/llmservingsim.h): ids, arrivals, segments and the
// 16-token prefix hashes of hand-written lines, every error path, and the shared dataset.
#include <doctest/doctest.h>

#include <filesystem>
#include <sstream>
#include <vector>

#include "core/hash.h"
#include "core/input_error.h"
#include "tests/test_paths.h"
#include "traces/jsonl.h"
#include "traces/llmservingsim.h"

using namespace isim::trace;

namespace {

std::string error_of(const std::string& text) {
  std::istringstream in(text);
  try {
    parse_llmservingsim(in, "d.jsonl");
  } catch (const isim::InputError& e) {
    return e.what();
  }
  return "";
}

// `{"input_toks": N, ..., "input_tok_ids": [first, first + 1, ...]}` with N ids.
std::string line(int64_t n, int64_t output, const std::string& arrival, int64_t first) {
  std::ostringstream os;  // not operator+ on strings: GCC 12 falsely flags it (-Wrestrict)
  os << R"({"input_toks": )" << n << R"(, "output_toks": )" << output << R"(, "arrival_time_ns": )"
     << arrival << R"(, "input_tok_ids": [)";
  for (int64_t i = 0; i < n; ++i) os << (i ? "," : "") << first + i;
  os << "]}\n";
  return os.str();
}

std::vector<int64_t> iota(int64_t first, int64_t n) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(first + i);
  return v;
}

const uint64_t kSeed = 0x6c6c6d7365727665ull;

bool have_dataset() {
  return std::filesystem::exists(isim::test::shared_data() +
                                 "/llmservingsim/sharegpt-llama-3.1-8b-300-sps10.jsonl");
}

}  // namespace

TEST_CASE("llmservingsim: a block's hash folds splitmix64 over its own ids") {
  const std::vector<int64_t> one = {5};
  CHECK(llmservingsim_block_hash(one) == isim::splitmix64(kSeed ^ 5));
  const std::vector<int64_t> two = {5, 7};
  CHECK(llmservingsim_block_hash(two) == isim::splitmix64(isim::splitmix64(kSeed ^ 5) ^ 7));
  const std::vector<int64_t> swapped = {7, 5};
  CHECK(llmservingsim_block_hash(swapped) != llmservingsim_block_hash(two));
}

TEST_CASE("llmservingsim: lines become bench-N sessions with 16-token block hashes") {
  // Line 1: 40 tokens 100..139 (blocks of 16, 16, 8); line 2 blank; line 3: 16 tokens 100..115
  // (the same first block as line 1); line 4: 1 token.
  const std::string text =
      line(40, 3, "1500000000", 100) + "\n" + line(16, 1, "2.5e8", 100) + line(1, 2, "0", 9);
  std::istringstream in(text);
  const Trace t = parse_llmservingsim(in, "d.jsonl");
  REQUIRE(t.size() == 3);
  CHECK(t[0].id == "bench-0");
  CHECK(t[0].arrival_s == 1.5);
  CHECK(t[0].segments == std::vector<Segment>{{40, 3, {}}});
  const std::vector<uint64_t> first = {llmservingsim_block_hash(iota(100, 16)),
                                       llmservingsim_block_hash(iota(116, 16)),
                                       llmservingsim_block_hash(iota(132, 8))};
  CHECK(t[0].prefix == PrefixHashes{16, first});
  CHECK(t[1].id == "bench-2");    // the blank line 2 still counts
  CHECK(t[1].arrival_s == 0.25);  // arrivals may go back; file order is kept
  CHECK(t[1].segments == std::vector<Segment>{{16, 1, {}}});
  CHECK(t[1].prefix == PrefixHashes{16, {first[0]}});
  CHECK(t[2].id == "bench-3");
  CHECK(t[2].prefix == PrefixHashes{16, {isim::splitmix64(kSeed ^ 9)}});
  // What the model generated, when given, is checked and left out of the hashes.
  std::istringstream with_outputs(
      R"({"input_toks": 1, "output_toks": 2, "arrival_time_ns": 0, "input_tok_ids": [9], )"
      R"("output_tok_ids": [3, 4]})");
  CHECK(parse_llmservingsim(with_outputs, "d.jsonl")[0].prefix == t[2].prefix);
  // The native format carries the hashes unchanged.
  std::ostringstream os;
  write_jsonl(os, t);
  std::istringstream back(os.str());
  CHECK(parse_jsonl(back, "round-trip") == t);
}

TEST_CASE("llmservingsim: bad lines name file, line and field") {
  const std::string ok = line(2, 1, "0", 1);
  CHECK(error_of(ok).empty());
  struct Case {
    std::string text, expected;
  };
  const Case cases[] = {
      {"{", "d.jsonl:1: <json>: [json.exception.parse_error"},
      {"[1]", "d.jsonl:1: <json>: expected an object, got [1]"},
      {R"({"output_toks": 1, "arrival_time_ns": 0, "input_tok_ids": [1]})",
       "d.jsonl:1: input_toks: missing"},
      {R"({"input_toks": 0, "output_toks": 1, "arrival_time_ns": 0, "input_tok_ids": []})",
       "d.jsonl:1: input_toks: expected an integer >= 1, got 0"},
      {R"({"input_toks": 1, "output_toks": 0, "arrival_time_ns": 0, "input_tok_ids": [1]})",
       "d.jsonl:1: output_toks: expected an integer >= 1, got 0"},
      {R"({"input_toks": 1, "output_toks": 2.5, "arrival_time_ns": 0, "input_tok_ids": [1]})",
       "d.jsonl:1: output_toks: expected an integer >= 1, got 2.5"},
      {R"({"input_toks": 1, "output_toks": 1, "input_tok_ids": [1]})",
       "d.jsonl:1: arrival_time_ns: missing"},
      {R"({"input_toks": 1, "output_toks": 1, "arrival_time_ns": -5, "input_tok_ids": [1]})",
       "d.jsonl:1: arrival_time_ns: expected nanoseconds since the trace start, a finite number "
       ">= 0, got -5"},
      {R"({"input_toks": 1, "output_toks": 1, "arrival_time_ns": "0", "input_tok_ids": [1]})",
       "d.jsonl:1: arrival_time_ns: expected nanoseconds since the trace start, a finite number "
       ">= 0, got \"0\""},
      {R"({"input_toks": 1, "output_toks": 1, "arrival_time_ns": 0})",
       "d.jsonl:1: input_tok_ids: missing"},
      {R"({"input_toks": 1, "output_toks": 1, "arrival_time_ns": 0, "input_tok_ids": 3})",
       "d.jsonl:1: input_tok_ids: expected an array of token ids, got 3"},
      {R"({"input_toks": 3, "output_toks": 1, "arrival_time_ns": 0, "input_tok_ids": [1, 2]})",
       "d.jsonl:1: input_tok_ids: 2 token ids, but input_toks is 3"},
      {R"({"input_toks": 2, "output_toks": 1, "arrival_time_ns": 0, "input_tok_ids": [1, -2]})",
       "d.jsonl:1: input_tok_ids[1]: expected a token id, an integer >= 0, got -2"},
      {R"({"input_toks": 1, "output_toks": 1, "arrival_time_ns": 0, "input_tok_ids": [0.5]})",
       "d.jsonl:1: input_tok_ids[0]: expected a token id, an integer >= 0, got 0.5"},
      {R"({"input_toks": 1, "output_toks": 1, "arrival_time_ns": 0, "input_tok_ids": [1], "x": 0})",
       "d.jsonl:1: x: unknown field; valid: input_toks, output_toks, arrival_time_ns, "
       "input_tok_ids, output_tok_ids"},
      {R"({"input_toks": 1, "output_toks": 2, "arrival_time_ns": 0, "input_tok_ids": [1], )"
       R"("output_tok_ids": [4]})",
       "d.jsonl:1: output_tok_ids: 1 token ids, but output_toks is 2"},
      {R"({"input_toks": 1, "output_toks": 1, "arrival_time_ns": 0, "input_tok_ids": [1], )"
       R"("output_tok_ids": ["a"]})",
       "d.jsonl:1: output_tok_ids[0]: expected a token id, an integer >= 0, got \"a\""},
      {ok + "\n" + R"({"input_toks": 1})", "d.jsonl:3: output_toks: missing"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.text);
    const std::string msg = error_of(c.text);
    CAPTURE(msg);
    CHECK(msg.starts_with(c.expected));
    if (c.expected.find("parse_error") == std::string::npos) CHECK(msg == c.expected);
  }
  CHECK_THROWS_WITH_AS(import_llmservingsim("/nonexistent-dir/d.jsonl"),
                       "/nonexistent-dir/d.jsonl: cannot open: No such file or directory",
                       isim::InputError);
}

TEST_CASE("llmservingsim: the shared 300-request dataset imports" *
          doctest::skip(isim::test::absent(!have_dataset()))) {
  const Trace t = import_llmservingsim(isim::test::shared_data() +
                                       "/llmservingsim/sharegpt-llama-3.1-8b-300-sps10.jsonl");
  REQUIRE(t.size() == 300);
  CHECK(t[0].id == "bench-0");
  CHECK(t[299].id == "bench-299");
  // Line 1: {"input_toks": 2358, "output_toks": 531, "arrival_time_ns": 46926808, ...}.
  CHECK(t[0].arrival_s == 0.046926808);
  CHECK(t[0].segments == std::vector<Segment>{{2358, 531, {}}});
  CHECK(t[0].prefix.block_tokens == 16);
  CHECK(t[0].prefix.hashes.size() == 148);  // ceil(2358 / 16)
  for (const auto& s : t)
    CHECK(static_cast<int64_t>(s.prefix.hashes.size()) == (s.segments[0].input + 15) / 16);
}
