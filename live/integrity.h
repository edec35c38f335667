// Integrity primitives of live execution: block checksums, synthetic input tokens, and the
// tolerance that recomputed KV must meet.
//
// Contract:
// - block_checksum is a 64-bit hash of every byte of a block (all planes); any change to one
//   byte changes it (it mixes each 8-byte word with its index, then sums; tail bytes likewise).
// - input_token is a pure function of (session id, position, prefix): positions covered by the
//   trace's prefix hashes take their token from the hash of their trace block, so sessions that
//   share a prefix (equal hashes) share its tokens and its KV; other positions hash the
//   session id with the position. Always in [0, vocab).
// - within_tolerance(dtype, original, recomputed): |a - b| <= tol * (1 + |a|), with tol 0 for
//   fp32 (the CPU runner is batch invariant, so recompute is exact), 2^-6 for bf16 and 2^-9 for
//   fp16 (a few units in the last place of the 16-bit types, after layers of rounding).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/dtype.h"
#include "traces/session.h"

namespace isim::live {

uint64_t block_checksum(const std::vector<std::byte>& bytes);

int32_t input_token(const trace::Session& s, int64_t position, int32_t vocab);

double recompute_tolerance(kernels::Dtype dtype);
inline bool within_tolerance(double tol, float original, float recomputed) {
  const double a = original, b = recomputed;
  const double d = a > b ? a - b : b - a;
  return d <= tol * (1.0 + (a < 0 ? -a : a));
}

// Where position `p` of a session's token stream falls: segment k's input, or its outputs.
struct TokenPlace {
  int32_t segment = 0;
  bool output = false;
  int64_t index = 0;  // within the segment's input or outputs
};
TokenPlace place_of(const trace::Session& s, int64_t position);

}  // namespace isim::live
