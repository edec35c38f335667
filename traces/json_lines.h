// Internal to traces/: what the JSONL readers (native, Mooncake, TraceLab) share -- the error
// format `WHERE: FIELD: reason`, how a bad value is quoted (isim::shown, core/json_shown.h),
// token counts (traces/limits.h) and the line loop.
//
// Contract: count_field reads an integer in [min, kMaxTokens]. for_each_json_line calls fn(json,
// where, line) for every non-blank line of `in` (CRLF tolerated), with where = "ORIGIN:LINE"; a
// line that is not JSON throws InputError `ORIGIN:LINE: <json>: parser message`, one with a key
// twice in an object the message of parse_json_unique (core/json_unique.h); a read that fails
// half-way throws `ORIGIN:LINE: read error; ...` (core/input_file.h), LINE the line it failed in.
#pragma once

#include <cmath>
#include <cstdint>
#include <istream>
#include <limits>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/input_error.h"
#include "core/input_file.h"
#include "core/json_shown.h"
#include "core/json_unique.h"
#include "traces/limits.h"

namespace isim::trace::json_lines {

using json = nlohmann::json;

[[noreturn]] inline void fail(const std::string& where, const std::string& field,
                              const std::string& reason) {
  throw InputError(where + ": " + field + ": " + reason);
}

using isim::shown;

// The value of `key` in a line's object; "missing" names the field otherwise.
inline const json& require(const json& obj, const char* key, const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end()) fail(where, key, "missing");
  return *it;
}

// Why `v` is not a token count in [min, kMaxTokens], or "" when it is one; `expected` says
// what was expected below the limit ("an integer >= 1").
template <class Json>
std::string tokens_problem(const Json& v, int64_t min, const std::string& expected) {
  if (!v.is_number_unsigned() || v.template get<uint64_t>() < static_cast<uint64_t>(min))
    return "expected " + expected + ", got " + shown(v);
  if (v.template get<uint64_t>() > static_cast<uint64_t>(kMaxTokens))
    return too_many_tokens(shown(v));
  return "";
}

// A token count field: an integer in [min, kMaxTokens].
inline int64_t count_field(const json& obj, const char* key, int64_t min,
                           const std::string& where) {
  const json& v = require(obj, key, where);
  const std::string problem = tokens_problem(v, min, fmt::format("an integer >= {}", min));
  if (!problem.empty()) fail(where, key, problem);
  return static_cast<int64_t>(v.get<uint64_t>());
}

// Why a time `v` in a field whose unit is 1/per_second s is not a finite number in
// [0, kMaxSeconds], or ""; `expected` says what was expected below the limit.
template <class Json>
std::string time_problem(const Json& v, const std::string& expected, double per_second = 1,
                         const char* unit = "s") {
  if (!v.is_number() || !std::isfinite(v.template get<double>()) || v.template get<double>() < 0)
    return "expected " + expected + ", got " + shown(v);
  if (v.template get<double>() / per_second > kMaxSeconds)
    return too_many_seconds(shown(v), per_second, unit);
  return "";
}

template <class Fn>
void for_each_json_line(std::istream& in, const std::string& origin, Fn&& fn) {
  std::string line;
  int64_t n = 1;
  for (; std::getline(in, line); ++n) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    const std::string where = fmt::format("{}:{}", origin, n);
    json j;
    try {
      j = parse_json_unique<json>(line, origin, n);
    } catch (const json::exception& e) {
      fail(where, "<json>", e.what());
    }
    fn(j, where, n);
  }
  check_read(in, origin, n);
}

}  // namespace isim::trace::json_lines
