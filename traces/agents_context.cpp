// One agent session's draws, with summarisation and subagents (traces/agents.h).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/hash.h"
#include "core/input_error.h"
#include "core/strict_yaml.h"
#include "traces/agents_internal.h"
#include "traces/generator.h"
#include "traces/limits.h"

namespace isim::trace {
namespace {

int64_t at_least_one(const Dist& d, Rng& rng) {
  return std::max<int64_t>(1, draw_count(d, rng));
}

// The kind's blocks of its system prompt, then the session's own (salted) ones; or, after a
// base, the base's blocks and then the session's own.
PrefixHashes prompt_hashes(const AgentKind& k, int64_t prompt, int64_t block, uint64_t salt,
                           const SessionBase* base) {
  PrefixHashes p{block, base ? base->hashes : std::vector<uint64_t>{}};
  const int64_t blocks = (prompt + block - 1) / block;
  const int64_t shared = base ? 0 : k.system_prompt / block;
  const uint64_t kind = fnv1a("agents/" + k.name);
  for (auto j = static_cast<int64_t>(p.hashes.size()); j < blocks; ++j)
    p.hashes.push_back(splitmix64((j < shared ? kind : salt) + static_cast<uint64_t>(j)));
  return p;
}

// The intercept after a step: a tool, or (drawn only when the kind has subagents and forks are
// listed) a wait for subagents, listed in `forks`. `used_s`: the session's arrival plus its
// intercepts so far.
Intercept step_intercept(const AgentKind& k, Rng& rng, std::vector<ForkPoint>* forks,
                         ForkPoint here, double used_s) {
  if (forks && k.subagents && rng.uniform01() < k.subagents->prob) {
    const Intercept wait{"subagent", draw_seconds(k.subagents->wait_s, rng, used_s)};
    here.count = at_least_one(k.subagents->count, rng);
    here.seed = rng.next();
    forks->push_back(here);
    return wait;
  }
  return {k.tool.kind, draw_seconds(k.tool.duration_s, rng, used_s)};
}

bool is_reset(const Segment& s) {
  return s.event.kind == ContextEventKind::kReset;
}

const AgentKind& kind_named(const AgentsConfig& c, const std::string& name) {
  for (const auto& k : c.kinds)
    if (k.name == name) return k;
  throw InputError("agents: subagents.kind: unknown kind '" + name + "'");  // checked before
}

}  // namespace

Session agent_session(const AgentKind& k, int64_t block, double start_s, Rng& rng,
                      std::vector<ForkPoint>* forks, const SessionBase* base) {
  Session s;
  s.arrival_s = start_s;
  const int64_t steps = at_least_one(k.steps, rng);
  const int64_t prompt = (base ? base->tokens : k.system_prompt) + at_least_one(k.prompt, rng);
  const int64_t keep = base ? base->keep : k.system_prompt;
  s.prefix = prompt_hashes(k, prompt, block, rng.next(), base);
  s.segments.push_back(Segment{prompt, 0, std::nullopt});
  int64_t context = 0, intact = prompt;
  double waited = 0;
  double end_s = start_s;  // arrival plus the intercepts so far, summed as a reader sums them
  for (int64_t j = 1;; ++j) {
    Segment& seg = s.segments.back();
    seg.output = at_least_one(k.output, rng);
    context += seg.input + seg.output;
    // Past max_context the rest would be truncated anyway; stopping also bounds the work.
    if (j == steps || context >= k.max_context) break;
    seg.intercept =
        step_intercept(k, rng, forks, {s.segments.size() - 1, context, intact, waited}, end_s);
    waited += seg.intercept->duration_s;
    end_s += seg.intercept->duration_s;
    Segment next{at_least_one(k.tool.returned, rng), 0, std::nullopt};
    if (k.summarise && context + next.input > k.summarise->at_tokens) {
      const int64_t tokens = keep + at_least_one(k.summarise->summary_tokens, rng);
      next.event = {ContextEventKind::kReset, tokens, keep, ""};
      context = tokens;
      intact = std::min(intact, keep);
    }
    s.segments.push_back(next);
  }
  truncate_to_context(s, k.max_context);
  if (!base) s.shared_prompt = std::min(k.system_prompt, s.segments[0].input);
  if (forks)
    std::erase_if(*forks, [&](const ForkPoint& f) { return f.segment + 1 >= s.segments.size(); });
  return s;
}

void add_subagents(Trace& t, size_t parent, const AgentKind& pk,
                   const std::vector<ForkPoint>& forks, const AgentsConfig& c, AgentsReport& rep) {
  if (forks.empty()) return;
  const Session p = t[parent];  // a copy: the pushes below move the trace
  const SubagentSpec& spec = *pk.subagents;
  const AgentKind& ck = kind_named(c, spec.kind);
  int n = 0;
  for (const ForkPoint& f : forks) {
    SessionBase base{f.context, {}, pk.system_prompt};
    const auto whole = static_cast<size_t>(std::min(f.intact, f.context) / c.block_tokens);
    base.hashes.assign(p.prefix.hashes.begin(),
                       p.prefix.hashes.begin() +
                           static_cast<std::ptrdiff_t>(std::min(whole, p.prefix.hashes.size())));
    Rng rng(f.seed);
    for (int64_t i = 0; i < f.count; ++i) {
      const double at = std::min(p.arrival_s + f.after_s, kMaxSeconds);
      Session s =
          agent_session(ck, c.block_tokens, at, rng, nullptr, spec.share_context ? &base : nullptr);
      s.id = fmt::format("{}/sub-{}", p.id, n++);
      const int64_t shared = spec.share_context ? std::min(f.context, s.segments[0].input) : 0;
      s.segments[0].event = {ContextEventKind::kFork, shared, 0, p.id};
      Segment& last = s.segments.back();
      if (s.segments.size() > 1 && last.event.kind == ContextEventKind::kNone)
        last.event.kind = ContextEventKind::kEnd;
      rep.summaries += std::count_if(s.segments.begin(), s.segments.end(), is_reset);
      ++rep.subagents;
      t.push_back(std::move(s));
    }
  }
}

void check_context(const AgentKind& k, const std::string& key, const AgentsConfig& c,
                   const Located& at) {
  if (const auto& m = k.summarise) {
    if (m->at_tokens < k.system_prompt + 2 || m->at_tokens >= k.max_context)
      at.fail(key + ".summarise.at_tokens",
              fmt::format("must be in [system_prompt + 2, max_context) = [{}, {}), got {}",
                          k.system_prompt + 2, k.max_context, m->at_tokens));
    at.dist(m->summary_tokens, key + ".summarise.summary_tokens");
  }
  if (const auto& m = k.subagents) {
    const std::string p = key + ".subagents";
    if (!std::isfinite(m->prob) || m->prob < 0 || m->prob > 1)
      at.fail(p + ".prob", fmt::format("must be a probability in [0, 1], got {}", m->prob));
    at.dist(m->count, p + ".count");
    at.time_dist(m->wait_s, p + ".wait_s");
    std::string names;
    bool known = false;
    for (const auto& other : c.kinds) {
      names += (names.empty() ? "" : ", ") + other.name;
      known = known || other.name == m->kind;
    }
    if (!known) at.fail(p + ".kind", "unknown kind '" + m->kind + "'; valid: " + names);
  }
}

void read_context(const YamlMap& m, AgentKind& k, Located& at) {
  if (m.has("summarise")) {
    const YamlMap s = m.map("summarise", {"at_tokens", "summary_tokens"});
    at.note(s.path(), s.node());
    SummariseSpec spec;
    spec.at_tokens = s.require<int64_t>("at_tokens", "an integer number of tokens");
    at.note(s.key_path("at_tokens"), s.value("at_tokens"));
    spec.summary_tokens = at.read(s, "summary_tokens");
    k.summarise = spec;
  }
  if (m.has("subagents")) {
    const YamlMap s = m.map("subagents", {"prob", "count", "kind", "share_context", "wait_s"});
    at.note(s.path(), s.node());
    SubagentSpec spec;
    spec.prob = s.require<double>("prob", "a probability");
    spec.count = at.read(s, "count");
    spec.kind = s.require<std::string>("kind", "a kind name");
    spec.share_context = s.require<bool>("share_context", "true or false");
    spec.wait_s = at.read(s, "wait_s");
    for (const char* key : {"prob", "kind", "share_context"})
      at.note(s.key_path(key), s.value(key));
    k.subagents = spec;
  }
}

}  // namespace isim::trace
