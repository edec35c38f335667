#include "traces/generator.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

#include "core/input_error.h"
#include "core/rng.h"
#include "core/strict_yaml.h"

namespace isim::trace {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// ---- YAML (generator-specific parts) ------------------------------------------------------

InterceptSpec read_intercept(const YamlMap& m) {
  InterceptSpec s;
  s.kind = m.require<std::string>("kind", "a string");
  s.duration_s = read_dist(m, "duration_s");
  s.returned = read_dist(m, "returned");
  return s;
}

const std::vector<std::string> kInterceptKeys = {"kind", "duration_s", "returned"};

SessionKind read_kind(const YamlMap& m) {
  SessionKind k;
  k.name = m.require<std::string>("name", "a string");
  k.share = m.require<double>("share", "a number");
  k.calls = read_dist(m, "calls");
  k.prompt = read_dist(m, "prompt");
  k.output = read_dist(m, "output");
  k.intercept = read_intercept(m.map("intercept", kInterceptKeys));
  if (m.has("human_turn")) k.human_turn = read_intercept(m.map("human_turn", kInterceptKeys));
  return k;
}

// ---- validation ------------------------------------------------------------------------------

void check_intercept(const InterceptSpec& s, const std::string& where, const std::string& key) {
  if (s.kind.empty()) throw InputError(where + ": " + key + ".kind: must be a non-empty string");
  check_time_dist(s.duration_s, where, key + ".duration_s");
  check_dist(s.returned, where, key + ".returned");
}

// ---- drawing ---------------------------------------------------------------------------------

const SessionKind& pick(const std::vector<SessionKind>& mix, double total_share, Rng& rng) {
  const double u = rng.uniform01() * total_share;
  double cumulative = 0;
  for (const auto& k : mix) {
    cumulative += k.share;
    if (u < cumulative) return k;
  }
  // Rounding in the running sum can leave u just above it: the last kind with a share wins.
  for (auto it = mix.rbegin(); it != mix.rend(); ++it)
    if (it->share > 0) return *it;
  return mix.back();
}

Session generate_one(const SessionKind& k, int64_t max_context, Rng& rng) {
  Session s;
  const int64_t calls = draw_count(k.calls, rng);
  // A prompt or an output drawn below 1 is 1: the engine never starts a session with nothing to
  // prefill, and every segment decodes at least one token (traces/jsonl.h refuses both).
  s.segments.push_back(Segment{std::max<int64_t>(1, draw_count(k.prompt, rng)), 0, std::nullopt});
  int64_t context = 0;
  double waited = 0;  // the intercepts so far (the session arrives at 0)
  for (int64_t j = 0;; ++j) {
    Segment& seg = s.segments.back();
    seg.output = std::max<int64_t>(1, draw_count(k.output, rng));
    context += seg.input + seg.output;
    // Past max_context the rest would be truncated anyway; stopping also bounds the work.
    if (j == calls || context >= max_context) break;
    const InterceptSpec& spec = (k.human_turn && j % 2 == 1) ? *k.human_turn : k.intercept;
    seg.intercept = Intercept{spec.kind, draw_seconds(spec.duration_s, rng, waited)};
    waited += seg.intercept->duration_s;
    s.segments.push_back(Segment{draw_count(spec.returned, rng), 0, std::nullopt});
  }
  truncate_to_context(s, max_context);
  return s;
}

}  // namespace

GeneratorConfig default_generator_config() {
  // Keep identical to traces/generators/infercept-mix.yaml, which documents each figure's source.
  const Dist human_duration = lognormal(28.3, 18.2, 0, 60);
  const Dist human_returned = lognormal(30, 47);
  GeneratorConfig c;
  c.max_context = 2048;
  c.mix = {
      {"math",
       98,
       normal(2.8, 1.3, 1),
       normal(405, 18),
       lognormal(125, 139, 1),
       {"math", normal(8.3e-5, 4.8e-5), normal(21, 4.9)},
       std::nullopt},
      {"chat",
       65,
       normal(4.7, 2.0, 1),
       lognormal(99, 246, 1),
       lognormal(100, 125, 1),
       {"chat", lognormal(23.6, 17.4, 0, 60), lognormal(36, 83)},
       std::nullopt},
      {"qa",
       50,
       normal(3.1, 1.2, 1),
       normal(933, 7),
       lognormal(183, 137, 1),
       {"qa", normal(0.71, 0.2), normal(57, 8.5)},
       std::nullopt},
      {"tts",
       65,
       normal(6.9, 3.9, 1),
       lognormal(99, 246, 1),
       lognormal(30.5, 24.9, 1),
       {"tts", normal(6.1, 2.7), normal(8, 0)},
       InterceptSpec{"chat", human_duration, human_returned}},
      {"ve",
       54,
       normal(5.4, 1.0, 1),
       normal(1973, 0),
       normal(4, 0, 1),
       {"ve", normal(0.085, 0.015), lognormal(8.8, 9.1, 1)},
       std::nullopt},
      {"image",
       65,
       normal(6.7, 3.9, 1),
       lognormal(99, 246, 1),
       lognormal(30.5, 24.9, 1),
       {"image", normal(11.5, 0.9), normal(7, 0)},
       InterceptSpec{"chat", human_duration, human_returned}},
  };
  return c;
}

GeneratorConfig load_generator_config(const std::string& path) {
  const YamlMap root(load_yaml_file(path), path, "", {"max_context", "mix"});
  GeneratorConfig c;
  c.max_context = read_max_context(root, c.max_context);
  const YAML::Node mix = root.need("mix", "a list of session kinds");
  if (!mix.IsSequence()) root.fail("mix", "expected a list of session kinds");
  for (size_t i = 0; i < mix.size(); ++i)
    c.mix.push_back(read_kind(
        YamlMap(mix[i], path, fmt::format("mix[{}]", i),
                {"name", "share", "calls", "prompt", "output", "intercept", "human_turn"})));
  validate_generator_config(c, path);
  return c;
}

int64_t read_max_context(const YamlMap& m, int64_t def) {
  if (!m.has("max_context")) return def;
  const double v = m.require<double>("max_context", "a number");
  if (v != std::floor(v) || v < 2 || v > 1e15) m.fail("max_context", "expected an integer >= 2");
  return static_cast<int64_t>(v);
}

void validate_generator_config(const GeneratorConfig& c, const std::string& where) {
  if (c.max_context < 2) throw InputError(where + ": max_context: must be >= 2");
  if (c.mix.empty()) throw InputError(where + ": mix: needs at least one session kind");
  std::set<std::string> names;
  double total = 0;
  for (size_t i = 0; i < c.mix.size(); ++i) {
    const SessionKind& k = c.mix[i];
    const std::string key = fmt::format("mix[{}]", i);
    if (k.name.empty()) throw InputError(where + ": " + key + ".name: must be a non-empty string");
    if (!names.insert(k.name).second)
      throw InputError(where + ": " + key + ".name: duplicate name '" + k.name + "'");
    if (!std::isfinite(k.share) || k.share < 0)
      throw InputError(where + ": " + key + ".share: must be finite and >= 0");
    total += k.share;
    check_dist(k.calls, where, key + ".calls");
    check_dist(k.prompt, where, key + ".prompt");
    check_dist(k.output, where, key + ".output");
    check_intercept(k.intercept, where, key + ".intercept");
    if (k.human_turn) check_intercept(*k.human_turn, where, key + ".human_turn");
  }
  if (!(total > 0) || !std::isfinite(total))
    throw InputError(where + ": mix: the shares must add up to a finite number > 0");
}

Trace generate(const GeneratorConfig& c, int64_t sessions, uint64_t seed) {
  validate_generator_config(c, "generator");
  if (sessions < 0)
    throw InputError(fmt::format("generator: sessions: must be >= 0, got {}", sessions));
  double total = 0;
  for (const auto& k : c.mix) total += k.share;
  Rng rng(seed);
  Trace t;
  t.reserve(static_cast<size_t>(sessions));
  for (int64_t i = 0; i < sessions; ++i) {
    const SessionKind& k = pick(c.mix, total, rng);
    t.push_back(generate_one(k, c.max_context, rng));
    t.back().id = fmt::format("g{}", i);
  }
  return t;
}

Trace bootstrap(const Trace& source, int64_t n, uint64_t seed) {
  if (n < 0) throw InputError(fmt::format("bootstrap: n: must be >= 0, got {}", n));
  if (n > 0 && source.empty()) throw InputError("bootstrap: the source trace has no sessions");
  Rng rng(seed);
  Trace t;
  t.reserve(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    t.push_back(source[rng.below(source.size())]);  // shares the source's segments
    Session& s = t.back();
    s.id += fmt::format("#{}", k);
    s.arrival_s = 0;
    const auto& segs = std::as_const(s.segments);  // a read must not copy the segments
    if (!segs.empty() && segs[0].event.kind == ContextEventKind::kFork)
      s.segments[0].event = ContextEvent{};
  }
  return t;
}

namespace {

// Segment 0's input was capped: its fork and retention must fit in it.
void fit_prompt_signals(Segment& seg) {
  if (seg.event.kind == ContextEventKind::kFork)
    seg.event.tokens = std::min(seg.event.tokens, seg.input);
  std::erase_if(seg.retention, [&](const Retention& r) { return r.begin >= seg.input; });
  for (Retention& r : seg.retention) r.end = std::min(r.end, seg.input);
}

}  // namespace

void truncate_to_context(Session& s, int64_t max_context) {
  if (max_context < 2)
    throw InputError(fmt::format("max_context: must be >= 2, got {}", max_context));
  if (s.segments.empty()) return;
  const bool ended = s.segments.back().event.kind == ContextEventKind::kEnd;
  s.segments[0].input = std::min(s.segments[0].input, max_context - 1);
  fit_prompt_signals(s.segments[0]);
  if (s.prefix.block_tokens > 0) {
    const int64_t prompt = s.segments[0].input;
    const auto blocks = static_cast<size_t>(prompt / s.prefix.block_tokens +
                                            (prompt % s.prefix.block_tokens != 0 ? 1 : 0));
    if (s.prefix.hashes.size() > blocks) s.prefix.hashes.resize(blocks);
  }
  int64_t context = 0;
  for (size_t k = 0; k < s.segments.size(); ++k) {
    Segment& seg = s.segments[k];
    // A reset that fits keeps shared <= tokens < max_context - 1 <= the context before it, even
    // after the prompt was capped.
    if (seg.event.kind == ContextEventKind::kReset) context = seg.event.tokens;
    const int64_t room = max_context - context - seg.input;  // tokens left to decode
    if (room < 1) {                                          // k > 0: the prompt always fits
      s.segments.resize(k);
      break;
    }
    if (seg.output >= room) {
      seg.output = room;
      s.segments.resize(k + 1);
      break;
    }
    context += seg.input + seg.output;
  }
  s.segments.back().intercept.reset();
  if (ended && s.segments.back().event.kind == ContextEventKind::kNone)
    s.segments.back().event.kind = ContextEventKind::kEnd;
}

}  // namespace isim::trace
