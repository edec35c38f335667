// Simulated time: int64 nanoseconds everywhere. Never compare double times with an epsilon.
#pragma once

#include <cmath>
#include <cstdint>

namespace isim::sim {

using Nanos = int64_t;

constexpr Nanos kNanosPerSecond = 1'000'000'000;
constexpr Nanos kForever = INT64_MAX;  // a horizon no event reaches

// Rounds to the nearest nanosecond (ties away from zero), so conversions are deterministic.
inline Nanos from_seconds(double s) {
  return static_cast<Nanos>(std::llround(s * 1e9));
}
inline Nanos from_ms(double ms) {
  return static_cast<Nanos>(std::llround(ms * 1e6));
}
inline Nanos from_us(double us) {
  return static_cast<Nanos>(std::llround(us * 1e3));
}
inline double to_seconds(Nanos t) {
  return static_cast<double>(t) / 1e9;
}

}  // namespace isim::sim
