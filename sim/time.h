// Simulated time: int64 nanoseconds everywhere. Never compare double times with an epsilon.
//
// Contract: from_seconds, from_ms and from_us round to the nearest nanosecond (ties away from
// zero), so conversions are deterministic. They are checked: a time whose nanoseconds do not fit
// in int64 (|t| >= kMaxNanosAsDouble ns, about 292 years), or that is not a number, throws
// std::range_error instead of wrapping around. Readers keep user times far inside that range
// (traces/limits.h, the profile reader), so the throw marks a bug, not bad input.
#pragma once

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace isim::sim {

using Nanos = int64_t;

constexpr Nanos kNanosPerSecond = 1'000'000'000;
constexpr Nanos kForever = INT64_MAX;  // a horizon no event reaches
constexpr double kMaxNanosAsDouble = 9.2e18;  // just under 2^63 ns

// `ns` rounded; std::range_error naming `what` (e.g. "1e+300 s") when it does not fit.
inline Nanos checked_nanos(double ns, double value, const char* unit) {
  if (!(std::fabs(ns) < kMaxNanosAsDouble))
    throw std::range_error("sim time: " + std::to_string(value) + " " + unit +
                           " is outside int64 nanoseconds (about +-292 years)");
  return static_cast<Nanos>(std::llround(ns));
}
inline Nanos from_seconds(double s) {
  return checked_nanos(s * 1e9, s, "s");
}
inline Nanos from_ms(double ms) {
  return checked_nanos(ms * 1e6, ms, "ms");
}
inline Nanos from_us(double us) {
  return checked_nanos(us * 1e3, us, "us");
}
inline double to_seconds(Nanos t) {
  return static_cast<double>(t) / 1e9;
}

}  // namespace isim::sim
