#include "traces/tracelab.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <istream>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/input_error.h"
#include "traces/json_lines.h"
#include "traces/jsonl.h"
#include "traces/limits.h"
#include "traces/trace_file.h"

namespace isim::trace {
namespace {

using json = nlohmann::json;
using json_lines::fail;
using json_lines::shown;

const json& require(const json& obj, const char* key, const std::string& where,
                    const std::string& field) {
  auto it = obj.find(key);
  if (it == obj.end()) fail(where, field, "missing");
  return *it;
}

// A token count in [0, kMaxTokens] (traces/limits.h).
int64_t tokens(const json& obj, const char* key, const std::string& where) {
  const json& v = require(obj, key, where, key);
  const std::string problem = json_lines::tokens_problem(v, 0, "a non-negative integer");
  if (!problem.empty()) fail(where, key, problem);
  return static_cast<int64_t>(v.get<uint64_t>());
}

std::string text(const json& obj, const char* key, const std::string& where,
                 const std::string& field) {
  const json& v = require(obj, key, where, field);
  if (!v.is_string() || v.get<std::string>().empty())
    fail(where, field, "expected a non-empty string, got " + shown(v));
  return v.get<std::string>();
}

struct Event {
  std::string type;
  int64_t ns = 0;
};

struct Round {
  int64_t line = 0;
  std::string where;
  std::string session;
  int64_t index = 0;
  int64_t total = 0, prefix = 0, appended = 0, output = 0;
  std::vector<Event> events;
  std::vector<std::string> tools;  // lowercased names in call order

  bool is_input(size_t i) const {
    return events[i].type == "user_message" || events[i].type == "tool_result";
  }
  int64_t last_ns() const {
    int64_t t = events[0].ns;
    for (const Event& e : events) t = std::max(t, e.ns);
    return t;
  }
};

Round parse_round(const json& j, const std::string& where, int64_t line) {
  if (!j.is_object()) fail(where, "<json>", "expected an object, got " + shown(j));
  Round r;
  r.line = line;
  r.where = where;
  r.session = text(j, "session_id", where, "session_id");
  const json& index = require(j, "round_index", where, "round_index");
  if (!index.is_number_unsigned())
    fail(where, "round_index", "expected a non-negative integer, got " + shown(index));
  r.index = static_cast<int64_t>(std::min<uint64_t>(index.get<uint64_t>(), 1ULL << 62));
  r.total = tokens(j, "input_tokens_total", where);
  r.prefix = tokens(j, "prefix_tokens", where);
  r.appended = tokens(j, "newly_append_tokens", where);
  r.output = tokens(j, "output_tokens", where);
  if (r.prefix + r.appended != r.total)
    fail(where, "input_tokens_total",
         fmt::format("{} is not prefix_tokens + newly_append_tokens = {} + {}", r.total, r.prefix,
                     r.appended));

  const json& events = require(j, "timing_events", where, "timing_events");
  if (!events.is_array() || events.empty())
    fail(where, "timing_events", "expected a non-empty array of events, got " + shown(events));
  for (size_t i = 0; i < events.size(); ++i) {
    const std::string f = fmt::format("timing_events[{}]", i);
    if (!events[i].is_object()) fail(where, f, "expected an object, got " + shown(events[i]));
    Event e;
    e.type = text(events[i], "event_type", where, f + ".event_type");
    e.ns = parse_iso8601_ns(text(events[i], "timestamp", where, f + ".timestamp"),
                            where + ": " + f + ".timestamp");
    r.events.push_back(std::move(e));
  }

  const json& tools = require(j, "tools", where, "tools");
  if (!tools.is_array()) fail(where, "tools", "expected an array, got " + shown(tools));
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string f = fmt::format("tools[{}]", i);
    if (!tools[i].is_object()) fail(where, f, "expected an object, got " + shown(tools[i]));
    std::string name = text(tools[i], "tool_name", where, f + ".tool_name");
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    r.tools.push_back(std::move(name));
  }
  return r;
}

// One session from its rounds (already checked to be 0, 1, 2, ...).
Session convert(const std::vector<Round>& rounds, TraceLabInput mode, TraceLabReport& rep) {
  Session s;
  s.id = rounds[0].session;
  for (size_t k = 0; k < rounds.size(); ++k) {
    const Round& r = rounds[k];
    Segment seg;
    seg.input = r.total;
    if (k > 0) {
      const Round& prev = rounds[k - 1];
      const int64_t growth = r.total - prev.total - prev.output;
      rep.growth_tokens += growth;
      rep.appended_tokens += r.appended;
      rep.prefix_discrepancy.push_back(r.prefix - (prev.prefix + prev.appended + prev.output));
      if (mode == TraceLabInput::appended) {
        seg.input = r.appended;
      } else if (growth < 1) {
        seg.input = 1;
        ++rep.inputs_raised;
      } else {
        seg.input = growth;
      }
    }
    seg.output = r.output;
    if (seg.output == 0) {
      seg.output = 1;
      ++rep.zero_outputs_raised;
    }
    if (k + 1 < rounds.size()) {
      const Round& next = rounds[k + 1];
      size_t run = 0;  // length of next's resume run
      bool user = false;
      while (run < next.events.size() && next.is_input(run))
        user = user || next.events[run++].type == "user_message";
      if (run == 0)
        fail(next.where, "timing_events[0].event_type",
             fmt::format("'{}': a round after the first must start with its inputs "
                         "(user_message or tool_result)",
                         next.events[0].type));
      std::string kind = user ? "user" : "";
      if (!user) {
        std::vector<std::string> seen;
        for (const std::string& t : r.tools) {
          if (std::find(seen.begin(), seen.end(), t) != seen.end()) continue;
          kind += (seen.empty() ? "" : "+") + t;
          seen.push_back(t);
        }
        if (seen.empty())
          fail(next.where, "timing_events[0].event_type",
               fmt::format("tool_result, but round {} (line {}) called no tool", r.index, r.line));
      }
      const int64_t wait_ns = next.events[run - 1].ns - r.last_ns();
      double wait_s = static_cast<double>(wait_ns) / 1e9;
      if (wait_ns < 0) {
        wait_s = 0;
        ++rep.negative_waits_clamped;
      }
      seg.intercept = Intercept{kind, wait_s};
      ++rep.intercepts;
      ++rep.intercepts_by_kind[kind];
      rep.intercept_s_by_kind[kind] += wait_s;
    }
    s.segments.push_back(std::move(seg));
  }
  return s;
}

int64_t digits(const std::string& s, size_t pos, size_t n, const std::string& where) {
  if (pos + n > s.size()) throw InputError(where + ": '" + s + "' is too short for ISO 8601");
  int64_t v = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(s[i])))
      throw InputError(fmt::format("{}: '{}': expected a digit at position {}", where, s, i));
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

// Every event within kMaxSeconds of the earliest session start (traces/limits.h): arrivals and
// waits are differences of these, so none can pass the limit either.
void check_span(const std::vector<std::vector<Round>>& sessions, int64_t origin_ns) {
  int64_t origin_line = 0;
  for (const auto& rounds : sessions)
    if (rounds[0].events[0].ns == origin_ns && origin_line == 0) origin_line = rounds[0].line;
  for (const auto& rounds : sessions)
    for (const Round& r : rounds)
      for (size_t i = 0; i < r.events.size(); ++i) {
        const double after_s = static_cast<double>(r.events[i].ns - origin_ns) / 1e9;
        if (after_s > kMaxSeconds)
          fail(r.where, fmt::format("timing_events[{}].timestamp", i),
               fmt::format("{} s after the trace's first event (line {}); expected at most {:.0f} "
                           "s (about 126 years, the limit on a time)",
                           after_s, origin_line, kMaxSeconds));
      }
}

}  // namespace

int64_t parse_iso8601_ns(const std::string& s, const std::string& where) {
  auto expect = [&](size_t pos, char c) {
    if (pos >= s.size() || s[pos] != c)
      throw InputError(fmt::format(
          "{}: '{}': expected '{}' at position {} (YYYY-MM-DDTHH:MM:SS[.f]Z)", where, s, c, pos));
  };
  const int64_t year = digits(s, 0, 4, where);
  expect(4, '-');
  const int64_t month = digits(s, 5, 2, where);
  expect(7, '-');
  const int64_t day = digits(s, 8, 2, where);
  expect(10, 'T');
  const int64_t hour = digits(s, 11, 2, where);
  expect(13, ':');
  const int64_t minute = digits(s, 14, 2, where);
  expect(16, ':');
  const int64_t second = digits(s, 17, 2, where);
  size_t pos = 19;
  int64_t frac_ns = 0;
  if (pos < s.size() && s[pos] == '.') {
    size_t n = 0;
    while (pos + 1 + n < s.size() && std::isdigit(static_cast<unsigned char>(s[pos + 1 + n]))) ++n;
    if (n == 0 || n > 9)
      throw InputError(fmt::format("{}: '{}': expected 1 to 9 fraction digits", where, s));
    frac_ns = digits(s, pos + 1, n, where);
    for (size_t i = n; i < 9; ++i) frac_ns *= 10;
    pos += 1 + n;
  }
  int64_t offset_s = 0;
  if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    const int64_t sign = s[pos] == '-' ? -1 : 1;
    const int64_t oh = digits(s, pos + 1, 2, where);
    expect(pos + 3, ':');
    const int64_t om = digits(s, pos + 4, 2, where);
    offset_s = sign * (oh * 3600 + om * 60);
    pos += 6;
  } else {
    expect(pos, 'Z');
    ++pos;
  }
  if (pos != s.size())
    throw InputError(fmt::format("{}: '{}': unexpected text after the time zone", where, s));
  if (year < 1970 || year > 2200)  // beyond, nanoseconds and their differences overflow int64
    throw InputError(fmt::format("{}: '{}': expected a year from 1970 to 2200", where, s));
  const std::chrono::year_month_day ymd{std::chrono::year{static_cast<int>(year)},
                                        std::chrono::month{static_cast<unsigned>(month)},
                                        std::chrono::day{static_cast<unsigned>(day)}};
  if (!ymd.ok() || hour > 23 || minute > 59 || second > 60)
    throw InputError(fmt::format("{}: '{}': not a valid date and time", where, s));
  const int64_t days = std::chrono::sys_days{ymd}.time_since_epoch().count();
  const int64_t secs = days * 86400 + hour * 3600 + minute * 60 + second - offset_s;
  return secs * 1'000'000'000 + frac_ns;
}

Trace parse_tracelab(std::istream& in, const std::string& origin, TraceLabReport* report,
                     TraceLabInput input) {
  std::vector<std::vector<Round>> sessions;
  json_lines::for_each_json_line(
      in, origin, [&](const json& j, const std::string& where, int64_t n) {
        Round r = parse_round(j, where, n);
        if (r.index == 0 && r.total == 0)
          fail(where, "input_tokens_total",
               "must be >= 1 in a session's first round (the prompt; a session with nothing to "
               "prefill never starts), got 0");
        if (sessions.empty() || sessions.back().back().session != r.session) {
          for (const auto& earlier : sessions)
            if (earlier[0].session == r.session)
              fail(where, "session_id",
                   fmt::format("rows of session '{}' are not contiguous (it started on line {})",
                               r.session, earlier[0].line));
          if (r.index != 0)
            fail(where, "round_index",
                 fmt::format("a session's first row must be round 0, got {}", r.index));
          sessions.emplace_back();
        } else if (r.index != sessions.back().back().index + 1) {
          fail(where, "round_index",
               fmt::format("expected {} (rounds in order), got {}",
                           sessions.back().back().index + 1, r.index));
        }
        sessions.back().push_back(std::move(r));
      });

  TraceLabReport rep;
  Trace t;
  int64_t origin_ns = std::numeric_limits<int64_t>::max();
  for (const auto& rounds : sessions) origin_ns = std::min(origin_ns, rounds[0].events[0].ns);
  check_span(sessions, origin_ns);
  for (const auto& rounds : sessions) {
    Session s = convert(rounds, input, rep);
    s.arrival_s = static_cast<double>(rounds[0].events[0].ns - origin_ns) / 1e9;
    validate_session(s, rounds[0].where);
    rep.rounds += static_cast<int64_t>(rounds.size());
    t.push_back(std::move(s));
  }
  rep.sessions = static_cast<int64_t>(t.size());
  if (report) *report = std::move(rep);
  return t;
}

Trace import_tracelab(const std::string& path, TraceLabReport* report, TraceLabInput input) {
  std::ifstream in = open_trace_file(path);
  Trace t = parse_tracelab(in, path, report, input);
  require_sessions(t, path);
  return t;
}

}  // namespace isim::trace
