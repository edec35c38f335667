#include "traces/dynamo_agentic_row.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "traces/json_lines.h"

namespace isim::trace {
namespace {

using json = nlohmann::json;
using json_lines::fail;
using json_lines::shown;

// Every field of the schema, canonical names first; the aliases follow their canonical name.
const std::vector<std::string> kFields = {
    "request_id",    "session_id",   "input_length",    "input_tokens", "output_length",
    "output_tokens", "hash_ids",     "timestamp",       "created_time", "delay",
    "delay_ms",      "tool_wait_ms", "wait_for",        "branches",     "prefix_reset",
    "request_kind",  "priority",     "strict_priority", "policy_class", "output_token_ids",
    "tool_events"};

void reject_unknown(const json& j, const std::string& where) {
  for (const auto& [key, value] : j.items()) {
    bool known = false;
    for (const auto& f : kFields) known = known || key == f;
    if (known) continue;
    std::string list;
    for (const auto& f : kFields) list += (list.empty() ? "" : ", ") + f;
    fail(where, key, "unknown field; valid: " + list);
  }
}

// The value under `name` or its `alias` (nullptr when neither); `used` gets the name found.
const json* either(const json& j, const std::string& name, const std::string& alias,
                   const std::string& where, std::string* used) {
  auto a = j.find(name);
  auto b = alias.empty() ? j.end() : j.find(alias);
  if (a != j.end() && b != j.end())
    fail(where, alias, "given together with " + name + "; use one of the two names");
  *used = b != j.end() ? alias : name;
  if (a != j.end()) return &*a;
  return b != j.end() ? &*b : nullptr;
}

// A token count in [min, kMaxTokens] (traces/limits.h).
int64_t count_of(const json& v, const std::string& field, int64_t min, const std::string& where) {
  const std::string problem =
      json_lines::tokens_problem(v, min, fmt::format("an integer >= {}", min));
  if (!problem.empty()) fail(where, field, problem);
  return static_cast<int64_t>(v.get<uint64_t>());
}

// Milliseconds in [0, kMaxSeconds x 1000].
double ms_of(const json& v, const std::string& field, const std::string& where) {
  const std::string problem =
      json_lines::time_problem(v, "milliseconds, a finite number >= 0", 1000, "ms");
  if (!problem.empty()) fail(where, field, problem);
  return v.get<double>();
}

std::string text_of(const json& v, const std::string& field, const std::string& where) {
  if (!v.is_string() || v.get<std::string>().empty())
    fail(where, field, "expected a non-empty string, got " + shown(v));
  return v.get<std::string>();
}

std::vector<std::string> id_list(const json& j, const char* key, const std::string& where) {
  std::vector<std::string> out;
  auto it = j.find(key);
  if (it == j.end()) return out;
  if (!it->is_array()) fail(where, key, "expected an array of request ids, got " + shown(*it));
  for (size_t i = 0; i < it->size(); ++i)
    out.push_back(text_of((*it)[i], fmt::format("{}[{}]", key, i), where));
  return out;
}

std::vector<uint64_t> hash_ids(const json& j, const std::string& where) {
  auto it = j.find("hash_ids");
  if (it == j.end()) fail(where, "hash_ids", "missing");
  if (!it->is_array())
    fail(where, "hash_ids", "expected an array of non-negative integers, got " + shown(*it));
  std::vector<uint64_t> ids;
  ids.reserve(it->size());
  for (size_t i = 0; i < it->size(); ++i) {
    if (!(*it)[i].is_number_unsigned())
      fail(where, fmt::format("hash_ids[{}]", i),
           "expected a non-negative integer below 2^64, got " + shown((*it)[i]));
    ids.push_back((*it)[i].get<uint64_t>());
  }
  return ids;
}

bool in_range(const json& v, double lo, double hi) {
  return v.is_number_integer() && v.get<double>() >= lo && v.get<double>() <= hi;
}

// The fields the importer drops: their types only. Returns whether any is present.
bool check_dropped(const json& j, const std::string& where) {
  bool any = false;
  for (const char* key : {"request_kind", "policy_class"})
    if (auto it = j.find(key); it != j.end()) {
      if (!it->is_string()) fail(where, key, "expected a string, got " + shown(*it));
      any = true;
    }
  if (auto it = j.find("priority"); it != j.end()) {
    if (!in_range(*it, -2147483648.0, 2147483647.0))
      fail(where, "priority", "expected a 32-bit integer, got " + shown(*it));
    any = true;
  }
  if (auto it = j.find("strict_priority"); it != j.end()) {
    if (!in_range(*it, 0, 4294967295.0))
      fail(where, "strict_priority", "expected an integer in [0, 2^32), got " + shown(*it));
    any = true;
  }
  if (auto it = j.find("output_token_ids"); it != j.end()) {
    if (!it->is_array()) fail(where, "output_token_ids", "expected an array, got " + shown(*it));
    for (size_t i = 0; i < it->size(); ++i)
      if (!in_range((*it)[i], 0, 4294967295.0))
        fail(where, fmt::format("output_token_ids[{}]", i),
             "expected a token id in [0, 2^32), got " + shown((*it)[i]));
    any = true;
  }
  if (auto it = j.find("tool_events"); it != j.end()) {
    if (!it->is_array()) fail(where, "tool_events", "expected an array, got " + shown(*it));
    for (size_t i = 0; i < it->size(); ++i)
      if (!(*it)[i].is_object())
        fail(where, fmt::format("tool_events[{}]", i),
             "expected a tool event object, got " + shown((*it)[i]));
    any = true;
  }
  return any;
}

void read_lengths(const json& j, DynamoRow& r, int64_t block) {
  std::string name;
  const json* out = either(j, "output_length", "output_tokens", r.where, &name);
  if (!out) fail(r.where, "output_length", "missing");
  r.output = count_of(*out, name, 0, r.where);
  r.ids = hash_ids(j, r.where);
  const int64_t capacity = static_cast<int64_t>(r.ids.size()) * block;
  if (const json* in = either(j, "input_length", "input_tokens", r.where, &name)) {
    r.input = count_of(*in, name, 1, r.where);
  } else if (capacity < 1) {
    fail(r.where, "input_length", "missing, and hash_ids is empty: the prompt has no tokens");
  } else if (capacity > kMaxTokens) {
    fail(r.where, "input_length",
         fmt::format("missing, and hash_ids cover {} x {} = {} tokens: {}", r.ids.size(), block,
                     capacity, too_many_tokens("that")));
  } else {
    r.input = capacity;
  }
  const int64_t blocks = (r.input + block - 1) / block;
  if (static_cast<int64_t>(r.ids.size()) < blocks)
    fail(r.where, "hash_ids",
         fmt::format("{} hash ids cover {} tokens, but {} is {}: expected ceil({} / {}) = {} "
                     "(block_tokens {})",
                     r.ids.size(), capacity, name, r.input, r.input, block, blocks, block));
}

void read_times(const json& j, DynamoRow& r) {
  std::string name;
  if (const json* t = either(j, "timestamp", "created_time", r.where, &name))
    r.t_ms = ms_of(*t, name, r.where);
  r.time_field = name;
  if (const json* d = either(j, "delay", "delay_ms", r.where, &name))
    r.delay_ms = ms_of(*d, name, r.where);
  if (auto it = j.find("tool_wait_ms"); it != j.end())
    r.tool_ms = ms_of(*it, "tool_wait_ms", r.where);
}

}  // namespace

DynamoRow parse_dynamo_row(const json& j, const std::string& where, int64_t line, int64_t block) {
  if (!j.is_object()) fail(where, "<json>", "expected an object, got " + shown(j));
  reject_unknown(j, where);
  DynamoRow r;
  r.line = line;
  r.where = where;
  auto id = j.find("request_id");
  if (id == j.end()) fail(where, "request_id", "missing");
  r.id = text_of(*id, "request_id", where);
  if (r.id.find_first_not_of(" \t") == std::string::npos)
    fail(where, "request_id", "expected a non-empty string, got " + shown(*id));
  auto session = j.find("session_id");
  r.session =
      session == j.end() ? fmt::format("request_{}", line) : text_of(*session, "session_id", where);
  read_lengths(j, r, block);
  read_times(j, r);
  r.wait_for = id_list(j, "wait_for", where);
  r.branches = id_list(j, "branches", where);
  if (auto it = j.find("prefix_reset"); it != j.end()) {
    if (!it->is_boolean()) fail(where, "prefix_reset", "expected true or false, got " + shown(*it));
    r.prefix_reset = it->get<bool>();
  }
  r.dropped = check_dropped(j, where);
  return r;
}

}  // namespace isim::trace
