// Synthetic session generator (the six InferCept intercept kinds by default) and bootstrap
// resampling of a real trace.
//
// Contract:
// - A GeneratorConfig is a weighted mix of session kinds. Each generated session picks a kind by
//   share, draws `calls` intercepts, a prompt, and per segment an output; each intercept draws a
//   duration and the tokens it returns (the next segment's input). With `human_turn` set, the
//   intercepts alternate tool call, human turn, tool call, ... (as in InferCept's tts/image
//   sessions).
// - Distributions (Dist, traces/dist.h): normal, lognormal, exponential or geometric, clamped
//   to [min, max]; token counts and calls are then rounded to the nearest integer. Clamping moves
//   the realised mean when the bounds cut into the distribution (e.g. the 60 s human-turn cap).
//   A prompt or an output below 1 token counts as 1 (no session runs without a prompt, no
//   segment decodes nothing); returned tokens may be 0. A duration draw is capped so that the
//   session's intercepts add up to at most kMaxSeconds (traces/limits.h, the limit on a time).
// - Every session is truncated to max_context (truncate_to_context), so none exceeds it.
// - generate(): ids "g0", "g1", ...; arrival_s = 0 (an arrival process assigns times). The same
//   config and seed give the same trace on every platform; the first n sessions do not depend on
//   how many are generated.
// - bootstrap(): n sessions drawn uniformly with replacement; the k-th draw of session <id> gets
//   id "<id>#<k>" (k = draw index, so ids are unique) and arrival_s = 0. A draw of a forked
//   session loses its fork (its parent's id names no draw), keeping its other context signals.
//   Copies share their source session's segments (trace::SharedList) until one is written.
// - The defaults, traces/generators/infercept-mix.yaml, equal default_generator_config().
// - Bad config: InputError `FILE: KEY: reason` (FILE:LINE where the YAML gives a line), unknown
//   keys list the valid ones.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "traces/dist.h"
#include "traces/session.h"

namespace isim {
class YamlMap;
}

namespace isim::trace {

struct InterceptSpec {
  std::string kind;
  Dist duration_s;
  Dist returned;  // tokens returned into the context

  bool operator==(const InterceptSpec&) const = default;
};

struct SessionKind {
  std::string name;
  double share = 1;  // relative weight in the mix
  Dist calls;        // intercepts per session
  Dist prompt;       // tokens of segment 0's input
  Dist output;       // tokens decoded per segment
  InterceptSpec intercept;
  std::optional<InterceptSpec> human_turn;

  bool operator==(const SessionKind&) const = default;
};

struct GeneratorConfig {
  int64_t max_context = 2048;
  std::vector<SessionKind> mix;

  bool operator==(const GeneratorConfig&) const = default;
};

GeneratorConfig default_generator_config();
GeneratorConfig load_generator_config(const std::string& path);
// Semantic checks (shares, sds, bounds, names); `where` prefixes messages.
void validate_generator_config(const GeneratorConfig& c, const std::string& where);
// The optional `max_context` key of a generator's YAML (an integer >= 2; `def` when absent).
int64_t read_max_context(const YamlMap& m, int64_t def);

Trace generate(const GeneratorConfig& c, int64_t sessions, uint64_t seed);
Trace bootstrap(const Trace& source, int64_t n, uint64_t seed);

// Cuts a session so that its context (resets counted, as in Session::max_context) never exceeds
// max_context (>= 2): the prompt is capped at max_context - 1, a segment's output is shortened
// to fit, segments without room to decode one token are dropped, and the (new) last segment
// loses its intercept. Prefix hashes beyond the capped prompt's ceil(prompt / block_tokens)
// blocks are dropped with it, and the signals stay valid: a fork shares at most the capped
// prompt, retention ranges are clipped to the capped prompt, and a session that ended with an end
// event ends with one on its new last segment (when that segment carries no other event).
void truncate_to_context(Session& s, int64_t max_context);

}  // namespace isim::trace
