// The workload model: a Session is one agent or conversation request; it is an ordered list of
// Segments, each of which prefills `input` tokens, decodes `output` tokens, and may then pause
// for an Intercept (a tool call, a user's turn, ...).
//
// Contract:
// - Token counts are non-negative; a session has at least one segment.
// - Segment 0's input is the prompt; segment k>0's input is what the intercept of segment k-1
//   returned. The context after segment k is the sum of all inputs and outputs so far, unless
//   a segment's context event resets it (ContextEvent).
// - Only a segment that is followed by another one may carry an intercept: the last segment
//   never does (a session ends when its last output token is decoded).
// - Intercept kinds are free-form names; durations are seconds, >= 0.
// - Session::start_after and shared_prompt are built by code (an arrival process, a source),
//   never read from or written to a trace file: a session with a start_after arrives when its
//   predecessor does or finishes, not at its arrival_s (StartAfter).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "traces/shared_list.h"

namespace isim::trace {

struct Intercept {
  std::string kind;
  double duration_s = 0.0;

  bool operator==(const Intercept&) const = default;
};

// Agent context signals (optional; docs/agent-kv.md). What an agent harness knows about a
// segment's context when the segment starts (its intercept ends, or the session arrives):
// - kReset (segments k >= 1): the context was summarised. Before segment k's input, the context
//   becomes `tokens` tokens, of which the first `shared` are the old context's first `shared`
//   tokens (a system prompt and tool list that survive) and the rest are new (the summary).
//   The old context's KV past `shared` will never be read again. 0 <= shared <= tokens, and
//   shared <= the context before the reset.
// - kFork (segment 0 only): a subagent starts. The first `tokens` tokens of its prompt are the
//   first `tokens` tokens of session `parent`'s context (the parent arrives no later, and is
//   another session of the trace); tokens <= segment 0's input.
// - kEnd (the last segment only): when this segment ends, nothing will read the session's
//   context again (a subagent finished), so its KV is worthless.
enum class ContextEventKind : uint8_t { kNone, kReset, kFork, kEnd };

struct ContextEvent {
  ContextEventKind kind = ContextEventKind::kNone;
  int64_t tokens = 0;  // reset: the new context's length; fork: the prefix shared with parent
  int64_t shared = 0;  // reset: leading tokens kept from the old context
  std::string parent;  // fork: the parent session's id

  bool operator==(const ContextEvent&) const = default;
};

// A retention hint from the harness on the context's tokens [begin, end) (after the segment's
// input): priority 0 (drop first) .. 100 (keep longest). It holds while its segment is the
// session's current one (through the intercept after it), and for at most `duration_s` seconds
// from the segment's start when that is > 0. Dynamo's agentic design notes plan the same
// per-range priority and duration.
struct Retention {
  int64_t begin = 0, end = 0;
  int32_t priority = 0;
  double duration_s = 0;

  bool operator==(const Retention&) const = default;
};

struct Segment {
  int64_t input = 0;
  int64_t output = 0;
  std::optional<Intercept> intercept;
  ContextEvent event = {};                // kNone: no signal
  std::vector<Retention> retention = {};  // in `begin` order, not overlapping

  bool operator==(const Segment&) const = default;
  // Of `kv` tokens of context computed before this segment starts, those that survive its
  // reset (all of them without one): the reset keeps the first `shared`.
  int64_t kv_surviving(int64_t kv) const {
    return event.kind == ContextEventKind::kReset ? std::min(kv, event.shared) : kv;
  }
};

// Content identity of a session's prompt, for prefix caching across sessions: hashes[i] names
// tokens [i * block_tokens, (i + 1) * block_tokens) of segment 0's input, and equal chains
// mean equal content (Mooncake's hash_ids). At most ceil(prompt / block_tokens) hashes; the last
// may cover a partial block. Empty means the prompt shares nothing with other sessions.
struct PrefixHashes {
  int64_t block_tokens = 0;
  std::vector<uint64_t> hashes;

  bool empty() const { return hashes.empty(); }
  bool operator==(const PrefixHashes&) const = default;
};

// A start dependency (closed-loop arrivals, traces/arrival.h `users`): the session arrives
// `delay_s` seconds after trace session `session` (a lower index) finishes (on_finish) or
// arrives (!on_finish), at whatever time that turns out to be in the run. Its arrival_s is then
// only a lower bound that keeps trace-level checks (a fork's parent arrives no later) true:
// the predecessor's arrival_s + delay_s; the cluster ignores it (cluster/cluster.h). A
// predecessor that fits no replica counts as finished at the instant it would have arrived.
// session = -1: none, the session arrives at arrival_s. Not part of the JSONL format, so a trace
// written and read back loses it.
//
// `windows` (user-phases, traces/arrival_phases.h): when set, the session may only start inside
// one of these [begin, end) spans of run time: at the instant the dependency fires (+ delay) if
// that lies in a span, else at the next span's begin, and never when no span is left (it and
// every session depending on it are then not started). One list per user, shared by pointer
// (compared by value). A session with windows and session = -1 arrives at arrival_s, which lies
// in a span.
struct ActiveWindows {
  std::vector<std::pair<double, double>> spans;  // [begin, end) in seconds, sorted, disjoint

  bool operator==(const ActiveWindows&) const = default;
  // The first instant >= t inside a span; -1 when none is left.
  double next_start(double t) const {
    for (const auto& [b, e] : spans)
      if (t < e) return std::max(t, b);
    return -1;
  }
};

struct StartAfter {
  int32_t session = -1;
  bool on_finish = true;
  double delay_s = 0;
  std::shared_ptr<const ActiveWindows> windows = {};

  bool operator==(const StartAfter& o) const {
    return session == o.session && on_finish == o.on_finish && delay_s == o.delay_s &&
           (windows == o.windows || (windows && o.windows && *windows == *o.windows));
  }
};

struct Session {
  std::string id;
  double arrival_s = 0.0;
  SharedList<Segment> segments;  // copies share it until written (trace.draw's copies)
  PrefixHashes prefix = {};  // the initializer keeps `Session{id, arrival, segments}` warning-free
  StartAfter start_after = {};
  // The leading prompt tokens the source knows every session of its origin begins with (system
  // prompt and tool definitions: weka system_tokens + tool_tokens, agents the kind's
  // system_prompt); 0: not known. Built by code (`arrival.salt_copies` keeps their hashes);
  // not part of the JSONL format.
  int64_t shared_prompt = 0;

  bool operator==(const Session&) const = default;

  // Largest context the session ever reaches (a reset shortens it; see ContextEvent).
  int64_t max_context() const {
    int64_t c = 0, most = 0;
    for (const auto& s : segments) {
      if (s.event.kind == ContextEventKind::kReset) c = s.event.tokens;
      c += s.input + s.output;
      most = std::max(most, c);
    }
    return most;
  }
  int64_t total_output() const {
    int64_t c = 0;
    for (const auto& s : segments) c += s.output;
    return c;
  }
  // Tokens returned by intercepts: the inputs of segments 1..n-1.
  int64_t returned_tokens() const {
    int64_t c = 0;
    for (size_t k = 1; k < segments.size(); ++k) c += segments[k].input;
    return c;
  }
  double total_intercept_s() const {
    double t = 0;
    for (const auto& s : segments)
      if (s.intercept) t += s.intercept->duration_s;
    return t;
  }
};

using Trace = std::vector<Session>;

}  // namespace isim::trace
