// Internal to traces/: what the JSONL readers (native, Mooncake, TraceLab) share -- the error
// format `WHERE: FIELD: reason`, how a bad value is quoted, and the line loop.
//
// Contract: for_each_json_line calls fn(json, where, line) for every non-blank line of `in`
// (CRLF tolerated), with where = "ORIGIN:LINE"; a line that is not JSON throws InputError
// `ORIGIN:LINE: <json>: parser message`.
#pragma once

#include <cstdint>
#include <istream>
#include <limits>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "traces/input_error.h"

namespace isim::trace::json_lines {

using json = nlohmann::json;

[[noreturn]] inline void fail(const std::string& where, const std::string& field,
                              const std::string& reason) {
  throw InputError(where + ": " + field + ": " + reason);
}

// A value as it appeared, shortened so one bad field cannot flood the terminal.
inline std::string shown(const json& v) {
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

// The value of `key` in a line's object; "missing" names the field otherwise.
inline const json& require(const json& obj, const char* key, const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end()) fail(where, key, "missing");
  return *it;
}

// A count field: an integer in [min, 2^63).
inline int64_t count_field(const json& obj, const char* key, int64_t min,
                           const std::string& where) {
  const json& v = require(obj, key, where);
  if (!v.is_number_unsigned() ||
      v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
      static_cast<int64_t>(v.get<uint64_t>()) < min)
    fail(where, key, fmt::format("expected an integer >= {}, got {}", min, shown(v)));
  return static_cast<int64_t>(v.get<uint64_t>());
}

template <class Fn>
void for_each_json_line(std::istream& in, const std::string& origin, Fn&& fn) {
  std::string line;
  for (int64_t n = 1; std::getline(in, line); ++n) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    const std::string where = fmt::format("{}:{}", origin, n);
    json j;
    try {
      j = json::parse(line);
    } catch (const json::exception& e) {
      fail(where, "<json>", e.what());
    }
    fn(j, where, n);
  }
}

}  // namespace isim::trace::json_lines
