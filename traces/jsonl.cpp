#include "traces/jsonl.h"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <istream>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>
#include <unordered_map>

#include "core/atomic_file.h"
#include "core/input_error.h"
#include "traces/json_lines.h"
#include "traces/jsonl_fields.h"
#include "traces/jsonl_signals.h"
#include "traces/limits.h"
#include "traces/trace_file.h"

namespace isim::trace {
namespace {

using json = nlohmann::json;
using namespace jsonl_fields;

Segment segment_from_json(const json& j, const std::string& where, const std::string& prefix) {
  if (!j.is_object()) fail(where, prefix, "expected an object, got " + shown(j));
  const std::string p = prefix + ".";
  reject_unknown_keys(j, {"input", "output", "intercept", "context_event", "retention"}, where, p);
  Segment seg;
  seg.input = tokens_field(j, "input", where, p);
  seg.output = tokens_field(j, "output", where, p);
  if (auto it = j.find("intercept"); it != j.end()) {
    const std::string ip = p + "intercept";
    if (!it->is_object())
      fail(where, ip, "expected an object {kind, duration_s}, got " + shown(*it));
    reject_unknown_keys(*it, {"kind", "duration_s"}, where, ip + ".");
    Intercept ic;
    ic.kind = string_field(*it, "kind", where, ip + ".kind");
    ic.duration_s = seconds_field(*it, "duration_s", where, ip + ".duration_s");
    seg.intercept = std::move(ic);
  }
  if (auto it = j.find("context_event"); it != j.end())
    seg.event = jsonl_signals::context_event_from_json(*it, where, p);
  if (auto it = j.find("retention"); it != j.end())
    seg.retention = jsonl_signals::retention_from_json(*it, where, p);
  return seg;
}

PrefixHashes prefix_from_json(const json& j, const std::string& where) {
  if (!j.is_object())
    fail(where, "prefix", "expected an object {block_tokens, hashes}, got " + shown(j));
  reject_unknown_keys(j, {"block_tokens", "hashes"}, where, "prefix.");
  PrefixHashes p;
  p.block_tokens = tokens_field(j, "block_tokens", where, "prefix.");
  // The writer leaves out an absent prefix, so a prefix that is present names a real block size.
  if (p.block_tokens == 0) fail(where, "prefix.block_tokens", "must be > 0, got 0");
  const json& hashes =
      require(j, "hashes", where, "prefix.hashes", "an array of non-negative integers");
  if (!hashes.is_array())
    fail(where, "prefix.hashes",
         "expected an array of non-negative integers, got " + shown(hashes));
  p.hashes.reserve(hashes.size());
  for (size_t i = 0; i < hashes.size(); ++i) {
    // Integers above 2^64 - 1 arrive as floats, and negatives as signed: both fail this test.
    if (!hashes[i].is_number_unsigned())
      fail(where, fmt::format("prefix.hashes[{}]", i),
           "expected a non-negative integer below 2^64, got " + shown(hashes[i]));
    p.hashes.push_back(hashes[i].get<uint64_t>());
  }
  return p;
}

Session session_from_json(const json& j, const std::string& where) {
  if (!j.is_object()) fail(where, "<json>", "expected an object, got " + shown(j));
  reject_unknown_keys(j, {"id", "arrival_s", "segments", "prefix"}, where, "");
  Session s;
  s.id = string_field(j, "id", where, "id");
  s.arrival_s = seconds_field(j, "arrival_s", where, "arrival_s");
  const json& segs = require(j, "segments", where, "segments", "a non-empty array of segments");
  if (!segs.is_array())
    fail(where, "segments", "expected a non-empty array of segments, got " + shown(segs));
  for (size_t k = 0; k < segs.size(); ++k)
    s.segments.push_back(segment_from_json(segs[k], where, fmt::format("segments[{}]", k)));
  if (auto it = j.find("prefix"); it != j.end()) s.prefix = prefix_from_json(*it, where);
  return s;
}

bool finite_non_negative(double x) {
  return std::isfinite(x) && x >= 0;
}

// A time in [0, kMaxSeconds] (traces/limits.h).
void check_seconds(double x, const std::string& where, const std::string& field) {
  if (!finite_non_negative(x)) fail(where, field, fmt::format("must be finite and >= 0, got {}", x));
  if (x > kMaxSeconds) fail(where, field, too_many_seconds(fmt::format("{}", x)));
}

// A token count in [min, kMaxTokens]; `why` says why min is 1 where it is.
void check_tokens(int64_t n, int64_t min, const char* why, const std::string& where,
                  const std::string& field) {
  if (n < 0) fail(where, field, fmt::format("must be >= 0, got {}", n));
  if (n < min) fail(where, field, fmt::format("must be >= {} ({}), got {}", min, why, n));
  if (n > kMaxTokens) fail(where, field, too_many_tokens(fmt::format("{}", n)));
}

}  // namespace

void validate_session(const Session& s, const std::string& where) {
  if (s.id.empty()) fail(where, "id", "must be a non-empty string");
  check_seconds(s.arrival_s, where, "arrival_s");
  if (s.segments.empty()) fail(where, "segments", "must have at least one segment");
  double end_s = s.arrival_s;  // arrival plus the intercepts so far
  for (size_t k = 0; k < s.segments.size(); ++k) {
    const Segment& seg = s.segments[k];
    const std::string p = fmt::format("segments[{}].", k);
    // The engine never admits a session with nothing to prefill; later inputs may be 0.
    check_tokens(seg.input, k == 0 ? 1 : 0,
                 "the prompt; a session with nothing to prefill never starts", where, p + "input");
    check_tokens(seg.output, 1, "every segment decodes at least one token", where, p + "output");
    if (!seg.intercept) continue;
    if (k + 1 == s.segments.size()) fail(where, p + "intercept", "the last segment cannot pause");
    if (seg.intercept->kind.empty())
      fail(where, p + "intercept.kind", "must be a non-empty string");
    check_seconds(seg.intercept->duration_s, where, p + "intercept.duration_s");
    end_s += seg.intercept->duration_s;
    if (end_s > kMaxSeconds)
      fail(where, p + "intercept.duration_s",
           fmt::format("the session's arrival_s plus its intercepts reach {} s, past the limit "
                       "of {:.0f} s (about 126 years)",
                       end_s, kMaxSeconds));
  }
  jsonl_signals::validate_signals(s, where);
  const PrefixHashes& p = s.prefix;
  if (p.block_tokens < 0)
    fail(where, "prefix.block_tokens", fmt::format("must be > 0, got {}", p.block_tokens));
  if (p.hashes.empty()) return;
  if (p.block_tokens == 0) fail(where, "prefix.block_tokens", "must be > 0 when there are hashes");
  const int64_t prompt = s.segments[0].input;
  const int64_t blocks = prompt / p.block_tokens + (prompt % p.block_tokens != 0 ? 1 : 0);
  if (static_cast<int64_t>(p.hashes.size()) > blocks)
    fail(where, fmt::format("prefix.hashes[{}]", blocks),
         fmt::format("more hashes ({}) than the prompt has blocks: ceil({} / {}) = {}",
                     p.hashes.size(), prompt, p.block_tokens, blocks));
}

Trace parse_jsonl(std::istream& in, const std::string& origin) {
  Trace t;
  std::vector<int64_t> lines;                            // the line of each session
  std::unordered_map<std::string, int64_t> first_line;  // id -> line it was first seen on
  json_lines::for_each_json_line(
      in, origin, [&](const json& j, const std::string& where, int64_t n) {
        Session s = session_from_json(j, where);
        validate_session(s, where);
        auto [it, fresh] = first_line.emplace(s.id, n);
        if (!fresh)
          fail(where, "id", fmt::format("duplicate id '{}' (first on line {})", s.id, it->second));
        t.push_back(std::move(s));
        lines.push_back(n);
      });
  validate_forks(t, [&](size_t i) { return fmt::format("{}:{}", origin, lines[i]); });
  return t;
}

Trace read_jsonl(const std::string& path) {
  std::ifstream in = open_trace_file(path);
  Trace t = parse_jsonl(in, path);
  require_sessions(t, path);
  return t;
}

void write_jsonl(std::ostream& os, const Trace& t) {
  validate_forks(t, [](size_t i) { return fmt::format("write_jsonl: session {}", i); });
  for (size_t i = 0; i < t.size(); ++i) {
    const Session& s = t[i];
    // A session the reader would reject must not reach a file (inf would not even be JSON).
    validate_session(s, fmt::format("write_jsonl: session {}", i));
    // json::dump only for strings: it owns escaping; fmt "{}" gives the shortest exact double.
    std::string out =
        fmt::format(R"({{"id":{},"arrival_s":{},"segments":[)", json(s.id).dump(), s.arrival_s);
    for (size_t k = 0; k < s.segments.size(); ++k) {
      const Segment& seg = s.segments[k];
      out += fmt::format(R"({}{{"input":{},"output":{})", k ? "," : "", seg.input, seg.output);
      if (seg.intercept)
        out += fmt::format(R"(,"intercept":{{"kind":{},"duration_s":{}}})",
                           json(seg.intercept->kind).dump(), seg.intercept->duration_s);
      out += jsonl_signals::signals_json(seg);
      out += '}';
    }
    out += ']';
    if (s.prefix.block_tokens != 0 || !s.prefix.hashes.empty()) {
      out += fmt::format(R"(,"prefix":{{"block_tokens":{},"hashes":[)", s.prefix.block_tokens);
      for (size_t h = 0; h < s.prefix.hashes.size(); ++h)
        out += fmt::format("{}{}", h ? "," : "", s.prefix.hashes[h]);
      out += "]}";
    }
    out += "}\n";
    os << out;
  }
}

void write_jsonl_file(const std::string& path, const Trace& t) {
  std::ostringstream os;
  write_jsonl(os, t);
  write_file_atomic(path, os.str());
}

}  // namespace isim::trace
