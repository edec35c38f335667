// Rng: the project's one random number generator (xoshiro256**, seeded through splitmix64).
//
// Contract: the same seed gives the same sequence of 64-bit integers on every platform and
// compiler, so traces, generators and benchmarks are reproducible. That is why the std::
// distributions are never used: their algorithms are implementation-defined. The integer stream
// (next, below) is bit-identical everywhere; uniform01 is exact arithmetic on it. exponential and
// normal also call log1p/log/cos/sqrt, which every mainstream libm rounds the same way in
// practice but IEEE does not require; treat them as identical across glibc/libc++/macOS builds,
// and compare across exotic libms with a tolerance.
//
// Not thread-safe; give each thread or stream its own Rng.
#pragma once

#include <cmath>
#include <cstdint>
#include <numbers>
#include <stdexcept>

#include "core/hash.h"

namespace isim {

class Rng {
 public:
  explicit Rng(uint64_t seed) {
    // splitmix64 spreads any seed (0 included) over the full state; xoshiro must not be all zero.
    for (auto& s : state_) s = splitmix64(seed);
  }

  // 64 uniformly random bits.
  uint64_t next() {
    const uint64_t result = rotl(state_[1] * 5, 7) * 9;
    const uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = rotl(state_[3], 45);
    return result;
  }

  // Uniform in [0, 1): the top 53 bits, so every value is a multiple of 2^-53.
  double uniform01() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

  // Exponential with the given mean; log1p(-u) keeps precision for small u and u < 1 always.
  double exponential(double mean) { return -mean * std::log1p(-uniform01()); }

  // Normal by Box–Muller. Uses two uniforms per call and keeps no spare value, so the stream
  // position after a call never depends on call history.
  double normal(double mean, double sd) {
    const double u1 = 1.0 - uniform01();  // (0, 1]: log(0) is impossible
    const double u2 = uniform01();
    return mean + sd * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  }

  // Uniform integer in [0, n), unbiased (rejection of the short top interval). n must be > 0.
  uint64_t below(uint64_t n) {
    if (n == 0) throw std::invalid_argument("Rng::below(0)");
    const uint64_t threshold = (0 - n) % n;  // 2^64 mod n
    for (;;) {
      const uint64_t r = next();
      if (r >= threshold) return r % n;
    }
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  // The stateful form: mixes the state, then advances it by the splitmix64 increment.
  static uint64_t splitmix64(uint64_t& x) {
    const uint64_t z = isim::splitmix64(x);
    x += 0x9e3779b97f4a7c15ULL;
    return z;
  }

  uint64_t state_[4];
};

}  // namespace isim
