// The `agents` trace source: sessions by kind, Poisson arrivals per phase, rate_scale, the cap,
// prefix sharing, determinism and every config error. Configs whose every draw is its mean
// (sd 0) make sessions exact; arrival times are replayed from the contract's stream: per
// session one exponential gap, one uniform for the kind and one 64-bit salt for its hashes.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <sstream>

#include "core/hash.h"
#include "core/input_error.h"
#include "core/rng.h"
#include "tests/cli_helpers.h"
#include "tests/traces/trace_helpers.h"
#include "traces/agents.h"
#include "traces/sources.h"

using namespace isim::trace;
using isim::Rng;  // core/rng.h

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

Dist fixed(double v) {
  return Dist{"normal", v, 0, 0, kInf};
}

// `tool`: prompt 130 + 100, 3 calls of 10 tokens, tools of 2 s returning 5; `calc` likewise
// with its own figures.
AgentsConfig fixed_config() {
  AgentsConfig c;
  c.block_tokens = 64;
  c.kinds = {{"tool", 1000, 130, fixed(100), fixed(3), fixed(10), {"t", fixed(2), fixed(5)}},
             {"calc", 1000, 64, fixed(6), fixed(2), fixed(50), {"c", fixed(0.5), fixed(1)}}};
  c.phases = {{10, 0.5, {{"tool", 1}}}, {20, 1, {{"calc", 1}}}};
  return c;
}

// The arrival times the contract gives `c` (every draw fixed, so 3 stream draws per session).
std::vector<double> replayed_arrivals(const AgentsConfig& c, uint64_t seed) {
  Rng rng(seed);
  std::vector<double> at;
  double start = 0;
  for (const auto& p : c.phases) {
    for (double t = start; p.rate > 0;) {
      t += rng.exponential(1.0 / (p.rate * c.rate_scale));
      if (t >= start + p.duration_s) break;
      rng.uniform01();
      rng.next();
      at.push_back(t);
    }
    start += p.duration_s;
  }
  return at;
}

std::string load_error(const std::string& yaml) {
  return isim::test::agents_config_error(yaml, "agents-config");
}

// A valid config file; `kinds` and `phases` replace their sections.
std::string config_text(const std::string& kinds, const std::string& phases) {
  return "kinds:\n" + kinds + "phases:\n" + phases;
}
const std::string kKind =
    "  k:\n"
    "    max_context: 100\n"
    "    system_prompt: 10\n"
    "    prompt: {mean: 5, sd: 0}\n"
    "    steps: {mean: 2, sd: 0}\n"
    "    output: {mean: 3, sd: 0}\n"
    "    tool: {kind: t, duration_s: {mean: 1, sd: 0}, returned: {mean: 4, sd: 0}}\n";
const std::string kPhase = "  - {duration_s: 5, rate: 1, mix: {k: 1}}\n";

}  // namespace

TEST_CASE("agents: the shipped YAML equals default_agents_config()") {
  const AgentsConfig loaded =
      load_agents_config(isim::test::source_dir() + "/traces/generators/agents.yaml");
  const AgentsConfig def = default_agents_config();
  REQUIRE(loaded.kinds.size() == def.kinds.size());
  for (size_t i = 0; i < def.kinds.size(); ++i) {
    CAPTURE(def.kinds[i].name);
    CHECK(loaded.kinds[i] == def.kinds[i]);
  }
  CHECK(loaded.phases == def.phases);
  CHECK(loaded == def);
  CHECK(def.kinds[0].name == "coding");
  CHECK(def.kinds[1].name == "math");
  CHECK(def.kinds[2].name == "computer-use");
}

TEST_CASE("agents: a session is its kind's figures, with the kind's prefix hashes") {
  const Trace t = generate_agents(fixed_config(), 0, 7);
  REQUIRE(!t.empty());
  const Session& s = t[0];
  CHECK(s.id == "tool-0");
  // Prompt 130 + 100; 3 calls; two tool intercepts returning 5 tokens each.
  const std::vector<Segment> want = {
      {230, 10, Intercept{"t", 2}}, {5, 10, Intercept{"t", 2}}, {5, 10, std::nullopt}};
  CHECK(s.segments == want);
  // ceil(230 / 64) = 4 hashes; floor(130 / 64) = 2 of them are the kind's system prompt.
  REQUIRE(s.prefix.hashes.size() == 4);
  CHECK(s.prefix.block_tokens == 64);
  const uint64_t kind = isim::fnv1a("agents/tool");
  CHECK(s.prefix.hashes[0] == isim::splitmix64(kind + 0));
  CHECK(s.prefix.hashes[1] == isim::splitmix64(kind + 1));
  // The session's own blocks come from its salt, the third draw of its stream.
  Rng rng(7);
  rng.uniform01();
  rng.uniform01();
  const uint64_t salt = rng.next();
  CHECK(s.prefix.hashes[2] == isim::splitmix64(salt + 2));
  CHECK(s.prefix.hashes[3] == isim::splitmix64(salt + 3));
}

TEST_CASE("agents: sessions arrive as a Poisson process per phase, kinds by its mix") {
  const AgentsConfig c = fixed_config();
  const Trace t = generate_agents(c, 0, 11);
  const std::vector<double> want = replayed_arrivals(c, 11);
  REQUIRE(t.size() == want.size());
  size_t tools = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    CAPTURE(i);
    CHECK(t[i].arrival_s == want[i]);
    const bool first = t[i].arrival_s < 10;
    CHECK(t[i].id == fmt::format("{}-{}", first ? "tool" : "calc", i));
    CHECK(t[i].arrival_s < 30);
    tools += first;
    if (!first) {
      const std::vector<Segment> calc = {{70, 50, Intercept{"c", 0.5}}, {1, 50, std::nullopt}};
      CHECK(t[i].segments == calc);
    }
  }
  // About 5 coding and 20 calc sessions; both phases have some.
  CHECK(tools > 0);
  CHECK(tools < t.size());
  AgentsReport rep;
  generate_agents(c, 0, 11, &rep);
  CHECK(rep.sessions == static_cast<int64_t>(t.size()));
  CHECK(rep.by_kind.at("tool") == static_cast<int64_t>(tools));
  CHECK(rep.schedule_s == 30);
  CHECK(!rep.capped);
}

TEST_CASE("agents: rate_scale divides every gap; an idle phase has no arrivals") {
  AgentsConfig one = fixed_config();
  one.phases = {{10, 0.5, {{"tool", 1}}}};
  AgentsConfig two = one;
  two.rate_scale = 2;  // rate 1: each exponential gap exactly halves (mean 2 -> 1)
  const Trace a = generate_agents(one, 0, 5), b = generate_agents(two, 0, 5);
  REQUIRE(b.size() >= a.size());
  for (size_t i = 0; i < a.size(); ++i) CHECK(b[i].arrival_s == a[i].arrival_s / 2);
  for (const auto& s : b) CHECK(s.arrival_s < 10);
  // The source multiplies the config's rate_scale by the request's.
  const LoadedTrace l =
      trace_source_registry()
          .create("agents", "test")
          ->load({isim::test::source_dir() + "/traces/generators/agents.yaml", 0, 5, 0, 2});
  AgentsConfig def = default_agents_config();
  def.rate_scale = 2;
  CHECK(l.trace == generate_agents(def, 0, 5));

  AgentsConfig idle = fixed_config();
  idle.phases = {{10, 0, {}}, {10, 1, {{"calc", 1}}}};
  for (const auto& s : generate_agents(idle, 0, 3)) CHECK(s.arrival_s >= 10);
}

TEST_CASE("agents: the same seed gives the same trace; the cap gives its prefix") {
  const AgentsConfig c = default_agents_config();
  const Trace t = generate_agents(c, 0, 42);
  CHECK(t == generate_agents(c, 0, 42));
  CHECK(t != generate_agents(c, 0, 43));
  AgentsReport rep;
  const Trace capped = generate_agents(c, 3, 42, &rep);
  REQUIRE(capped.size() == 3);
  CHECK(capped == Trace(t.begin(), t.begin() + 3));
  CHECK(rep.capped);
  CHECK(rep.capped_at_s == t[2].arrival_s);
  CHECK(rep.capped_phase == 0);
  // The default schedule: 0.25 sessions/s for 1,200 s, about 300 sessions.
  CHECK(t.size() > 200);
  CHECK(t.size() < 400);
}

TEST_CASE("agents: one kind shares its system prompt blocks, nothing else") {
  const Trace t = generate_agents(default_agents_config(), 60, 9);
  std::map<std::string, std::vector<const Session*>> by_kind;
  for (const auto& s : t) by_kind[s.id.substr(0, s.id.rfind('-'))].push_back(&s);
  REQUIRE(by_kind.size() == 3);
  const std::map<std::string, size_t> shared = {
      {"coding", 14819 / 64}, {"math", 384 / 64}, {"computer-use", 1234 / 64}};
  std::map<uint64_t, int> owners;      // hash -> how many sessions have it
  for (const auto& entry : by_kind) {  // not a structured binding: CAPTURE takes it by lambda
    const auto& kind = entry.first;
    const auto& sessions = entry.second;
    CAPTURE(kind);
    const Session& a = *sessions[0];
    const size_t n = shared.at(kind);
    for (const Session* s : sessions) {
      const int64_t prompt = s->segments[0].input;
      CHECK(static_cast<int64_t>(s->prefix.hashes.size()) == (prompt + 63) / 64);
      CHECK(std::equal(a.prefix.hashes.begin(), a.prefix.hashes.begin() + n,
                       s->prefix.hashes.begin()));
      for (size_t j = n; j < s->prefix.hashes.size(); ++j) ++owners[s->prefix.hashes[j]];
    }
  }
  for (const auto& [h, n] : owners) CHECK(n == 1);
  CHECK(by_kind["coding"][0]->prefix.hashes[0] != by_kind["math"][0]->prefix.hashes[0]);
}

TEST_CASE("agents: coding is prefill-heavy, math decode-heavy, computer-use in between") {
  std::map<std::string, std::pair<double, double>> tokens;  // kind -> (prefilled, decoded)
  for (const auto& s : generate_agents(default_agents_config(), 0, 1)) {
    auto& [in, out] = tokens[s.id.substr(0, s.id.rfind('-'))];
    in += static_cast<double>(s.segments[0].input + s.returned_tokens());
    out += static_cast<double>(s.total_output());
  }
  const double coding = tokens["coding"].first / tokens["coding"].second;
  const double cu = tokens["computer-use"].first / tokens["computer-use"].second;
  const double math = tokens["math"].first / tokens["math"].second;
  MESSAGE("prefilled / decoded tokens: coding " << coding << ", computer-use " << cu << ", math "
                                                << math);
  CHECK(coding > cu);
  CHECK(cu > 1);
  CHECK(math < 0.5);
}

TEST_CASE("agents: max_context cuts a session") {
  AgentsConfig c = fixed_config();
  c.kinds[0].max_context = 250;  // 230 + 10, then 5 in: room for 5 more tokens
  c.phases = {{10, 0.5, {{"tool", 1}}}};
  const Trace t = generate_agents(c, 1, 2);
  REQUIRE(t.size() == 1);
  const std::vector<Segment> want = {{230, 10, Intercept{"t", 2}}, {5, 5, std::nullopt}};
  CHECK(t[0].segments == want);
  CHECK(t[0].max_context() == 250);
}

TEST_CASE("agents: config errors name the file, line and key") {
  CHECK(load_error(config_text(kKind, kPhase)) == "");
  CHECK(load_error("kinds: {}\nphases: []\nrate: 1\n") ==
        "a.yaml:3: rate: unknown key; valid keys: block_tokens, rate_scale, kinds, phases");
  // Without `kinds:` the default kinds (agents.yaml's, in its order) serve the phases.
  CHECK(load_error("phases: []\n") == "a.yaml:1: phases: needs at least one phase");
  const auto only = isim::test::scratch("agents-no-kinds") / "a.yaml";
  isim::test::write_file(only, "phases: [{duration_s: 10, rate: 1, mix: {math: 1}}]\n");
  const AgentsConfig c = load_agents_config(only.string());
  REQUIRE(c.kinds.size() == 3);
  CHECK((c.kinds[0].name == "coding" && c.kinds[1].name == "math" &&
         c.kinds[2].name == "computer-use"));
  CHECK(load_error("kinds: [a]\nphases: []\n") ==
        "a.yaml:1: kinds: expected a map of kind names to kinds, got a list");
  CHECK(load_error(config_text(kKind + "    extra: 1\n", kPhase)) ==
        "a.yaml:9: kinds.k.extra: unknown key; valid keys: max_context, system_prompt, prompt, "
        "steps, output, tool, summarise, subagents");
  CHECK(load_error(config_text("  k: {max_context: 100}\n", kPhase)) ==
        "a.yaml:2: kinds.k.system_prompt: missing (expected an integer number of tokens)");
  std::string k = kKind;
  CHECK(load_error(config_text(k.replace(k.find("100"), 3, "1.5"), kPhase)) ==
        "a.yaml:3: kinds.k.max_context: expected an integer number of tokens, got '1.5'");
  k = kKind;
  CHECK(load_error(config_text(k.replace(k.find("100"), 3, "11"), kPhase)) ==
        "a.yaml:3: kinds.k.max_context: must be >= system_prompt + 2 = 12 (the prompt and one "
        "output token)");
  k = kKind;
  CHECK(load_error(config_text(k.replace(k.find("10\n"), 2, "-1"), kPhase)) ==
        "a.yaml:4: kinds.k.system_prompt: must be >= 0 tokens");
  k = kKind;
  CHECK(load_error(config_text(
            k.replace(k.find("{mean: 5, sd: 0}"), 16, "{mean: 0, sd: 1, dist: lognormal}"),
            kPhase)) == "a.yaml:5: kinds.k.prompt.mean: must be > 0 for dist lognormal");
  k = kKind;
  CHECK(load_error(config_text(k.replace(k.find("kind: t"), 7, "kind: ''"), kPhase)) ==
        "a.yaml:8: kinds.k.tool.kind: must be a non-empty string");
  k = kKind;
  CHECK(load_error(config_text(k.replace(k.find("returned"), 8, "return"), kPhase)) ==
        "a.yaml:8: kinds.k.tool.return: unknown key; valid keys: kind, duration_s, returned");
  // Found by tests/fuzz (target agents): a tool duration of mean 8.3e35 s loaded, and the trace
  // it generated could not be written.
  k = kKind;
  CHECK(load_error(config_text(
            k.replace(k.find("duration_s: {mean: 1"), 20, "duration_s: {mean: 8.3e35"), kPhase)) ==
        "a.yaml:8: kinds.k.tool.duration_s.mean: expected at most 4000000000 s (about 126 years, "
        "the limit on a time), got 8.3e+35");
  CHECK(load_error("kinds:\n" + kKind + "phases: {a: 1}\n") ==
        "a.yaml:9: phases: expected a list of phases");
  CHECK(load_error(config_text(kKind, "  - {rate: 1, mix: {k: 1}}\n")) ==
        "a.yaml:10: phases[0].duration_s: missing (expected seconds)");
  CHECK(load_error(config_text(kKind, "  - {duration_s: 0, rate: 1, mix: {k: 1}}\n")) ==
        "a.yaml:10: phases[0].duration_s: must be a finite number of seconds > 0");
  CHECK(load_error(config_text(kKind, kPhase + "  - {duration_s: 5, rate: -1, mix: {k: 1}}\n")) ==
        "a.yaml:11: phases[1].rate: must be a finite number of sessions per second >= 0");
  CHECK(load_error(config_text(kKind, "  - {duration_s: 5, rate: 1, mix: {j: 1}}\n")) ==
        "a.yaml:10: phases[0].mix.j: unknown key; valid keys: k");
  CHECK(load_error(config_text(kKind, "  - {duration_s: 5, rate: 1, mix: {k: -2}}\n")) ==
        "a.yaml:10: phases[0].mix.k: a weight must be finite and >= 0");
  CHECK(load_error(config_text(kKind, "  - {duration_s: 5, rate: 1, mix: {k: 0}}\n")) ==
        "a.yaml:10: phases[0].mix: the weights must add up to a finite number > 0 (the phase has "
        "rate > 0)");
  CHECK(load_error(config_text(kKind, "  - {duration_s: 5, rate: 1}\n")) ==
        "a.yaml:10: phases[0].mix: the weights must add up to a finite number > 0 (the phase has "
        "rate > 0)");
  CHECK(load_error(config_text(kKind, "  - {duration_s: 5, rate: 1, mix: [k]}\n")) ==
        "a.yaml:10: phases[0].mix: expected a map of kind names to weights, got a list");
  CHECK(load_error(config_text(kKind, "  - {duration_s: 5, rate: 0}\n")) ==
        "a.yaml:10: phases: every phase has rate 0: no session would arrive");
  CHECK(load_error(config_text(kKind, "  []\n")) == "a.yaml:10: phases: needs at least one phase");
  CHECK(load_error("block_tokens: 0\n" + config_text(kKind, kPhase)) ==
        "a.yaml:1: block_tokens: must be an integer >= 1");
  CHECK(load_error("rate_scale: 0\n" + config_text(kKind, kPhase)) ==
        "a.yaml:1: rate_scale: must be a finite factor > 0");
  CHECK(load_error(config_text(kKind + kKind, kPhase)) == "a.yaml:9: kinds.k: duplicate key");
  CHECK(load_error("kinds: {}\nphases:\n  - {duration_s: 5, rate: 1}\n") ==
        "a.yaml:1: kinds: needs at least one session kind");
}

TEST_CASE("agents: a config built in code gets the same checks") {
  AgentsConfig c = fixed_config();
  c.phases[0].mix = {{"tool", 1}, {"nope", 1}};
  CHECK_THROWS_WITH_AS(validate_agents_config(c, "agents"),
                       "agents: phases[0].mix.nope: unknown kind 'nope'; valid: tool, calc",
                       isim::InputError);
  c.phases[0].mix = {{"tool", 1}, {"tool", 1}};
  CHECK_THROWS_WITH_AS(validate_agents_config(c, "agents"),
                       "agents: phases[0].mix.tool: listed twice", isim::InputError);
  c = fixed_config();
  c.kinds[1].name = "tool";
  CHECK_THROWS_WITH_AS(validate_agents_config(c, "agents"),
                       "agents: kinds.tool: duplicate kind name", isim::InputError);
  CHECK_THROWS_WITH_AS(generate_agents(fixed_config(), -1, 1),
                       "agents: sessions: must be >= 0, got -1", isim::InputError);
  CHECK_THROWS_WITH_AS(trace_source_registry().create("agents", "t")->load({"", 0, 1, 0, -1}),
                       "agents: rate_scale: must be a finite factor > 0, got -1", isim::InputError);
}

TEST_CASE("agents: the source notes that it sets arrivals, and the cap") {
  const LoadedTrace t = trace_source_registry().create("agents", "t")->load({"", 5, 1, 0, 1});
  CHECK(t.trace.size() == 5);
  REQUIRE(t.notes.size() == 2);
  CHECK(t.notes[0].find("run it with arrival: {process: replay}") != std::string::npos);
  CHECK(t.notes[1].find("stopped at the cap of 5 sessions") != std::string::npos);
}

TEST_CASE("agents: a session ends within the limit on a time, and so do the phases") {
  // Tool calls of 3e9 s each fit the 4e9 s limit; a session of three calls arriving at `at`
  // did not. Draws are now capped at what is left: 3e9 and then 4e9 - at - 3e9.
  AgentsConfig c = fixed_config();
  c.kinds[0].steps = fixed(3);
  c.kinds[0].tool.duration_s = fixed(3e9);
  c.phases = {{10, 0.5, {{"tool", 1}}}};
  const Trace t = generate_agents(c, 1, 7);
  REQUIRE(t.size() == 1);
  const Session& s = t[0];
  const double at = replayed_arrivals(c, 7).at(0);
  CHECK(s.arrival_s == at);
  REQUIRE(s.segments.size() == 3);
  CHECK(s.segments[0].intercept->duration_s == 3e9);
  CHECK(s.segments[1].intercept->duration_s == 4e9 - (at + 3e9));
  std::ostringstream out;
  write_jsonl(out, t);
  CHECK(isim::test::parse_jsonl_text(out.str()) == isim::test::as_written(t));

  c.phases = {{3e9, 0.5, {{"tool", 1}}}, {1e9, 0, {}}, {1, 0.5, {{"tool", 1}}}};
  CHECK_THROWS_WITH_AS(validate_agents_config(c, "agents"),
                       "agents: phases[2].duration_s: the phases up to here last 4e+09 s in all, "
                       "past the limit of 4000000000 s (about 126 years) on a time",
                       isim::InputError);
}

TEST_CASE("agents: intercepts summed as a reader sums them stay within the limit on a time") {
  // Found by tests/fuzz (regress-sum-rounds-past-limit): six tool calls of about 1e9 s each were
  // capped at 4e9 s - (arrival + the intercepts so far), but the reader adds arrival + d1 + d2
  // + ... in order, and that sum rounded to 4000000000.0000005 s: write_jsonl refused the
  // generated trace. The cap now follows the reader's sum and steps down by ulps.
  const std::string yaml =
      "kinds:\n"
      "  k:\n"
      "    max_context: 100000\n"
      "    system_prompt: 05\n"
      "    prompt: {mean: 5, sd: 0}\n"
      "    steps: {mean: 6, sd: 0}\n"
      "    output: {mean: 2, sd: 0}\n"
      "    tool: {kind: t, duration_s: {mean: 1e9, sd: 5}, returned: {mean: 5, sd: 0}}\n"
      "phases:\n"
      "  - {duration_s: 2, rate: 1, mix: {k: 1}}\n";
  const auto path = isim::test::write_file(isim::test::scratch("agents-ulp") / "a.yaml", yaml);
  const Trace t = generate_agents(load_agents_config(path), 3, 1);
  REQUIRE(!t.empty());
  for (const Session& s : t) {
    double end = s.arrival_s;
    for (const Segment& seg : s.segments)
      if (seg.intercept) end += seg.intercept->duration_s;
    CHECK(end <= 4e9);
  }
  std::ostringstream out;
  write_jsonl(out, t);
  CHECK(isim::test::parse_jsonl_text(out.str()) == isim::test::as_written(t));
}

TEST_CASE("agents: a config of tens of thousands of steps generates a trace that reads back") {
  // The fuzz harness skips the round trip above 20,000 segments (too slow under ASan for its
  // 5 s limit); this input (regress-timeout-many-steps) is checked here: 2-token steps up to
  // max_context 100000, each session about 50,000 segments.
  const std::string yaml =
      "kinds:\n"
      "  k:\n"
      "    max_context: 100000\n"
      "    system_prompt: 63\n"
      "    prompt: {mean: 5, sd: 1}\n"
      "    steps: {mean: 1e118, sd: 1}\n"
      "    output: {mean: 2, sd: 0}\n"
      "    tool: {kind: t, duration_s: {mean: 3e9, sd: 0}, returned: {mean: 0, sd: 0}}\n"
      "phases:\n"
      "  - {duration_s: 5, rate: 1, mix: {k: 1}}\n";
  const auto path = isim::test::write_file(isim::test::scratch("agents-long") / "a.yaml", yaml);
  const Trace t = generate_agents(load_agents_config(path), 3, 1);
  REQUIRE(!t.empty());
  size_t segments = 0;
  for (const Session& s : t) segments += s.segments.size();
  CHECK(segments > 20000);
  std::ostringstream out;
  write_jsonl(out, t);
  CHECK(isim::test::parse_jsonl_text(out.str()) == isim::test::as_written(t));
}
