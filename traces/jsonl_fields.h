// Internal to traces/: the field readers of the native JSONL format (jsonl.cpp and
// jsonl_signals.cpp share them).
//
// Contract: each reader returns the value of `key` in `obj` or throws InputError
// `WHERE: FIELD: reason`, FIELD being `prefix + key` (or the path given); a missing key reads
// `missing; expected ...`, a mistyped one `expected ..., got VALUE` (VALUE as json_lines::shown
// quotes it). tokens_field reads an integer in [0, kMaxTokens] (traces/limits.h); the range of
// seconds is validate_session's (traces/jsonl.h). reject_unknown_keys names the first key of `obj` not in `valid` and lists the valid
// ones in order.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>

#include <nlohmann/json.hpp>

#include "traces/json_lines.h"

namespace isim::trace::jsonl_fields {

using json = nlohmann::json;
using json_lines::fail;
using json_lines::shown;

// `what` qualifies the message, e.g. " for kind reset" gives `unknown field for kind reset`.
inline void reject_unknown_keys(const json& obj, std::initializer_list<const char*> valid,
                                const std::string& where, const std::string& prefix,
                                const std::string& what = "") {
  for (const auto& [key, value] : obj.items()) {
    bool known = false;
    for (const char* v : valid) known = known || key == v;
    if (known) continue;
    std::string list;
    for (const char* v : valid) list += (list.empty() ? "" : ", ") + std::string(v);
    fail(where, prefix + key, "unknown field" + what + "; valid: " + list);
  }
}

inline const json& require(const json& obj, const char* key, const std::string& where,
                           const std::string& field, const char* expected) {
  auto it = obj.find(key);
  if (it == obj.end()) fail(where, field, std::string("missing; expected ") + expected);
  return *it;
}

inline int64_t tokens_field(const json& obj, const char* key, const std::string& where,
                            const std::string& prefix) {
  const std::string field = prefix + key;
  const json& v = require(obj, key, where, field, "a non-negative integer");
  // nlohmann stores every non-negative JSON integer as unsigned, so this one test rejects
  // negatives, fractions, and 3.0 alike (a float token count means the producer went wrong).
  const std::string problem = json_lines::tokens_problem(v, 0, "a non-negative integer");
  if (!problem.empty()) fail(where, field, problem);
  return static_cast<int64_t>(v.get<uint64_t>());
}

inline double seconds_field(const json& obj, const char* key, const std::string& where,
                            const std::string& field) {
  const json& v = require(obj, key, where, field, "a number of seconds >= 0");
  if (!v.is_number()) fail(where, field, "expected a number of seconds >= 0, got " + shown(v));
  return v.get<double>();
}

inline std::string string_field(const json& obj, const char* key, const std::string& where,
                                const std::string& field) {
  const json& v = require(obj, key, where, field, "a non-empty string");
  if (!v.is_string()) fail(where, field, "expected a non-empty string, got " + shown(v));
  return v.get<std::string>();
}

}  // namespace isim::trace::jsonl_fields
