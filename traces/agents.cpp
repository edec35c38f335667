#include "traces/agents.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "core/input_error.h"
#include "core/rng.h"
#include "core/strict_yaml.h"
#include "traces/agents_internal.h"
#include "traces/limits.h"

namespace isim::trace {

// ---- Located ---------------------------------------------------------------------------------

Located::Located(std::string where) : where_(std::move(where)) {}
Located::Located(std::string file, const YAML::Node& root) : where_(std::move(file)) {
  nodes_[""] = root;
}

void Located::note(const std::string& key, const YAML::Node& n) {
  nodes_[key] = n;
}

std::string Located::loc(std::string key) const {
  for (;;) {
    auto it = nodes_.find(key);
    if (it != nodes_.end() && it->second.Mark().line >= 0)
      return fmt::format("{}:{}", where_, it->second.Mark().line + 1);
    if (key.empty()) return where_;
    const size_t cut = key.find_last_of(".[");
    key = cut == std::string::npos ? "" : key.substr(0, cut);
  }
}

void Located::fail(const std::string& key, const std::string& reason) const {
  throw InputError(loc(key) + ": " + key + ": " + reason);
}

Dist Located::read(const YamlMap& m, const std::string& key) {
  note(m.key_path(key), m.need(key, "a distribution {dist, mean, sd, min, max}"));
  return read_dist(m, key);
}

namespace {

// ---- semantic checks (one set, for files and for configs built in code) ----------------------

void check_kind(const AgentKind& k, const std::string& key, const Located& at) {
  if (k.name.empty()) at.fail(key, "a kind needs a non-empty name");
  if (k.system_prompt < 0) at.fail(key + ".system_prompt", "must be >= 0 tokens");
  if (k.max_context < 2 || k.max_context - 2 < k.system_prompt)
    at.fail(key + ".max_context",
            fmt::format("must be >= system_prompt + 2 = {} (the prompt and one output token)",
                        k.system_prompt + 2));
  at.dist(k.prompt, key + ".prompt");
  at.dist(k.steps, key + ".steps");
  at.dist(k.output, key + ".output");
  if (k.tool.kind.empty()) at.fail(key + ".tool.kind", "must be a non-empty string");
  at.time_dist(k.tool.duration_s, key + ".tool.duration_s");
  at.dist(k.tool.returned, key + ".tool.returned");
}

std::string kind_names(const AgentsConfig& c) {
  std::string s;
  for (const auto& k : c.kinds) s += (s.empty() ? "" : ", ") + k.name;
  return s;
}

void check_phase(const AgentPhase& p, const std::string& key, const AgentsConfig& c,
                 const Located& at) {
  if (!std::isfinite(p.duration_s) || p.duration_s <= 0)
    at.fail(key + ".duration_s", "must be a finite number of seconds > 0");
  if (!std::isfinite(p.rate) || p.rate < 0)
    at.fail(key + ".rate", "must be a finite number of sessions per second >= 0");
  double total = 0;
  std::set<std::string> seen;
  for (const auto& [name, w] : p.mix) {
    const std::string k = key + ".mix." + name;
    bool known = false;
    for (const auto& kind : c.kinds) known = known || kind.name == name;
    if (!known) at.fail(k, "unknown kind '" + name + "'; valid: " + kind_names(c));
    if (!seen.insert(name).second) at.fail(k, "listed twice");
    if (!std::isfinite(w) || w < 0) at.fail(k, "a weight must be finite and >= 0");
    total += w;
  }
  if (p.rate > 0 && !(total > 0 && std::isfinite(total)))
    at.fail(key + ".mix",
            "the weights must add up to a finite number > 0 (the phase has rate > 0)");
}

void check_config(const AgentsConfig& c, const Located& at) {
  if (c.block_tokens < 1) at.fail("block_tokens", "must be an integer >= 1");
  if (!std::isfinite(c.rate_scale) || c.rate_scale <= 0)
    at.fail("rate_scale", "must be a finite factor > 0");
  if (c.kinds.empty()) at.fail("kinds", "needs at least one session kind");
  std::set<std::string> names;
  for (const auto& k : c.kinds) {
    if (!names.insert(k.name).second) at.fail("kinds." + k.name, "duplicate kind name");
    check_kind(k, "kinds." + k.name, at);
    check_context(k, "kinds." + k.name, c, at);
  }
  if (c.phases.empty()) at.fail("phases", "needs at least one phase");
  bool busy = false;
  double schedule_s = 0;  // every arrival comes before the phases' end: within the time limit
  for (size_t i = 0; i < c.phases.size(); ++i) {
    const std::string key = fmt::format("phases[{}]", i);
    check_phase(c.phases[i], key, c, at);
    busy = busy || c.phases[i].rate > 0;
    schedule_s += c.phases[i].duration_s;
    if (schedule_s > kMaxSeconds)
      at.fail(key + ".duration_s",
              fmt::format("the phases up to here last {:g} s in all, past the limit of {:.0f} s "
                          "(about 126 years) on a time",
                          schedule_s, kMaxSeconds));
  }
  if (!busy) at.fail("phases", "every phase has rate 0: no session would arrive");
}

// ---- YAML ------------------------------------------------------------------------------------

// The keys of a map node in document order (empty when it is not a map: YamlMap then says so).
std::vector<std::string> keys_of(const YAML::Node& n, const std::string& file,
                                 const std::string& path) {
  std::vector<std::string> keys;
  if (!n.IsMap()) return keys;
  for (const auto& kv : n) keys.push_back(yaml_key(kv.first, file, path));
  return keys;
}

const std::vector<std::string> kKindKeys = {
    "max_context", "system_prompt", "prompt", "steps", "output", "tool", "summarise", "subagents"};

AgentKind read_kind(const YamlMap& m, const std::string& name, Located& at) {
  AgentKind k;
  k.name = name;
  at.note(m.path(), m.node());
  k.max_context = m.require<int64_t>("max_context", "an integer number of tokens");
  k.system_prompt = m.require<int64_t>("system_prompt", "an integer number of tokens");
  at.note(m.key_path("max_context"), m.value("max_context"));
  at.note(m.key_path("system_prompt"), m.value("system_prompt"));
  k.prompt = at.read(m, "prompt");
  k.steps = at.read(m, "steps");
  k.output = at.read(m, "output");
  const YamlMap tool = m.map("tool", {"kind", "duration_s", "returned"});
  at.note(tool.path(), tool.node());
  k.tool.kind = tool.require<std::string>("kind", "a string");
  k.tool.duration_s = at.read(tool, "duration_s");
  k.tool.returned = at.read(tool, "returned");
  read_context(m, k, at);
  return k;
}

AgentPhase read_phase(const YamlMap& m, const std::vector<std::string>& kinds, Located& at) {
  AgentPhase p;
  at.note(m.path(), m.node());
  p.duration_s = m.require<double>("duration_s", "seconds");
  p.rate = m.require<double>("rate", "sessions per second");
  at.note(m.key_path("duration_s"), m.value("duration_s"));
  at.note(m.key_path("rate"), m.value("rate"));
  if (!m.has("mix")) return p;
  const YAML::Node node = m.value("mix");
  const YamlMap mix(node, m.file(), m.key_path("mix"), kinds, "a map of kind names to weights");
  at.note(mix.path(), node);
  for (const auto& name : keys_of(node, m.file(), mix.path())) {
    p.mix.emplace_back(name, mix.require<double>(name, "a weight"));
    at.note(mix.key_path(name), mix.value(name));
  }
  return p;
}

// Kind indices and weights of a phase's mix.
struct Mix {
  std::vector<std::pair<size_t, double>> kinds;
  double total = 0;

  size_t pick(Rng& rng) const {
    const double u = rng.uniform01() * total;
    double cumulative = 0;
    for (const auto& [i, w] : kinds) {
      cumulative += w;
      if (u < cumulative) return i;
    }
    // Rounding in the running sum can leave u just above it: the last kind with weight wins.
    for (auto it = kinds.rbegin(); it != kinds.rend(); ++it)
      if (it->second > 0) return it->first;
    return kinds.back().first;
  }
};

int64_t resets_in(const Session& s) {
  return std::count_if(s.segments.begin(), s.segments.end(), [](const Segment& seg) {
    return seg.event.kind == ContextEventKind::kReset;
  });
}

Mix mix_of(const AgentPhase& p, const AgentsConfig& c) {
  Mix m;
  for (const auto& [name, w] : p.mix)
    for (size_t i = 0; i < c.kinds.size(); ++i)
      if (c.kinds[i].name == name) m.kinds.emplace_back(i, w);
  for (const auto& [i, w] : m.kinds) m.total += w;
  return m;
}

// One top-level session of kind k arriving at `at`, then its subagents.
void add_session(Trace& t, const AgentKind& k, const AgentsConfig& c, Rng& rng, double at,
                 int64_t index, AgentsReport& rep) {
  std::vector<ForkPoint> forks;
  t.push_back(agent_session(k, c.block_tokens, at, rng, &forks));
  t.back().id = fmt::format("{}-{}", k.name, index);
  rep.summaries += resets_in(t.back());
  add_subagents(t, t.size() - 1, k, forks, c, rep);
  ++rep.by_kind[k.name];
}

}  // namespace

AgentsConfig default_agents_config() {
  // Keep identical to traces/generators/agents.yaml, which gives each figure's source.
  AgentsConfig c;
  c.block_tokens = 64;
  c.rate_scale = 1;
  c.kinds = {
      {"coding",
       131072,
       14819,
       lognormal(3581, 2777, 1),
       lognormal(13.82, 19.08, 1, 100),
       lognormal(427.9, 703.8, 1),
       {"coding-tool", lognormal(47.64, 329.3, 0, 600), lognormal(1435, 4666, 1)}},
      {"math",
       32768,
       384,
       normal(21, 18, 1),
       normal(3.8, 1.3, 2),
       lognormal(1241, 1241, 1),
       {"math-tool", normal(8.3e-5, 4.8e-5), normal(21, 4.9)}},
      {"computer-use",
       32768,
       1234,
       normal(1089, 20, 1049),
       normal(10, 4, 1, 15),
       lognormal(249.6, 293.5, 1),
       {"gui-action", normal(3, 1, 2), normal(1049, 0)}},
  };
  c.phases = {
      {600, 0.25, {{"coding", 0.6}, {"math", 0.2}, {"computer-use", 0.2}}},
      {600, 0.25, {{"coding", 0.2}, {"math", 0.6}, {"computer-use", 0.2}}},
  };
  return c;
}

AgentsConfig load_agents_config(const std::string& path) {
  const YAML::Node doc = load_yaml_file(path, "agents config");
  const YamlMap root(doc, path, "", {"block_tokens", "rate_scale", "kinds", "phases"});
  Located at(path, doc);
  AgentsConfig c;
  c.block_tokens = root.get<int64_t>("block_tokens", c.block_tokens, "an integer number of tokens");
  c.rate_scale = root.get<double>("rate_scale", c.rate_scale, "a factor");
  for (const char* k : {"block_tokens", "rate_scale"})
    if (root.has(k)) at.note(k, root.value(k));
  std::vector<std::string> names;
  if (root.has("kinds")) {
    const YAML::Node kinds = root.value("kinds");
    names = keys_of(kinds, path, "kinds");
    const YamlMap km(kinds, path, "kinds", names, "a map of kind names to kinds");
    at.note("kinds", kinds);
    for (const auto& name : names) c.kinds.push_back(read_kind(km.map(name, kKindKeys), name, at));
  } else {  // the default kinds (traces/generators/agents.yaml): a file may give only phases
    c.kinds = default_agents_config().kinds;
    for (const auto& k : c.kinds) names.push_back(k.name);
  }
  const YAML::Node phases = root.need("phases", "a list of phases");
  if (!phases.IsSequence()) root.fail("phases", "expected a list of phases");
  at.note("phases", phases);
  for (size_t i = 0; i < phases.size(); ++i)
    c.phases.push_back(read_phase(
        YamlMap(phases[i], path, fmt::format("phases[{}]", i), {"duration_s", "rate", "mix"}),
        names, at));
  check_config(c, at);
  return c;
}

void validate_agents_config(const AgentsConfig& c, const std::string& where) {
  check_config(c, Located(where));
}

Trace generate_agents(const AgentsConfig& c, int64_t max_sessions, uint64_t seed,
                      AgentsReport* report) {
  validate_agents_config(c, "agents");
  if (max_sessions < 0)
    throw InputError(fmt::format("agents: sessions: must be >= 0, got {}", max_sessions));
  Rng rng(seed);
  Trace t;
  AgentsReport rep;
  int64_t top = 0;  // top-level sessions so far
  double start = 0;
  for (size_t p = 0; p < c.phases.size() && !rep.capped; ++p) {
    const AgentPhase& phase = c.phases[p];
    const double rate = phase.rate * c.rate_scale;
    const Mix mix = mix_of(phase, c);
    for (double at = start; rate > 0;) {
      at += rng.exponential(1.0 / rate);
      if (at >= start + phase.duration_s) break;
      add_session(t, c.kinds[mix.pick(rng)], c, rng, at, top++, rep);
      if (max_sessions > 0 && top == max_sessions) {
        rep.capped = true;
        rep.capped_at_s = at;
        rep.capped_phase = p;
        break;
      }
    }
    start += phase.duration_s;
  }
  for (const auto& phase : c.phases) rep.schedule_s += phase.duration_s;
  rep.sessions = static_cast<int64_t>(t.size());
  if (report) *report = std::move(rep);
  return t;
}

}  // namespace isim::trace
