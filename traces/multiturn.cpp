#include "traces/multiturn.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/input_error.h"
#include "core/rng.h"
#include "core/strict_yaml.h"
#include "traces/generator.h"

namespace isim::trace {

MultiTurnConfig default_multiturn_config() {
  // Keep identical to traces/generators/pensieve-sharegpt.yaml.
  constexpr double kInf = std::numeric_limits<double>::infinity();
  MultiTurnConfig c;
  c.max_context = 16384;  // Pensieve caps the context at 16K
  // Turns: geometric on {1, 2, ...} with ShareGPT's mean of 5.56. Only the mean is published;
  // the geometric is the maximum-entropy law on the positive integers with a given mean, and it
  // has the long tail of a few very long conversations.
  c.turns = Dist{"geometric", 5.56, 0, 1, kInf};
  // Tokens per turn: lognormal with ShareGPT's means (37.8 in, 204.6 out). Message lengths are
  // positive and right-skewed (short questions, the odd pasted document); the sds are not
  // published, so we assume a coefficient of variation of 1.5 for user messages and 1.0 for
  // replies. At least one token each (an empty turn is not a turn).
  c.input = Dist{"lognormal", 37.8, 56.7, 1, kInf};
  c.output = Dist{"lognormal", 204.6, 204.6, 1, kInf};
  // Think time: exponential with a 60 s mean, as in Pensieve (memoryless user returns).
  c.think_time_s = Dist{"exponential", 60, 0, 0, kInf};
  c.intercept_kind = "user";
  return c;
}

void validate_multiturn_config(const MultiTurnConfig& c, const std::string& where) {
  if (c.max_context < 2) throw InputError(where + ": max_context: must be >= 2");
  check_dist(c.turns, where, "turns");
  check_dist(c.input, where, "input");
  check_dist(c.output, where, "output");
  check_time_dist(c.think_time_s, where, "think_time_s");
  if (c.intercept_kind.empty())
    throw InputError(where + ": intercept_kind: must be a non-empty string");
}

MultiTurnConfig load_multiturn_config(const std::string& path) {
  const YamlMap root(load_yaml_file(path), path, "",
                     {"max_context", "turns", "input", "output", "think_time_s", "intercept_kind"});
  MultiTurnConfig c;
  c.max_context = read_max_context(root, c.max_context);
  c.turns = read_dist(root, "turns");
  c.input = read_dist(root, "input");
  c.output = read_dist(root, "output");
  c.think_time_s = read_dist(root, "think_time_s");
  c.intercept_kind = root.get<std::string>("intercept_kind", c.intercept_kind, "a string");
  validate_multiturn_config(c, path);
  return c;
}

Trace generate_multiturn(const MultiTurnConfig& c, int64_t conversations, uint64_t seed) {
  validate_multiturn_config(c, "multiturn generator");
  if (conversations < 0)
    throw InputError(
        fmt::format("multiturn generator: conversations: must be >= 0, got {}", conversations));
  Rng rng(seed);
  Trace t;
  t.reserve(static_cast<size_t>(conversations));
  for (int64_t i = 0; i < conversations; ++i) {
    Session s;
    s.id = fmt::format("c{}", i);
    const int64_t turns = std::max<int64_t>(1, draw_count(c.turns, rng));
    int64_t context = 0;
    double waited = 0;  // the think times so far (the conversation arrives at 0)
    for (int64_t j = 0; j < turns; ++j) {
      if (j > 0) {
        const double think = draw_seconds(c.think_time_s, rng, waited);
        s.segments.back().intercept = Intercept{c.intercept_kind, think};
        waited += think;
      }
      Segment seg;
      // The first turn's prompt and every output are at least 1 token (traces/generator.h).
      seg.input = std::max<int64_t>(j == 0 ? 1 : 0, draw_count(c.input, rng));
      seg.output = std::max<int64_t>(1, draw_count(c.output, rng));
      context += seg.input + seg.output;
      s.segments.push_back(seg);
      // Past max_context the rest would be truncated anyway; stopping also bounds the work.
      if (context >= c.max_context) break;
    }
    truncate_to_context(s, c.max_context);
    t.push_back(std::move(s));
  }
  return t;
}

}  // namespace isim::trace
