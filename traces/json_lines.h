// Internal to traces/: what the JSONL readers (native, Mooncake, TraceLab) share -- the error
// format `WHERE: FIELD: reason`, how a bad value is quoted, and the line loop.
//
// Contract: for_each_json_line calls fn(json, where, line) for every non-blank line of `in`
// (CRLF tolerated), with where = "ORIGIN:LINE"; a line that is not JSON throws InputError
// `ORIGIN:LINE: <json>: parser message`.
#pragma once

#include <cstdint>
#include <istream>
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
