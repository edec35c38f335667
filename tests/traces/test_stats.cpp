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
      "output tokens per session: mean 33.3333\n";
  CHECK(trace_stats(t) == expected);
}

TEST_CASE("stats: degenerate traces") {
  CHECK(trace_stats({}) == "sessions      0\n");
  const std::string one = trace_stats({Session{"x", 2, {{3, 4, {}}}}});
  CHECK(one.find("mean rate     n/a\n") != std::string::npos);
  CHECK(one.find("intercepts\n  none\n") != std::string::npos);
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
  CHECK(
      report.ends_with("output tokens per session: mean 1\n"
                       "prefix hashes: 2 sessions, block_tokens 16, 5 blocks, 2 distinct, "
                       "repeated-block fraction 0.6\n"));
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
