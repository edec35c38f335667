#include "traces/jsonl_signals.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "traces/jsonl.h"
#include "traces/jsonl_fields.h"
#include "traces/limits.h"

namespace isim::trace {
namespace jsonl_signals {
namespace {

using json = nlohmann::json;
using namespace jsonl_fields;

const char* kRetentionShape = "{begin, end, priority, duration_s}";

int32_t priority_field(const json& obj, const std::string& where, const std::string& field) {
  const json& v = require(obj, "priority", where, field, "an integer in 0..100");
  if (!v.is_number_unsigned() || v.get<uint64_t>() > 100)
    fail(where, field, "expected an integer in 0..100, got " + shown(v));
  return static_cast<int32_t>(v.get<uint64_t>());
}

Retention range_from_json(const json& r, const std::string& where, const std::string& at) {
  if (!r.is_object())
    fail(where, at, fmt::format("expected an object {}, got {}", kRetentionShape, shown(r)));
  const std::string p = at + ".";
  reject_unknown_keys(r, {"begin", "end", "priority", "duration_s"}, where, p);
  Retention x;
  x.begin = tokens_field(r, "begin", where, p);
  x.end = tokens_field(r, "end", where, p);
  x.priority = priority_field(r, where, p + "priority");
  x.duration_s = seconds_field(r, "duration_s", where, p + "duration_s");
  return x;
}

bool finite_non_negative(double x) {
  return std::isfinite(x) && x >= 0;
}

// A field the event's kind does not use must keep its default, or the writer (which leaves it
// out) would not give back the same Segment.
void check_unused(const ContextEvent& e, const std::string& where, const std::string& p) {
  const std::string kind = kind_name(e.kind);
  const bool tokens_used = e.kind == ContextEventKind::kReset || e.kind == ContextEventKind::kFork;
  if (!tokens_used && e.tokens != 0)
    fail(where, p + "tokens", fmt::format("unused by kind {}; must be 0, got {}", kind, e.tokens));
  if (e.kind != ContextEventKind::kReset && e.shared != 0)
    fail(where, p + "shared", fmt::format("unused by kind {}; must be 0, got {}", kind, e.shared));
  if (e.kind != ContextEventKind::kFork && !e.parent.empty())
    fail(where, p + "parent",
         fmt::format("unused by kind {}; must be empty, got {}", kind, shown(json(e.parent))));
}

void non_negative(int64_t v, const std::string& where, const std::string& field) {
  if (v < 0) fail(where, field, fmt::format("must be >= 0, got {}", v));
}

void check_reset(const ContextEvent& e, size_t k, int64_t before, const std::string& where,
                 const std::string& p) {
  if (k == 0)
    fail(where, p + "kind", "reset is only valid on segments k >= 1 (segment 0 has no context)");
  non_negative(e.tokens, where, p + "tokens");
  non_negative(e.shared, where, p + "shared");
  if (e.shared > e.tokens)
    fail(where, p + "shared", fmt::format("must be <= tokens ({}), got {}", e.tokens, e.shared));
  if (e.shared > before)
    fail(where, p + "shared",
         fmt::format("must be <= the context before the reset ({}), got {}", before, e.shared));
}

void check_fork(const Session& s, size_t k, const std::string& where, const std::string& p) {
  const ContextEvent& e = s.segments[k].event;
  if (k != 0) fail(where, p + "kind", "fork is only valid on segment 0 (where a subagent starts)");
  non_negative(e.tokens, where, p + "tokens");
  if (e.tokens > s.segments[0].input)
    fail(where, p + "tokens",
         fmt::format("must be <= segments[0].input ({}), got {}", s.segments[0].input, e.tokens));
  if (e.parent.empty()) fail(where, p + "parent", "must be a non-empty string");
  if (e.parent == s.id)
    fail(where, p + "parent",
         fmt::format("must name another session, not the session itself ({})", shown(json(s.id))));
}

// Segment k's event, `before` being the context before it (after segment k-1's output).
void check_event(const Session& s, size_t k, int64_t before, const std::string& where) {
  const ContextEvent& e = s.segments[k].event;
  const std::string p = fmt::format("segments[{}].context_event.", k);
  check_unused(e, where, p);
  switch (e.kind) {
    case ContextEventKind::kNone:
      return;
    case ContextEventKind::kReset:
      return check_reset(e, k, before, where, p);
    case ContextEventKind::kFork:
      return check_fork(s, k, where, p);
    case ContextEventKind::kEnd:
      if (k + 1 != s.segments.size())
        fail(where, p + "kind",
             fmt::format("end is only valid on the last segment (segments[{}])",
                         s.segments.size() - 1));
      return;
  }
  fail(where, p + "kind", fmt::format("invalid kind {}", static_cast<int>(e.kind)));
}

// Segment k's retention ranges, `context` being the context after its input.
void check_retention(const Segment& seg, size_t k, int64_t context, const std::string& where) {
  for (size_t i = 0; i < seg.retention.size(); ++i) {
    const Retention& r = seg.retention[i];
    const std::string p = fmt::format("segments[{}].retention[{}].", k, i);
    non_negative(r.begin, where, p + "begin");
    if (r.end <= r.begin)
      fail(where, p + "end", fmt::format("must be > begin ({}), got {}", r.begin, r.end));
    if (r.end > context)
      fail(where, p + "end",
           fmt::format("must be <= the context after segments[{}].input ({}), got {}", k, context,
                       r.end));
    if (r.priority < 0 || r.priority > 100)
      fail(where, p + "priority", fmt::format("must be in 0..100, got {}", r.priority));
    if (!finite_non_negative(r.duration_s))
      fail(where, p + "duration_s", fmt::format("must be finite and >= 0, got {}", r.duration_s));
    if (r.duration_s > kMaxSeconds)
      fail(where, p + "duration_s", too_many_seconds(fmt::format("{}", r.duration_s)));
    if (i > 0 && r.begin < seg.retention[i - 1].end)
      fail(where, p + "begin",
           fmt::format("must be >= retention[{}].end ({}): ranges are sorted by begin and do not "
                       "overlap, got {}",
                       i - 1, seg.retention[i - 1].end, r.begin));
  }
}

}  // namespace

const char* kind_name(ContextEventKind k) {
  switch (k) {
    case ContextEventKind::kNone:
      return "none";
    case ContextEventKind::kReset:
      return "reset";
    case ContextEventKind::kFork:
      return "fork";
    case ContextEventKind::kEnd:
      return "end";
  }
  return "invalid";
}

ContextEvent context_event_from_json(const json& j, const std::string& where,
                                     const std::string& prefix) {
  const std::string p = prefix + "context_event";
  if (!j.is_object()) fail(where, p, "expected an object {kind, ...}, got " + shown(j));
  const json& kind = require(j, "kind", where, p + ".kind", "one of reset, fork, end");
  if (!kind.is_string())
    fail(where, p + ".kind", "expected one of reset, fork, end, got " + shown(kind));
  const std::string name = kind.get<std::string>();
  const std::string q = p + ".";
  ContextEvent e;
  if (name == "reset") {
    reject_unknown_keys(j, {"kind", "tokens", "shared"}, where, q, " for kind reset");
    e.kind = ContextEventKind::kReset;
    e.tokens = tokens_field(j, "tokens", where, q);
    e.shared = tokens_field(j, "shared", where, q);
  } else if (name == "fork") {
    reject_unknown_keys(j, {"kind", "parent", "tokens"}, where, q, " for kind fork");
    e.kind = ContextEventKind::kFork;
    e.parent = string_field(j, "parent", where, q + "parent");
    e.tokens = tokens_field(j, "tokens", where, q);
  } else if (name == "end") {
    reject_unknown_keys(j, {"kind"}, where, q, " for kind end");
    e.kind = ContextEventKind::kEnd;
  } else {
    fail(where, q + "kind", "unknown kind " + shown(kind) + "; valid: reset, fork, end");
  }
  return e;
}

std::vector<Retention> retention_from_json(const json& j, const std::string& where,
                                           const std::string& prefix) {
  const std::string p = prefix + "retention";
  if (!j.is_array())
    fail(where, p, fmt::format("expected an array of {}, got {}", kRetentionShape, shown(j)));
  std::vector<Retention> out;
  for (size_t i = 0; i < j.size(); ++i)
    out.push_back(range_from_json(j[i], where, fmt::format("{}[{}]", p, i)));
  return out;
}

void validate_signals(const Session& s, const std::string& where) {
  int64_t context = 0;
  for (size_t k = 0; k < s.segments.size(); ++k) {
    const Segment& seg = s.segments[k];
    check_event(s, k, context, where);
    if (seg.event.kind == ContextEventKind::kReset) context = seg.event.tokens;
    context += seg.input;
    check_retention(seg, k, context, where);
    context += seg.output;
  }
}

std::string signals_json(const Segment& seg) {
  std::string out;
  const ContextEvent& e = seg.event;
  if (e.kind == ContextEventKind::kReset)
    out += fmt::format(R"(,"context_event":{{"kind":"reset","tokens":{},"shared":{}}})", e.tokens,
                       e.shared);
  else if (e.kind == ContextEventKind::kFork)
    out += fmt::format(R"(,"context_event":{{"kind":"fork","parent":{},"tokens":{}}})",
                       json(e.parent).dump(), e.tokens);
  else if (e.kind == ContextEventKind::kEnd)
    out += R"(,"context_event":{"kind":"end"})";
  if (seg.retention.empty()) return out;
  out += R"(,"retention":[)";
  for (size_t i = 0; i < seg.retention.size(); ++i) {
    const Retention& r = seg.retention[i];
    out += fmt::format(R"({}{{"begin":{},"end":{},"priority":{},"duration_s":{}}})", i ? "," : "",
                       r.begin, r.end, r.priority, r.duration_s);
  }
  return out + "]";
}

}  // namespace jsonl_signals

namespace {

bool has_fork_parent(const Session& s) {
  return !s.segments.empty() && s.segments[0].event.kind == ContextEventKind::kFork;
}

// Parents arrive no later than their children, so a cycle needs equal arrivals (a -> b -> a at
// one instant); following parents from every session must reach one that forks from none.
// Refused at the cycle's first session in the trace, listing the ids around it.
void check_fork_cycles(const Trace& t, const std::unordered_map<std::string, size_t>& index,
                       const std::function<std::string(size_t)>& where) {
  enum : uint8_t { kUnseen, kOnPath, kDone };
  std::vector<uint8_t> state(t.size(), kUnseen);
  std::vector<size_t> path;
  for (size_t i = 0; i < t.size(); ++i) {
    path.clear();
    size_t at = i;
    while (state[at] == kUnseen) {
      state[at] = kOnPath;
      path.push_back(at);
      if (!has_fork_parent(t[at])) break;
      at = index.at(t[at].segments[0].event.parent);
    }
    if (state[at] == kOnPath && has_fork_parent(t[at])) {
      const auto from = std::find(path.begin(), path.end(), at);
      const size_t first = *std::min_element(from, path.end());
      std::string ring = shown(nlohmann::json(t[first].id));
      size_t k = first;
      do {
        k = index.at(t[k].segments[0].event.parent);
        ring += " -> " + shown(nlohmann::json(t[k].id));
      } while (k != first);
      json_lines::fail(
          where(first), "segments[0].context_event.parent",
          fmt::format("the forks form a cycle {} (each forks from the next); expected "
                      "every chain of parents to end at a session that forks from none",
                      ring));
    }
    for (size_t k : path) state[k] = kDone;
  }
}

}  // namespace

void validate_forks(const Trace& t, const std::function<std::string(size_t)>& where) {
  const auto forked = [](const Session& s) {
    return !s.segments.empty() && s.segments[0].event.kind == ContextEventKind::kFork;
  };
  if (std::none_of(t.begin(), t.end(), forked)) return;  // nothing to check: no index built
  std::unordered_map<std::string, size_t> index;         // id -> its first session
  for (size_t i = 0; i < t.size(); ++i) index.emplace(t[i].id, i);
  const std::string field = "segments[0].context_event.parent";
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i].segments.empty() || t[i].segments[0].event.kind != ContextEventKind::kFork) continue;
    const std::string& parent = t[i].segments[0].event.parent;
    const auto it = index.find(parent);
    if (it == index.end())
      json_lines::fail(where(i), field,
                       fmt::format("no session {} in the trace", shown(nlohmann::json(parent))));
    const Session& p = t[it->second];
    if (p.arrival_s > t[i].arrival_s)
      json_lines::fail(where(i), field,
                       fmt::format("session {} arrives at {} s, after this one ({} s); a parent "
                                   "arrives no later",
                                   shown(nlohmann::json(parent)), p.arrival_s, t[i].arrival_s));
  }
  check_fork_cycles(t, index, where);
}

int64_t drop_broken_forks(Trace& t) {
  const auto forked = [](const Session& s) {  // reads only: drawn copies keep sharing segments
    return !s.segments.empty() && s.segments[0].event.kind == ContextEventKind::kFork;
  };
  if (std::none_of(t.begin(), t.end(), forked)) return 0;  // no index of millions of ids
  std::unordered_map<std::string, size_t> index;
  for (size_t i = 0; i < t.size(); ++i) index.emplace(t[i].id, i);
  int64_t dropped = 0;
  for (Session& s : t) {
    if (!forked(s)) continue;
    const auto it = index.find(std::as_const(s.segments)[0].event.parent);
    if (it != index.end() && t[it->second].arrival_s <= s.arrival_s) continue;
    s.segments[0].event = ContextEvent{};
    ++dropped;
  }
  return dropped;
}

}  // namespace isim::trace
