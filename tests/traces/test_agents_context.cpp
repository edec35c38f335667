// The `agents` source's context signals: summarisation resets and subagent forks (traces/agents.h),
// on configs whose every draw is its mean (sd 0), so sessions are exact; the defaults keep their
// bytes; the shipped agents-context.yaml is agents.yaml plus the new figures; every config error.
#include <doctest/doctest.h>

#include <limits>
#include <map>
#include <sstream>

#include "core/hash.h"
#include "core/input_error.h"
#include "core/sha256.h"
#include "tests/cli_helpers.h"
#include "tests/traces/trace_helpers.h"
#include "traces/agents.h"
#include "traces/jsonl.h"

using namespace isim::trace;

namespace {

Dist fixed(double v) {
  return Dist{"normal", v, 0, 0, std::numeric_limits<double>::infinity()};
}

// One 100 s phase of `tool` sessions (about 50): prompt 130 + 100, `steps` calls of 10 tokens,
// tools of 2 s returning `returned`; `calc` (in no mix): prompt 64 + 6, 2 calls of 50, tools of 0.5
// s returning 1.
AgentsConfig config(int64_t steps, double returned) {
  AgentsConfig c;
  c.block_tokens = 64;
  c.kinds = {
      {"tool", 1000, 130, fixed(100), fixed(steps), fixed(10), {"t", fixed(2), fixed(returned)}},
      {"calc", 1000, 64, fixed(6), fixed(2), fixed(50), {"c", fixed(0.5), fixed(1)}}};
  c.phases = {{100, 0.5, {{"tool", 1}}}};
  return c;
}

ContextEvent event(ContextEventKind kind, int64_t tokens = 0, int64_t shared = 0,
                   const std::string& parent = "") {
  return {kind, tokens, shared, parent};
}

// The semantics of traces/session.h's context events, checked on a whole trace.
void check_signals(const Trace& t) {
  std::map<std::string, double> arrival;
  for (const auto& s : t) arrival[s.id] = s.arrival_s;
  for (const auto& s : t) {
    CAPTURE(s.id);
    validate_session(s, s.id);
    int64_t context = 0;
    for (size_t k = 0; k < s.segments.size(); ++k) {
      const Segment& seg = s.segments[k];
      const ContextEvent& e = seg.event;
      if (e.kind == ContextEventKind::kReset) {
        CHECK(k >= 1);
        CHECK(e.shared <= e.tokens);
        CHECK(e.shared <= context);
        context = e.tokens;
      }
      if (e.kind == ContextEventKind::kFork) {
        CHECK(k == 0);
        CHECK(e.tokens <= seg.input);
        REQUIRE(arrival.contains(e.parent));
        CHECK(e.parent != s.id);
        CHECK(arrival[e.parent] <= s.arrival_s);
      }
      if (e.kind == ContextEventKind::kEnd) CHECK(k + 1 == s.segments.size());
      context += seg.input + seg.output;
    }
  }
}

std::string load_error(const std::string& yaml) {
  return isim::test::agents_config_error(yaml, "agents-context-config");
}

// A valid kind `k` (lines 2-8 of the file) with `more` appended to it, and one phase.
std::string with_kind(const std::string& more) {
  return "kinds:\n"
         "  k:\n"
         "    max_context: 100\n"
         "    system_prompt: 10\n"
         "    prompt: {mean: 5, sd: 0}\n"
         "    steps: {mean: 2, sd: 0}\n"
         "    output: {mean: 3, sd: 0}\n"
         "    tool: {kind: t, duration_s: {mean: 1, sd: 0}, returned: {mean: 4, sd: 0}}\n" +
         more + "phases:\n  - {duration_s: 5, rate: 1, mix: {k: 1}}\n";
}

}  // namespace

TEST_CASE("agents: without summarise and subagents the default trace keeps its bytes") {
  // sha256 of the default trace (seed 1) as the generator wrote it before either option existed.
  std::ostringstream os;
  write_jsonl(os, generate_agents(default_agents_config(), 0, 1));
  CHECK(isim::sha256_hex(os.str()) ==
        "60d14e9ab927da5e07ce088e44393c0dbd817e30d9c750cdbb933e0d3d3bd12e");
}

TEST_CASE("agents: a session summarises before its context would pass at_tokens") {
  AgentsConfig c = config(5, 50);
  c.kinds[0].max_context = 335;  // above the summarised session's 330, below its 480 tokens
  c.kinds[0].summarise = SummariseSpec{320, fixed(20)};
  AgentsReport rep;
  const Trace t = generate_agents(c, 1, 3, &rep);
  REQUIRE(t.size() == 1);
  // Context 240, 300; 300 + 50 > 320: reset to 130 + 20 = 150 keeping the 130; then 210, 270
  // (270 + 50 = 320 is not above), 330.
  const Intercept tool{"t", 2};
  const std::vector<Segment> want = {{230, 10, tool},
                                     {50, 10, tool},
                                     {50, 10, tool, event(ContextEventKind::kReset, 150, 130)},
                                     {50, 10, tool},
                                     {50, 10, std::nullopt}};
  CHECK(t[0].segments == want);
  CHECK(t[0].max_context() == 330);
  CHECK(rep.summaries == 1);
  CHECK(rep.subagents == 0);
  check_signals(t);
}

TEST_CASE("agents: a tool step can start subagents that fork from the parent's context") {
  AgentsConfig c = config(3, 5);
  c.kinds[0].subagents = SubagentSpec{1, fixed(2), "calc", true, fixed(7)};
  AgentsReport rep;
  const Trace t = generate_agents(c, 1, 4, &rep);
  REQUIRE(t.size() == 5);
  const Session& p = t[0];
  CHECK(p.id == "tool-0");
  const Intercept wait{"subagent", 7};
  CHECK(p.segments == std::vector<Segment>{{230, 10, wait}, {5, 10, wait}, {5, 10, std::nullopt}});
  // Two subagents after segment 0 (context 240), two after segment 1 (context 255, 7 s later).
  const std::vector<int64_t> context = {240, 240, 255, 255};
  for (size_t i = 0; i < 4; ++i) {
    CAPTURE(i);
    const Session& s = t[i + 1];
    CHECK(s.id == "tool-0/sub-" + std::to_string(i));
    CHECK(s.arrival_s == p.arrival_s + (i < 2 ? 0 : 7));
    const int64_t prompt = context[i] + 6;
    CHECK(s.segments ==
          std::vector<Segment>{{prompt, 50, Intercept{"c", 0.5},
                                event(ContextEventKind::kFork, context[i], 0, "tool-0")},
                               {1, 50, std::nullopt, event(ContextEventKind::kEnd)}});
    // The parent's 3 whole prompt blocks (230 tokens), then the subagent's own.
    REQUIRE(s.prefix.hashes.size() == static_cast<size_t>((prompt + 63) / 64));
    CHECK(
        std::equal(p.prefix.hashes.begin(), p.prefix.hashes.begin() + 3, s.prefix.hashes.begin()));
    CHECK(s.prefix.hashes[3] != p.prefix.hashes[3]);
  }
  CHECK(t[1].prefix.hashes[3] != t[2].prefix.hashes[3]);
  CHECK(rep.sessions == 5);
  CHECK(rep.subagents == 4);
  CHECK(rep.by_kind == std::map<std::string, int64_t>{{"tool", 1}});
  check_signals(t);

  // Without share_context a subagent is a fresh session of its kind: 64 + 6 tokens, the calc
  // kind's first block, nothing shared.
  c.kinds[0].subagents->share_context = false;
  const Trace fresh = generate_agents(c, 1, 4);
  REQUIRE(fresh.size() == 5);
  CHECK(fresh[1].segments[0] ==
        Segment{70, 50, Intercept{"c", 0.5}, event(ContextEventKind::kFork, 0, 0, "tool-0")});
  CHECK(fresh[1].prefix.hashes[0] == isim::splitmix64(isim::fnv1a("agents/calc")));
  check_signals(fresh);
}

TEST_CASE("agents: steps cut off by max_context start no subagents; the cap counts parents") {
  AgentsConfig c = config(3, 5);
  c.kinds[0].max_context = 245;  // 230 + 10, then room for the 5 returned tokens only
  c.kinds[0].subagents = SubagentSpec{1, fixed(1), "calc", true, fixed(7)};
  const Trace t = generate_agents(c, 1, 4);
  // Segment 1 keeps no output token: dropped; segment 0 is the last and waits for nothing.
  REQUIRE(t.size() == 1);
  CHECK(t[0].segments == std::vector<Segment>{{230, 10, std::nullopt}});

  c = config(2, 5);
  c.kinds[0].subagents = SubagentSpec{1, fixed(1), "calc", false, fixed(7)};
  AgentsReport rep;
  const Trace two = generate_agents(c, 2, 4, &rep);
  CHECK(two.size() == 4);  // 2 parents, 1 subagent each
  CHECK(two[2].id == "tool-1");
  CHECK(rep.capped);
}

TEST_CASE("agents-context.yaml is agents.yaml plus compaction and Explore subagents") {
  const std::string dir = isim::test::source_dir() + "/traces/generators/";
  AgentsConfig c = load_agents_config(dir + "agents-context.yaml");
  REQUIRE(c.kinds.size() == 4);
  CHECK(c.kinds[0].summarise == SummariseSpec{139014, lognormal(50198, 29779, 1)});
  CHECK(c.kinds[0].subagents ==
        SubagentSpec{0.0058, normal(2, 0.894, 1, 3), "explore", false, lognormal(140.1, 78.9)});
  CHECK(c.kinds[1].name == "explore");
  CHECK(c.kinds[0].max_context == 200000);
  AgentsReport rep;
  const Trace t = generate_agents(c, 0, 1, &rep);
  CHECK(rep.subagents > 0);
  CHECK(rep.summaries > 0);
  check_signals(t);

  c.kinds.erase(c.kinds.begin() + 1);
  c.kinds[0].summarise.reset();
  c.kinds[0].subagents.reset();
  c.kinds[0].max_context = 131072;
  CHECK(c == default_agents_config());
}

TEST_CASE("agents: summarise and subagents config errors name the file, line and key") {
  CHECK(load_error(with_kind("    summarise: {at_tokens: 50, summary_tokens: {mean: 5, sd: 0}}\n"))
            .empty());
  CHECK(load_error(with_kind("    summarise: {summary_tokens: {mean: 5, sd: 0}}\n")) ==
        "a.yaml:9: kinds.k.summarise.at_tokens: missing (expected an integer number of tokens)");
  CHECK(
      load_error(with_kind("    summarise: {at_tokens: 50, at: 1, summary_tokens: {mean: 5}}\n")) ==
      "a.yaml:9: kinds.k.summarise.at: unknown key; valid keys: at_tokens, summary_tokens");
  CHECK(load_error(
            with_kind("    summarise: {at_tokens: 100, summary_tokens: {mean: 5, sd: 0}}\n")) ==
        "a.yaml:9: kinds.k.summarise.at_tokens: must be in [system_prompt + 2, max_context) = "
        "[12, 100), got 100");
  CHECK(
      load_error(with_kind("    summarise: {at_tokens: 11, summary_tokens: {mean: 5, sd: 0}}\n")) ==
      "a.yaml:9: kinds.k.summarise.at_tokens: must be in [system_prompt + 2, max_context) = "
      "[12, 100), got 11");
  CHECK(load_error(with_kind("    summarise: {at_tokens: 50, summary_tokens: {mean: 0, sd: 1, "
                             "dist: lognormal}}\n")) ==
        "a.yaml:9: kinds.k.summarise.summary_tokens.mean: must be > 0 for dist lognormal");
  const std::string sub =
      "    subagents: {prob: 0.5, count: {mean: 1, sd: 0}, kind: k, "
      "share_context: true, wait_s: {mean: 3, sd: 0}}\n";
  CHECK(load_error(with_kind(sub)).empty());
  std::string s = sub;
  CHECK(load_error(with_kind(s.replace(s.find("0.5"), 3, "1.5"))) ==
        "a.yaml:9: kinds.k.subagents.prob: must be a probability in [0, 1], got 1.5");
  s = sub;
  CHECK(load_error(with_kind(s.replace(s.find("kind: k"), 7, "kind: x"))) ==
        "a.yaml:9: kinds.k.subagents.kind: unknown kind 'x'; valid: k");
  s = sub;
  CHECK(load_error(with_kind(s.replace(s.find("true"), 4, "maybe"))) ==
        "a.yaml:9: kinds.k.subagents.share_context: expected true or false, got 'maybe'");
  s = sub;
  CHECK(load_error(with_kind(s.replace(s.find("share_context: true, "), 21, ""))) ==
        "a.yaml:9: kinds.k.subagents.share_context: missing (expected true or false)");
  s = sub;
  CHECK(load_error(with_kind(s.replace(s.find("{mean: 3, sd: 0}"), 16, "{mean: 3, sd: -1}"))) ==
        "a.yaml:9: kinds.k.subagents.wait_s.sd: must be finite and >= 0");
  s = sub;
  CHECK(load_error(with_kind(s.replace(s.find("wait_s"), 6, "wait"))) ==
        "a.yaml:9: kinds.k.subagents.wait: unknown key; valid keys: prob, count, kind, "
        "share_context, wait_s");

  AgentsConfig c = config(2, 5);
  c.kinds[0].subagents = SubagentSpec{-1, fixed(1), "calc", false, fixed(1)};
  CHECK_THROWS_WITH_AS(validate_agents_config(c, "agents"),
                       "agents: kinds.tool.subagents.prob: must be a probability in [0, 1], got -1",
                       isim::InputError);
  c.kinds[0].subagents = SubagentSpec{0.5, fixed(1), "nope", false, fixed(1)};
  CHECK_THROWS_WITH_AS(validate_agents_config(c, "agents"),
                       "agents: kinds.tool.subagents.kind: unknown kind 'nope'; valid: tool, calc",
                       isim::InputError);
}
