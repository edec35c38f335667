#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "core/input_error.h"
#include "tests/test_paths.h"
#include "traces/infercept.h"

using namespace isim::trace;

namespace {

// Writes `json` to a temporary file and returns the InputError message of importing it.
std::string import_error(const std::string& json, std::string* path_out = nullptr) {
  const auto path = std::filesystem::temp_directory_path() / "isim_test_infercept.json";
  std::ofstream(path) << json;
  if (path_out) *path_out = path.string();
  try {
    import_infercept(path.string());
  } catch (const isim::InputError& e) {
    std::filesystem::remove(path);
    return e.what();
  }
  std::filesystem::remove(path);
  return "";
}

Segment seg(int64_t in, int64_t out, const char* kind = nullptr, double d = 0) {
  Segment s{in, out, std::nullopt};
  if (kind) s.intercept = Intercept{kind, d};
  return s;
}

}  // namespace

TEST_CASE("infercept: text tokens are llround(4/3 x ASCII-whitespace words)") {
  CHECK(estimate_tokens("") == 0);
  CHECK(estimate_tokens("   ") == 0);
  CHECK(estimate_tokens("a") == 1);                     // 1.33
  CHECK(estimate_tokens("a b") == 3);                   // 2.67
  CHECK(estimate_tokens("one two three") == 4);         // 4
  CHECK(estimate_tokens("  a\tb\nc\r\nd\v e\f") == 7);  // 5 words: 6.67
}

// Expected values from the excerpt (cut unchanged from merged_exp_uniform.json), worked out by
// hand from the JSON and cross-checked with traces/generators/measure_infercept_mix.py:
// - numeric: input_k = prompt_tokens[k] - prompt_tokens[k-1] - completion_tokens[k-1], e.g.
//   540 - 392 - 127 = 21 (= api_token_length 21);
// - text: words -> tokens, e.g. session "17": prompt "this is not less code this is java" is
//   8 words -> llround(10.67) = 11 tokens; its completion has 40 words -> 53; the api_token "the
//   code block indicates wrong language, this is java" has 9 words -> 12 (segment 1's input).
TEST_CASE("infercept: the excerpt converts to exact sessions") {
  ImportReport r;
  const Trace t = import_infercept(isim::test::data_dir() + "/infercept-excerpt.json", &r);
  REQUIRE(t.size() == 7);

  CHECK(t[0].id == "0a84bcdff8434b23971032489f44b90a");
  CHECK(t[0].segments == std::vector<Segment>{seg(392, 127, "math", 8.662702748551965e-05),
                                              seg(21, 47, "math", 8.252804400399327e-05),
                                              seg(23, 48, "math", 9.954097913578153e-05),
                                              seg(23, 82, "math", 8.059397805482149e-05),
                                              seg(22, 76)});
  CHECK(t[1].id == "09444449d6154c6894c67f3537b8a4df");
  CHECK(t[1].segments ==
        std::vector<Segment>{seg(389, 48, "math", 9.855296229943633e-05), seg(20, 16)});
  CHECK(t[2].id == "17");  // chat: two human turns
  CHECK(t[2].segments == std::vector<Segment>{seg(11, 53, "chat", 18.857142857142858),
                                              seg(12, 20, "chat", 11.571428571428571), seg(8, 64)});
  CHECK(t[3].id == "00cc8da3dc9d4c08ad779958fa36de59");  // qa: first prompt 924 >= 700
  CHECK(t[3].segments == std::vector<Segment>{seg(924, 297, "qa", 0.7401505279703997),
                                              seg(56, 176, "qa", 0.6789949630037881),
                                              seg(53, 152, "qa", 0.6564772779820487),
                                              seg(56, 173, "qa", 0.36635256494628266),
                                              seg(60, 101)});
  CHECK(t[4].id == "4_1");  // tts, human turn, tts; the trailing tts call is dropped
  CHECK(t[4].segments == std::vector<Segment>{seg(5, 52, "tts", 11.657540560116946),
                                              seg(8, 7, "chat", 13.628571428571428),
                                              seg(8, 55, "tts", 9.226311090204755), seg(8, 7)});
  CHECK(t[5].id == "6");  // ve: first prompt 1973 >= 1500
  CHECK(t[5].segments == std::vector<Segment>{seg(1973, 4, "ve", 0.0960645049270504),
                                              seg(2, 4, "ve", 0.0960645049270504),
                                              seg(2, 4, "ve", 0.0960645049270504), seg(13, 4)});
  CHECK(t[6].id == "5_3");
  CHECK(t[6].segments == std::vector<Segment>{seg(7, 53, "image", 11.586991511425213), seg(7, 7)});
  for (const Session& s : t) CHECK(s.arrival_s == 0);

  CHECK(r.sessions == 7);
  CHECK(r.segments == 25);
  CHECK(r.intercepts == 18);
  CHECK(r.dropped_trailing_intercepts == 3);  // 4_1, 6, 5_3
  CHECK(r.text_sessions == 3);
  CHECK(r.sessions_by_kind ==
        std::map<std::string, int64_t>{
            {"chat", 1}, {"image", 1}, {"math", 2}, {"qa", 1}, {"tts", 1}, {"ve", 1}});
}

TEST_CASE("infercept: bad input names file, session and field") {
  std::string path;
  const std::string numeric_ok = R"({"prompt_tokens":10,"completion_tokens":5,"api_time":1,)";
  struct Case {
    std::string json;
    std::string suffix;  // after "PATH: "
  };
  const Case cases[] = {
      {"{\"a\": [", "<json>: [json.exception.parse_error"},
      {"[1]", "expected an object {session_id: [segment, ...]}"},
      {R"({"a": []})", "a: segments: expected a non-empty array of segments"},
      {R"({"a": [5]})", "a: segments[0]: expected an object"},
      {R"({"a": [{"tokens":5}]})", "a: segments[0]: expected numeric {prompt_tokens, "},
      {"{\"a\": [" + numeric_ok +
           R"("api_token_length":3},{"prompt_tokens":19,"completion_tokens":1}]})",
       "a: segments[1].prompt_tokens: new tokens (prompt_tokens[k] - prompt_tokens[k-1] - "
       "completion_tokens[k-1]) = 4, but segments[0].api_token_length = 3"},
      {"{\"a\": [" + numeric_ok +
           R"("api_token_length":3},{"prompt_tokens":12,"completion_tokens":1}]})",
       "a: segments[1].prompt_tokens: new tokens (prompt_tokens[k] - prompt_tokens[k-1] - "
       "completion_tokens[k-1]) = -3,"},
      {R"({"a": [{"prompt_tokens":10,"completion_tokens":5,"api_token_length":3},)"
       R"({"prompt_tokens":18,"completion_tokens":1}]})",
       "a: segments[0].api_time: missing"},
      {"{\"a\": [" + numeric_ok + R"("api_token_length":3},{"prompt_tokens":18}]})",
       "a: segments[1].completion_tokens: missing"},
      {"{\"a\": [" + numeric_ok +
           R"("api_token_length":3.5},{"prompt_tokens":18,"completion_tokens":1}]})",
       "a: segments[0].api_token_length: expected a non-negative integer, got 3.5"},
      {R"({"a": [{"prompt_tokens":10,"completion_tokens":5,"api_time":-1,"api_token_length":3},)"
       R"({"prompt_tokens":18,"completion_tokens":1}]})",
       "a: segments[0].api_time: expected seconds >= 0, got -1"},
      {R"({"a": [{"prompt_tokens":10,"completion_tokens":5,"prompt":"x"}]})",
       "a: segments[0].prompt: unknown field; valid: prompt_tokens, completion_tokens, api_time, "
       "api_token_length"},
      {R"({"b": [{"prompt":"hi","completion":"yo","api_time":2},{"prompt":"x","completion":"z"}]})",
       "b: segments[0].api_token: missing"},
      {R"({"b": [{"prompt":"hi","completion":7}]})",
       "b: segments[0].completion: expected a string, got 7"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.json);
    const std::string msg = import_error(c.json, &path);
    CAPTURE(msg);
    CHECK(msg.starts_with(path + ": " + c.suffix));
  }
  CHECK_THROWS_WITH_AS(import_infercept("/nonexistent-dir/w.json"),
                       "/nonexistent-dir/w.json: cannot open: No such file or directory",
                       isim::InputError);
}

TEST_CASE("infercept: the full infercept-mix file" *
          doctest::skip(isim::test::absent(!std::filesystem::exists(isim::test::shared_data() +
                                                 "/infercept-mix/merged_exp_uniform.json")))) {
  const std::string path = isim::test::shared_data() + "/infercept-mix/merged_exp_uniform.json";
  ImportReport r;
  const Trace t = import_infercept(path, &r);  // throws on any cumulative mismatch
  CHECK(t.size() == 397);
  CHECK(r.sessions == 397);
  CHECK(r.segments == 2054);
  CHECK(r.intercepts == 2054 - 397);  // every non-last segment pauses
  CHECK(r.dropped_trailing_intercepts == 184);
  CHECK(r.text_sessions == 195);
  CHECK(r.sessions_by_kind ==
        std::map<std::string, int64_t>{
            {"chat", 65}, {"image", 65}, {"math", 98}, {"qa", 50}, {"tts", 65}, {"ve", 54}});
  // Six contiguous blocks in file order: math, chat, qa, tts, ve, image.
  auto first_kind = [](const Session& s) { return s.segments[0].intercept->kind; };
  CHECK(first_kind(t[0]) == "math");
  CHECK(first_kind(t[97]) == "math");
  CHECK(first_kind(t[98]) == "chat");
  CHECK(first_kind(t[163]) == "qa");
  CHECK(first_kind(t[213]) == "tts");
  CHECK(first_kind(t[278]) == "ve");
  CHECK(first_kind(t[332]) == "image");
  CHECK(t.front().id == "0a84bcdff8434b23971032489f44b90a");
  CHECK(t.back().id == "98_2");
}
