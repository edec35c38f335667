#include "traces/infercept.h"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "core/input_error.h"
#include "core/input_file.h"
#include "traces/json_lines.h"
#include "traces/jsonl.h"
#include "traces/trace_file.h"

namespace isim::trace {
namespace {

using ojson = nlohmann::ordered_json;  // file order is session order

constexpr int kMaxDepth = 64;  // of JSON nesting

const std::vector<std::string> kNumericKeys = {"prompt_tokens", "completion_tokens", "api_time",
                                               "api_token_length"};
const std::vector<std::string> kTextKeys = {"prompt", "completion", "api_token", "api_time"};

// One session being imported: where errors point.
struct Where {
  const std::string& path;
  const std::string& id;

  [[noreturn]] void fail(const std::string& field, const std::string& reason) const {
    throw InputError(path + ": " + id + ": " + field + ": " + reason);
  }
};

std::string field(size_t k, const char* key) {
  return fmt::format("segments[{}].{}", k, key);
}

std::string joined(const std::vector<std::string>& keys) {
  std::string s;
  for (const auto& k : keys) s += (s.empty() ? "" : ", ") + k;
  return s;
}

const ojson& require(const ojson& seg, size_t k, const char* key, const Where& w) {
  auto it = seg.find(key);
  if (it == seg.end()) w.fail(field(k, key), "missing");
  return *it;
}

// A count in [0, kMaxTokens] (traces/limits.h), which keeps the cumulative differences below
// free of overflow.
int64_t count_at(const ojson& seg, size_t k, const char* key, const Where& w) {
  const ojson& v = require(seg, k, key, w);
  const std::string problem = json_lines::tokens_problem(v, 0, "a non-negative integer");
  if (!problem.empty()) w.fail(field(k, key), problem);
  return static_cast<int64_t>(v.get<uint64_t>());
}

// The prompt (k = 0) and every output need a token: the engine could not run them otherwise.
void require_token(int64_t n, size_t k, const char* key, bool prompt, const Where& w) {
  if (n >= 1) return;
  w.fail(field(k, key),
         fmt::format("must be >= 1 ({}), got {}",
                     prompt ? "the prompt; a session with nothing to prefill never starts"
                            : "every segment decodes at least one token",
                     n));
}

const std::string& text_at(const ojson& seg, size_t k, const char* key, const Where& w) {
  const ojson& v = require(seg, k, key, w);
  if (!v.is_string()) w.fail(field(k, key), "expected a string, got " + shown(v));
  return v.get_ref<const std::string&>();
}

double api_time_at(const ojson& seg, size_t k, const Where& w) {
  const ojson& v = require(seg, k, "api_time", w);
  const std::string problem = json_lines::time_problem(v, "seconds >= 0");
  if (!problem.empty()) w.fail(field(k, "api_time"), problem);
  return v.get<double>();
}

void check_keys(const ojson& seg, size_t k, const std::vector<std::string>& valid, const Where& w) {
  if (!seg.is_object()) w.fail(fmt::format("segments[{}]", k), "expected an object");
  for (const auto& [key, value] : seg.items()) {
    bool known = false;
    for (const auto& v : valid) known = known || key == v;
    if (!known)
      w.fail(fmt::format("segments[{}].{}", k, key), "unknown field; valid: " + joined(valid));
  }
}

std::string numeric_kind(int64_t first_prompt) {
  if (first_prompt >= 1500) return "ve";  // ALFWorld: ~2000-token few-shot prompt
  if (first_prompt >= 700) return "qa";
  return "math";
}

std::string text_kind(const std::string& api_token) {
  if (api_token.starts_with("Convert this to text to speech")) return "tts";
  if (api_token.starts_with("Generate an image about this")) return "image";
  return "chat";
}

// Fills s.segments from a numeric session; returns the session's kind.
std::string import_numeric(const ojson& segs, const Where& w, Session& s) {
  const size_t n = segs.size();
  const std::string kind = numeric_kind(count_at(segs[0], 0, "prompt_tokens", w));
  for (size_t k = 0; k < n; ++k) {
    const ojson& seg = segs[k];
    check_keys(seg, k, kNumericKeys, w);
    Segment out;
    out.output = count_at(seg, k, "completion_tokens", w);
    out.input = count_at(seg, k, "prompt_tokens", w);
    if (k == 0) require_token(out.input, 0, "prompt_tokens", true, w);
    require_token(out.output, k, "completion_tokens", false, w);
    if (k > 0) {
      const ojson& prev = segs[k - 1];
      const int64_t fresh = out.input - count_at(prev, k - 1, "prompt_tokens", w) -
                            count_at(prev, k - 1, "completion_tokens", w);
      const int64_t returned = count_at(prev, k - 1, "api_token_length", w);
      if (fresh < 0 || fresh != returned)
        w.fail(field(k, "prompt_tokens"),
               fmt::format("new tokens (prompt_tokens[k] - prompt_tokens[k-1] - "
                           "completion_tokens[k-1]) = {}, but segments[{}].api_token_length = {}",
                           fresh, k - 1, returned));
      out.input = fresh;
    }
    if (k + 1 < n) out.intercept = Intercept{kind, api_time_at(seg, k, w)};
    s.segments.push_back(std::move(out));
  }
  return kind;
}

std::string import_text(const ojson& segs, const Where& w, Session& s) {
  const size_t n = segs.size();
  std::string kind;
  for (size_t k = 0; k < n; ++k) {
    const ojson& seg = segs[k];
    check_keys(seg, k, kTextKeys, w);
    Segment out;
    const std::string& prompt = text_at(seg, k, "prompt", w);
    out.output = estimate_tokens(text_at(seg, k, "completion", w));
    out.input = k == 0 ? estimate_tokens(prompt)
                       : estimate_tokens(text_at(segs[k - 1], k - 1, "api_token", w));
    if (k == 0) require_token(out.input, 0, "prompt", true, w);
    require_token(out.output, k, "completion", false, w);
    if (k + 1 < n) {
      const std::string ik = text_kind(text_at(seg, k, "api_token", w));
      if (kind.empty() && ik != "chat") kind = ik;
      out.intercept = Intercept{ik, api_time_at(seg, k, w)};
    }
    s.segments.push_back(std::move(out));
  }
  return kind.empty() ? "chat" : kind;
}

}  // namespace

int64_t estimate_tokens(const std::string& text) {
  int64_t words = 0;
  bool in_word = false;
  for (char c : text) {
    // ASCII whitespace only: std::isspace would make the count depend on the C locale.
    const bool space = c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
    if (!space && !in_word) ++words;
    in_word = !space;
  }
  return std::llround(4.0 * static_cast<double>(words) / 3.0);
}

Trace import_infercept(const std::string& path, ImportReport* report) {
  const std::string body = read_input_file(path, "an InferCept trace", kMaxWholeDataBytes);
  ojson doc;
  try {
    // ordered_json deep-copies a value when its object grows (nlohmann 3.11), which recursion
    // a value nested 200,000 deep turns into a stack overflow: refuse such nesting first.
    // A session id twice is refused with both lines (the first would be dropped otherwise).
    doc = parse_json_unique<ojson>(body, path, 1, [&](int depth, ojson::parse_event_t) {
      if (depth > kMaxDepth)
        throw InputError(fmt::format(
            "{}: <json>: values nested more than {} deep (the format nests 3: {{session_id: "
            "[{{field: value}}]}})",
            path, kMaxDepth));
    });
  } catch (const ojson::exception& e) {
    throw InputError(path + ": <json>: " + e.what());
  }
  if (!doc.is_object())
    throw InputError(path + ": expected an object {session_id: [segment, ...]}");

  ImportReport r;
  Trace t;
  for (const auto& [id, segs] : doc.items()) {
    const Where w{path, id};
    if (!segs.is_array() || segs.empty())
      w.fail("segments", "expected a non-empty array of segments, got " + shown(segs));
    if (!segs[0].is_object()) w.fail("segments[0]", "expected an object");
    const bool text = !segs[0].contains("prompt_tokens");
    if (text && !segs[0].contains("prompt"))
      w.fail("segments[0]", "expected numeric {" + joined(kNumericKeys) + "} or text {" +
                                joined(kTextKeys) + "} fields");
    Session s;
    s.id = id;
    const std::string kind = text ? import_text(segs, w, s) : import_numeric(segs, w, s);
    validate_session(s, path + ": " + id);

    ++r.sessions;
    r.segments += static_cast<int64_t>(s.segments.size());
    r.intercepts += static_cast<int64_t>(s.segments.size()) - 1;
    if (segs.back().contains("api_time")) ++r.dropped_trailing_intercepts;
    if (text) ++r.text_sessions;
    ++r.sessions_by_kind[kind];
    t.push_back(std::move(s));
  }
  require_sessions(t, path, "the file's object is empty");
  if (report) *report = r;
  return t;
}

}  // namespace isim::trace
