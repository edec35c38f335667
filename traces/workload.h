// Workload shaping: from a trace source and the spec's `trace:` and `arrival:` keys to the
// sessions a run serves, with what was done to them said in notes and warnings.
//
// Contract: make_workload(spec, arrival, seed, origin), in this order:
// - loads `spec.from` (trace_source_registry, "trace.from" in its errors) with path, sessions,
//   seed, think_time_s, rate_scale and block_tokens; the source's notes come first;
// - kinds (non-empty) keeps the sessions whose session_class (traces/arrival.h) is listed (a
//   note counts them); none left: InputError "trace.kinds: ..." listing the trace's classes;
// - limit > 0 keeps the first `limit` sessions; max_context > 0 cuts every longer session to it
//   (truncate_to_context; a note counts them); draw > 0 draws that many with replacement
//   (bootstrap, seeded by `seed`), once the memory the draws take, estimated from the sessions
//   drawn from (draw_bytes), is at most kMaxDrawBytes, else InputError "ORIGIN: trace.draw: N
//   draws need ~X GB (B B per session of this trace), more than the 8 GB ...; draw at most M";
// - no session left: InputError "PATH: trace (FROM): no sessions to run" (PATH: `origin` when
//   the source has no path);
// - intercept_scale != 1 multiplies every intercept's duration (a note says so);
// - the arrival process sets arrival times (apply_arrivals); a replay in which every session
//   arrives at one instant gets a warning (a burst, not a load); forks whose parent was cut or
//   now arrives later start unforked (a note counts them);
// - a session whose arrival plus intercepts passes kMaxSeconds (traces/limits.h) is an
//   InputError naming `origin`, the session, intercept_scale and the arrival process.
// Same inputs, same workload, byte for byte.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/knobs.h"
#include "traces/arrival.h"
#include "traces/limits.h"
#include "traces/session.h"

namespace isim::trace {

// An experiment's `trace:` section.
struct WorkloadSpec {
  std::string from = "jsonl";  // a trace source: trace::trace_source_registry()
  std::string path;            // the trace, or the generator's YAML ("" = built-in defaults)
  int64_t limit = 0;           // > 0: keep only the first N sessions
  int64_t draw = 0;            // > 0: draw N sessions with replacement (seeded)
  int64_t sessions = 0;        // generator: how many sessions
  int64_t max_context = 0;     // > 0: cut sessions so no context exceeds it (reported)
  double think_time_s = 0;     // multiturn: > 0 sets the mean think time between turns
  double intercept_scale = 1;  // every intercept's duration is multiplied by this (> 0)
  double rate_scale = 1;       // agents: multiplies every phase's arrival rate (> 0)
  int64_t block_tokens = 0;    // dynamo-agentic: tokens per hash id (0: its default, 512)
  // Non-empty: keep only the sessions of these classes (trace::session_class).
  std::vector<std::string> kinds;

  // The numeric `trace:` keys (core/knobs.h): key, member, bound, what a value must be, help.
  // A zero limit, draw or max_context is "off"; a generator needs sessions > 0 and max_context
  // 1 is refused (experiments/spec/experiment.cpp: what a table cannot say).
  template <class Visit>
  void knobs(Visit&& k) {
    k("limit", limit, in(0, kMaxSessions).because("the most sessions a run holds"), "an integer",
      "keep the first N sessions of the trace (0 = off: all)");
    k("draw", draw, in(0, kMaxSessions).because("the most sessions a run holds: a few GB"),
      "an integer", "draw N sessions with replacement, seeded (0 = off: the trace as is)");
    k("sessions", sessions, in(0, kMaxSessions).because("the limit on a generated trace"),
      "an integer", "generator: how many sessions to generate (> 0 for a generator)");
    k("max_context", max_context, in(0, kMaxTokens).because("the limit on a token count"),
      "an integer", "cut sessions to this many context tokens (0 = off: no cut; not 1)");
    k("think_time_s", think_time_s,
      above_upto(0, kMaxSeconds).because("about 126 years, the limit on a time"), "seconds",
      "multiturn: mean think time between turns (absent: the trace's)");
    k("intercept_scale", intercept_scale, above_upto(0, kMaxScale), "a factor",
      "multiplies every intercept's duration");
    k("rate_scale", rate_scale, above_upto(0, kMaxScale), "a factor",
      "agents: multiplies every phase's arrival rate");
    k("block_tokens", block_tokens, in(1, kMaxTokens).because("the limit on a token count"),
      "an integer number of tokens", "dynamo-agentic: tokens per hash id (absent: 512)");
  }
  static constexpr double kMaxScale = 1e6;  // intercept_scale, rate_scale
};

// The memory `trace.draw` may take: the estimate is kDrawSessionBytes + the id's length per
// drawn copy and 8 per prefix hash (the struct and the id's allocation, rounded up for the
// allocator). A copy's segments cost nothing: it shares its pool session's (SharedList).
inline constexpr double kMaxDrawBytes = 8e9;
inline constexpr int64_t kDrawSessionBytes = 160;
// The estimated bytes of one drawn copy of `s`.
inline int64_t draw_bytes(const Session& s) {
  return kDrawSessionBytes + static_cast<int64_t>(s.id.size()) +
         8 * static_cast<int64_t>(s.prefix.hashes.size());
}

struct Workload {
  Trace trace;
  std::vector<std::string> notes;     // what shaping did, for the user to know
  std::vector<std::string> warnings;  // what is likely not what the user meant
};

Workload make_workload(const WorkloadSpec& spec, const ArrivalSpec& arrival, uint64_t seed,
                       const std::string& origin);

}  // namespace isim::trace
