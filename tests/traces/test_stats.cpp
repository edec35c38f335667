#include <doctest/doctest.h>

#include "traces/stats.h"

using namespace isim::trace;

TEST_CASE("stats: nearest-rank percentiles") {
  std::vector<double> v;
  for (int i = 1; i <= 100; ++i) v.push_back(i);
  CHECK(percentile_nearest_rank(v, 99) == 99);  // rank ceil(0.99 * 100) = 99, not 100
  CHECK(percentile_nearest_rank(v, 50) == 50);
  CHECK(percentile_nearest_rank(v, 100) == 100);
  CHECK(percentile_nearest_rank(v, 0) == 1);
  const std::vector<double> ten = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  CHECK(percentile_nearest_rank(ten, 99) == 10);  // rank ceil(9.9) = 10
  CHECK(percentile_nearest_rank(ten, 50) == 5);
  CHECK(percentile_nearest_rank(ten, 1) == 1);
}

// By hand: s1 arrives at 0, s2 at 1, s3 at 4 -> span 4 s, rate (3 - 1) / 4 = 0.5.
// math: durations {0.5, 1.5} in 2 sessions -> 1 call/session, mean 1, p50 rank 1 = 0.5, p99 rank
// 2 = 1.5; returned {20, 11} -> 15.5. chat: one call of 10 s returning 7.
// prompts {100, 200, 50}: mean 116.667, p50 = 100, p99 = max = 200.
// final contexts {160, 228, 100}: mean 162.667, p50 = 160, p99 = max = 228.
// output per session (40 + 10 + 50) / 3 = 33.3333.
// Agent lines: calls {2, 3, 1}: mean 2, p50 (rank 2) 2, p90 (rank 3) 3; growth after the first
// call {50, 10, 13}: mean 24.3333, p50 13, p90 50; think times {0.5, 10, 1.5}: mean 4, p50 1.5,
// p90 = p99 = max = 10; chat one of 10; math {0.5, 1.5}: p90 rank ceil(1.8) = 2, 1.5.
TEST_CASE("stats: exact report for a tiny trace") {
  const Trace t = {
      Session{"s1", 0, {{100, 10, Intercept{"math", 0.5}}, {20, 30, {}}}},
      Session{
          "s2", 1, {{200, 5, Intercept{"chat", 10}}, {7, 3, Intercept{"math", 1.5}}, {11, 2, {}}}},
      Session{"s3", 4, {{50, 50, {}}}},
  };
  const std::string expected =
      "sessions      3\n"
      "segments      6\n"
      "arrival span  4 s (0 .. 4)\n"
      "mean rate     0.5 sessions/s\n"
      "intercepts\n"
      "  kind  count  calls/session  mean_s  p50_s  p99_s  max_s  returned\n"
      "  chat      1              1      10     10     10     10         7\n"
      "  math      2              1       1    0.5    1.5    1.5      15.5\n"
      "context (tokens)\n"
      "             mean  p50  p99  max\n"
      "  prompt  116.667  100  200  200\n"
      "  final   162.667  160  228  228\n"
      "output tokens per session: mean 33.3333\n"
      "model calls per session: mean 2, p50 2, p90 3, max 3\n"
      "subagents: 0 (sessions with a fork)\n"
      "resets: 0 in 0 sessions\n"
      "context growth per call after the first (tokens added): mean 24.3333, p50 13, p90 50, "
      "max 50\n"
      "max context: 228 tokens\n"
      "think time (intercept durations, s)\n"
      "  kind  count  mean  p50  p90  p99  max\n"
      "  all       3     4  1.5   10   10   10\n"
      "  chat      1    10   10   10   10   10\n"
      "  math      2     1  0.5  1.5  1.5  1.5\n";
  CHECK(trace_stats(t) == expected);
}

TEST_CASE("stats: degenerate traces") {
  CHECK(trace_stats({}) == "sessions      0\n");
  const std::string one = trace_stats({Session{"x", 2, {{3, 4, {}}}}});
  CHECK(one.find("mean rate     n/a\n") != std::string::npos);
  CHECK(one.find("intercepts\n  none\n") != std::string::npos);
  CHECK(one.find("model calls per session: mean 1, p50 1, p90 1, max 1\n") != std::string::npos);
  CHECK(one.ends_with("context growth per call after the first (tokens added): n/a\n"
                      "max context: 7 tokens\n"
                      "think time (intercept durations, s)\n"
                      "  none\n"));
}

// By hand: p resets at segment 1 to 5 tokens (4 kept): contexts 12, 5 + 3 + 1 = 9, 12 -> 12.
// Growth after the first call: p's 3 + 1 + (5 - 4) = 5 and 2 + 1 = 3, c1's 1 + 1 = 2 -> {2, 3,
// 5}: mean 3.33333, p50 3, p90 (rank 3) 5. Calls {3, 2, 1, 1}: mean 1.75, p50 (rank 2) 1, p90
// (rank 4) 3. c1 and c2 fork from p, q from c1: 3 subagents, 2 parents, 1.5 each, at most 2.
// Think times {4, 6, 2}, all tools: mean 4, p50 4, p90 = p99 = max = 6.
TEST_CASE("stats: agent signals (forks, resets, growth, think times)") {
  Session p{"p", 0, {{10, 2, Intercept{"tool", 4}}, {3, 1, Intercept{"tool", 6}}, {2, 1, {}}}};
  p.segments[1].event = {ContextEventKind::kReset, 5, 4, ""};
  Session c1{"c1", 1, {{8, 1, Intercept{"tool", 2}}, {1, 1, {}}}};
  c1.segments[0].event = {ContextEventKind::kFork, 4, 0, "p"};
  c1.segments[1].event.kind = ContextEventKind::kEnd;
  Session c2{"c2", 2, {{6, 1, {}}}};
  c2.segments[0].event = {ContextEventKind::kFork, 0, 0, "p"};
  Session q{"q", 3, {{4, 1, {}}}};
  q.segments[0].event = {ContextEventKind::kFork, 2, 0, "c1"};
  const Trace t = {p, c1, c2, q};
  const AgentStats a = agent_stats(t);
  CHECK(a.calls == 7);
  CHECK(a.subagents == 3);
  CHECK(a.parents == 2);
  CHECK(a.most_subagents == 2);
  CHECK(a.resets == 1);
  CHECK(a.reset_sessions == 1);
  CHECK(a.max_context == 12);
  CHECK(a.intercepts == 3);
  CHECK(a.max_think_s == 6);
  CHECK(trace_stats(t).ends_with(
      "model calls per session: mean 1.75, p50 1, p90 3, max 3\n"
      "subagents: 3 (sessions with a fork) under 2 parents, per parent mean 1.5, max 2\n"
      "resets: 1 in 1 sessions\n"
      "context growth per call after the first (tokens added): mean 3.33333, p50 3, p90 5, "
      "max 5\n"
      "max context: 12 tokens\n"
      "think time (intercept durations, s)\n"
      "  kind  count  mean  p50  p90  p99  max\n"
      "  all       3     4    4    6    6    6\n"
      "  tool      3     4    4    6    6    6\n"));
  const AgentStats none = agent_stats({});
  CHECK(none.calls + none.subagents + none.resets + none.intercepts == 0);
}

// By hand: 3 + 2 hashes = 5 blocks; 7 repeats within s1's own chain, 1 and 7 repeat in s2 -> 3
// repeated, 2 distinct; s3 has no prefix and is not counted.
TEST_CASE("stats: prefix hashes line and prefix_stats") {
  Session s1{"s1", 0, {{40, 1, {}}}};
  s1.prefix = PrefixHashes{16, {1, 7, 7}};
  Session s2{"s2", 1, {{20, 1, {}}}};
  s2.prefix = PrefixHashes{16, {1, 7}};
  const Trace t = {s1, s2, Session{"s3", 2, {{5, 1, {}}}}};
  const PrefixStats p = prefix_stats(t);
  CHECK(p.sessions == 2);
  CHECK(p.blocks == 5);
  CHECK(p.repeated == 3);
  CHECK(p.distinct == 2);
  CHECK(p.block_tokens == std::vector<int64_t>{16});
  CHECK(p.repeated_fraction() == 0.6);
  const std::string report = trace_stats(t);
  CHECK(report.find("output tokens per session: mean 1\n"
                    "prefix hashes: 2 sessions, block_tokens 16, 5 blocks, 2 distinct, "
                    "repeated-block fraction 0.6\n"
                    "model calls per session:") != std::string::npos);
  // The same hash value under another block size is another block.
  Session s4{"s4", 3, {{8, 1, {}}}};
  s4.prefix = PrefixHashes{8, {1}};
  const PrefixStats q = prefix_stats({s1, s4});
  CHECK(q.distinct == 3);
  CHECK(q.repeated == 1);
  CHECK(q.block_tokens == std::vector<int64_t>{8, 16});
  CHECK(prefix_stats({}).repeated_fraction() == 0);
  CHECK(trace_stats({Session{"x", 2, {{3, 4, {}}}}}).find("prefix") == std::string::npos);
}
