// The ranges every trace reader enforces on token counts and times, so that no later
// arithmetic (a session's context, block counts, int64 nanoseconds in sim/time.h) can overflow.
// README.md ("Traces") states them for users.
//
// Contract:
// - A token count read from a trace (a segment's input or output, a prompt or completion length,
//   a context event's tokens, a block size) is an integer in [0, kMaxTokens]; readers raise or
//   reject smaller values as their format says. A session's context is then at most
//   2 x kMaxTokens per segment, far inside int64.
// - A time read from a trace (an arrival, an intercept's duration, a timestamp relative to the
//   trace's start) is finite and in [0, kMaxSeconds], and so is a session's arrival plus all of
//   its intercepts. kMaxSeconds is under half of what int64 nanoseconds hold (about 292 years), so
//   the run's own time (queueing, forward passes) has the rest.
// - A count of sessions to generate (trace.sessions, `trace gen --sessions`) is at most
//   kMaxSessions: about 100 times the largest shipped bench, and a few GB of sessions.
// - Violations are InputErrors naming the file, the line (or session) and the field, with the
//   limit; too_many_tokens and too_many_seconds give the reason text.
#pragma once

#include <cstdint>
#include <string>

#include <fmt/format.h>

namespace isim::trace {

inline constexpr int64_t kMaxTokens = 1'000'000'000;  // 10^9 tokens
inline constexpr double kMaxSeconds = 4e9;            // about 126 years
inline constexpr int64_t kMaxSessions = 10'000'000;   // sessions a generator may draw

// "expected at most 1000000000 tokens (the limit on a token count), got SHOWN".
inline std::string too_many_tokens(const std::string& shown) {
  return fmt::format("expected at most {} tokens (the limit on a token count), got {}", kMaxTokens,
                     shown);
}

// The reason for a time above kMaxSeconds, in the field's unit: `per_second` units make one
// second (1 for seconds, 1000 for milliseconds, 1e9 for nanoseconds).
inline std::string too_many_seconds(const std::string& shown, double per_second = 1,
                                    const char* unit = "s") {
  return fmt::format("expected at most {:.0f} {} (about 126 years, the limit on a time), got {}",
                     kMaxSeconds * per_second, unit, shown);
}

}  // namespace isim::trace
