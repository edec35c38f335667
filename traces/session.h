// The workload model: a Session is one agent or conversation request; it is an ordered list of
// Segments, each of which prefills `input` tokens, decodes `output` tokens, and may then pause
// for an Intercept (a tool call, a user's turn, ...).
//
// Contract:
// - Token counts are non-negative; a session has at least one segment.
// - Segment 0's input is the prompt; segment k>0's input is what the intercept of segment k-1
//   returned. The context after segment k is the sum of all inputs and outputs so far.
// - Only a segment that is followed by another one may carry an intercept: the last segment
//   never does (a session ends when its last output token is decoded).
// - Intercept kinds are free-form names; durations are seconds, >= 0.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace isim::trace {

struct Intercept {
  std::string kind;
  double duration_s = 0.0;

  bool operator==(const Intercept&) const = default;
};

struct Segment {
  int64_t input = 0;
  int64_t output = 0;
  std::optional<Intercept> intercept;

  bool operator==(const Segment&) const = default;
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

struct Session {
  std::string id;
  double arrival_s = 0.0;
  std::vector<Segment> segments;
  PrefixHashes prefix = {};  // the initializer keeps `Session{id, arrival, segments}` warning-free

  bool operator==(const Session&) const = default;

  // Largest context the session ever reaches (all inputs and outputs).
  int64_t max_context() const {
    int64_t c = 0;
    for (const auto& s : segments) c += s.input + s.output;
    return c;
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
