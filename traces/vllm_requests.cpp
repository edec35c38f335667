#include "traces/vllm_requests.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <istream>
#include <limits>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/input_error.h"
#include "traces/json_lines.h"
#include "traces/jsonl.h"
#include "traces/trace_file.h"

namespace isim::trace {

namespace {

using json = nlohmann::json;
using json_lines::count_field;
using json_lines::fail;
using json_lines::require;
using json_lines::shown;

constexpr const char* kValid =
    "request_id, input_toks, output_toks, arrival_time, queued_ts, scheduled_ts, first_token_ts, "
    "last_token_ts";

double seconds(const json& obj, const char* key, const std::string& where) {
  const json& v = require(obj, key, where);
  if (!v.is_number() || !std::isfinite(v.get<double>()))
    fail(where, key,
         "expected seconds on the server's monotonic clock, a finite number, got " + shown(v));
  if (std::abs(v.get<double>()) > kMaxSeconds)  // traces/limits.h
    fail(where, key, too_many_seconds(shown(v)));
  return v.get<double>();
}

// Each timestamp is no earlier than the one before it in a request's life.
void check_order(const VllmRequest& r, const std::string& where) {
  auto after = [&](double later, const char* key, double earlier, const char* before) {
    if (later < earlier)
      fail(where, key, fmt::format("{} is before {} {}", later, before, earlier));
  };
  after(r.scheduled_s, "scheduled_ts", r.queued_s, "queued_ts");
  after(r.first_token_s, "first_token_ts", r.scheduled_s, "scheduled_ts");
  after(r.last_token_s, "last_token_ts", r.first_token_s, "first_token_ts");
}

VllmRequest request_from_json(const json& j, const std::string& where, int64_t line) {
  if (!j.is_object()) fail(where, "<json>", "expected an object, got " + shown(j));
  static const std::vector<std::string> known = {"request_id",     "input_toks",   "output_toks",
                                                 "arrival_time",   "queued_ts",    "scheduled_ts",
                                                 "first_token_ts", "last_token_ts"};
  for (const auto& [key, value] : j.items())
    if (std::find(known.begin(), known.end(), key) == known.end())
      fail(where, key, std::string("unknown field; valid: ") + kValid);
  VllmRequest r;
  r.line = line;
  const json& id = require(j, "request_id", where);
  if (!id.is_string() || id.get<std::string>().empty())
    fail(where, "request_id", "expected a non-empty string, got " + shown(id));
  r.id = id.get<std::string>();
  r.input = count_field(j, "input_toks", 1, where);
  r.output = count_field(j, "output_toks", 1, where);
  if (auto it = j.find("arrival_time"); it != j.end() && !it->is_number())
    fail(where, "arrival_time", "expected a number (wall-clock epoch), got " + shown(*it));
  r.queued_s = seconds(j, "queued_ts", where);
  r.scheduled_s = seconds(j, "scheduled_ts", where);
  r.first_token_s = seconds(j, "first_token_ts", where);
  r.last_token_s = seconds(j, "last_token_ts", where);
  check_order(r, where);
  return r;
}

}  // namespace

std::vector<VllmRequest> parse_vllm_requests(std::istream& in, const std::string& origin) {
  std::vector<VllmRequest> out;
  std::map<std::string, int64_t> line_of;
  json_lines::for_each_json_line(
      in, origin, [&](const json& j, const std::string& where, int64_t n) {
        VllmRequest r = request_from_json(j, where, n);
        auto [it, fresh] = line_of.emplace(r.id, n);
        if (!fresh)
          fail(where, "request_id",
               fmt::format("'{}' is already the id of line {}", r.id, it->second));
        out.push_back(std::move(r));
      });
  if (out.empty()) throw InputError(origin + ": no requests (expected one JSON object a line)");
  return out;
}

std::vector<VllmRequest> read_vllm_requests(const std::string& path) {
  std::ifstream in = open_trace_file(path);
  return parse_vllm_requests(in, path);
}

Trace vllm_requests_to_trace(const std::vector<VllmRequest>& requests) {
  double first = std::numeric_limits<double>::infinity();
  for (const auto& r : requests) first = std::min(first, r.queued_s);
  Trace t;
  t.reserve(requests.size());
  for (const auto& r : requests) {
    Session s;
    s.id = r.id;
    s.arrival_s = r.queued_s - first;
    s.segments.push_back({r.input, r.output, {}});
    t.push_back(std::move(s));
  }
  return t;
}

Trace import_vllm_requests(const std::string& path) {
  Trace t = vllm_requests_to_trace(read_vllm_requests(path));
  for (const Session& s : t) validate_session(s, path + ": " + s.id);  // arrivals are differences
  return t;
}

}  // namespace isim::trace
