// Multi-turn conversation generator with Pensieve's (EuroSys 2025) ShareGPT workload parameters.
//
// Contract:
// - A conversation is one Session: segment j is user turn j, whose `input` is the user's new
//   message (the history is already in the context) and whose `output` is the reply; every turn
//   but the last is followed by an intercept {intercept_kind (default `user`), think time}.
// - Per conversation: turns ~ `turns`; per turn: input ~ `input`, output ~ `output`; per gap
//   between turns: duration ~ `think_time_s` (traces/dist.h families; token counts and turns are
//   rounded to integers; think times are capped so that they add up to at most kMaxSeconds,
//   traces/limits.h). The defaults and why each family was chosen are in multiturn.cpp and
//   traces/generators/pensieve-sharegpt.yaml, which must equal default_multiturn_config().
// - Every conversation is truncated to max_context (truncate_to_context, traces/generator.h).
// - generate_multiturn(): ids "c0", "c1", ...; arrival_s = 0 (apply_arrivals assigns times, e.g.
//   Poisson over conversations). The same config and seed give the same trace on every platform,
//   and the first n conversations do not depend on how many are generated.
// - Bad config: InputError `FILE:LINE: KEY: reason` (`FILE: KEY: reason` where YAML gives no
//   line); unknown keys list the valid ones.
#pragma once

#include <cstdint>
#include <string>

#include "traces/dist.h"
#include "traces/session.h"

namespace isim::trace {

struct MultiTurnConfig {
  int64_t max_context = 16384;
  Dist turns;         // turns per conversation (a draw below 1 counts as 1)
  Dist input;         // tokens of a user turn's new message (the first's: at least 1)
  Dist output;        // tokens of a reply (a draw below 1 counts as 1)
  Dist think_time_s;  // user think time between turns
  std::string intercept_kind = "user";

  bool operator==(const MultiTurnConfig&) const = default;
};

MultiTurnConfig default_multiturn_config();
MultiTurnConfig load_multiturn_config(const std::string& path);
// Semantic checks; `where` prefixes messages.
void validate_multiturn_config(const MultiTurnConfig& c, const std::string& where);

Trace generate_multiturn(const MultiTurnConfig& c, int64_t conversations, uint64_t seed);

}  // namespace isim::trace
