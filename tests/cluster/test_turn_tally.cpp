// The ledger's online token tallies (cluster/turn_tally.h) and the gap arena
// (sim/turn_metrics.h): by hand, on hand-made turns and on a two-replica run of the round
// profile (tests/sim_fixtures.h: T(x) = 10 ms + 1 ms per batched token, blocks of 4 tokens).
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "cluster/simulation.h"
#include "cluster/turn_tally.h"
#include "policies/builtin.h"
#include "policies/routers.h"
#include "sim/executor.h"
#include "tests/sim_fixtures.h"

using namespace isim;
using isim::test::seg;

namespace {

constexpr int64_t kMs = 1'000'000;

// huge: arrives first, at 0, and can never fit (200 + 2 tokens > 40 blocks of 4 = 160): skipped,
//   a failed request whose send does not count.
// a: arrives at 500 ms, routed to replica 0 (round robin), prompt 8, 100 outputs:
//   prefill [500, 518) -> token 1 at 518; then one decode of 11 ms per token: tokens at
//   518 + 11 k, k = 0..99, the last at 1607 ms.
// b: arrives at 601 ms, replica 1, prompt 20, 80 outputs: prefill [601, 631) -> token at 631,
//   then 631 + 11 k, k = 0..79: the last (k = 79) at 631 + 869 = 1500 ms exactly.
trace::Trace straddle_trace() {
  return {trace::Session{"huge", 0.0, {seg(200, 2)}}, trace::Session{"a", 0.5, {seg(8, 100)}},
          trace::Session{"b", 0.601, {seg(20, 80)}}};
}

cluster::RunResult straddle_run(bool turn_gaps) {
  sim::EngineConfig cfg;
  cfg.gpu_blocks = 40;
  cfg.cpu_blocks = 100;
  cfg.max_num_batched_tokens = 256;  // room to prefill a whole context again (vllm-v0)
  cfg.check_invariants = true;
  const sim::Profile p = test::round_profile();
  sim::SimExecutor e0(p), e1(p);
  auto p0 = policy::policy_registry().create("preserve", "test", policy::PolicyParams{});
  auto p1 = policy::policy_registry().create("preserve", "test", policy::PolicyParams{});
  auto router = policy::router_registry().create("round-robin", "test", Params{});
  std::vector<cluster::ReplicaSpec> specs = {{cfg, &e0, p0.get(), ""}, {cfg, &e1, p1.get(), ""}};
  return cluster::simulate(straddle_trace(), std::move(specs), *router, cluster::DisaggConfig{},
                           nullptr, true, nullptr, nullptr, turn_gaps);
}

}  // namespace

TEST_CASE("GapArena: one word a run, two for a gap of 2^44 ns or more or a count of 2^20 or more") {
  sim::GapArena a;
  const std::vector<sim::GapRun> runs = {
      {5, 1}, {int64_t{1} << 44, 3}, {7, int64_t{1} << 20}, {0, 2}, {(int64_t{1} << 44) - 1, 1}};
  const auto s = a.append(runs);
  CHECK(s.at == 0);
  CHECK(s.words == 1 + 2 + 2 + 1 + 1);
  const auto t = a.append({{9, 4}});
  CHECK(t.at == 7);
  CHECK(a.runs(s.at, s.words) == runs);
  CHECK(a.runs(t.at, t.words) == std::vector<sim::GapRun>{{9, 4}});
}

TEST_CASE("GapLog: equal consecutive gaps merge, the open run joins the list at close") {
  sim::GapLog g;
  CHECK(g.closed());
  g.add(10, 1);
  g.add(10, 3);  // extends the open run: nothing listed yet
  CHECK(g.runs().empty());
  CHECK_FALSE(g.closed());
  g.add(12, 1);  // a new gap: the run of 10s is listed, 12 is open
  CHECK(g.runs() == std::vector<sim::GapRun>{{10, 4}});
  g.add(10, 2);  // equal to an earlier run but not to the open one: a run of its own
  g.close();
  CHECK(g.closed());
  CHECK(g.runs() == std::vector<sim::GapRun>{{10, 4}, {12, 1}, {10, 2}});
  g.close();  // twice: nothing more
  CHECK(g.runs().size() == 3);
  g.clear();
  CHECK(g.runs().empty());
  g.add(0, 1);  // a zero gap is a run like any other
  g.close();
  CHECK(g.runs() == std::vector<sim::GapRun>{{0, 1}});
}

TEST_CASE("ItlTally: each gap once with its count, by gap, past its first 64 slots") {
  cluster::ItlTally t;
  t.add(30, 2);
  t.add(10, 1);
  t.add(30, 1);
  t.add(20, 5);
  t.add(40, 0);  // nothing
  CHECK(t.sorted() == std::vector<sim::GapRun>{{10, 1}, {20, 5}, {30, 3}});
  cluster::ItlTally many;  // 0, 1000, ..., 199000 ns, each twice: 200 gaps of count 2
  for (int round = 0; round < 2; ++round)
    for (int64_t g = 199; g >= 0; --g) many.add(g * 1000, 1);
  const auto s = many.sorted();
  REQUIRE(s.size() == 200);
  for (size_t i = 0; i < s.size(); ++i)
    CHECK(s[i] == sim::GapRun{static_cast<int64_t>(i) * 1000, 2});
}

TEST_CASE(
    "TokenBuckets: turns wait until the first arrival's turn completes, buckets in exact ns") {
  cluster::TokenBuckets b;
  b.sent(2 * kMs);  // the first session placed: candidate origin 2 ms
  b.sent(1 * kMs);  // later calls do not move it (placements come in time order)
  // A turn sent at 5 ms completes first: first token at 900 ms, gaps 50 ms x 4 -> tokens at
  // 900, 950, 1000, 1050, 1100 ms. It waits (origin not known).
  b.turn(5 * kMs, 900 * kMs, {{50 * kMs, 4}});
  // The candidate's turn: sent at 2 ms, tokens at 1001 and 1002 ms (gap 1 ms), then 1002 + 2000
  // = 3002 ms. Origin 2 ms: edges at 1002, 2002, 3002 ms.
  b.turn(2 * kMs, 1001 * kMs, {{1 * kMs, 1}, {2000 * kMs, 1}});
  int64_t origin = 0;
  std::vector<int64_t> per_second;
  b.finish(origin, per_second);
  CHECK(origin == 2 * kMs);
  // Bucket 0 [2, 1002): 900, 950, 1000 (waiting turn), 1001 -> 4.
  // Bucket 1 [1002, 2002): 1050, 1100, 1002 -> 3. Bucket 2: none. Bucket 3 [3002, ...): 3002 -> 1.
  CHECK(per_second == std::vector<int64_t>{4, 3, 0, 1});
}

TEST_CASE(
    "TokenBuckets: a first arrival whose turn never completes: origin is the earliest start") {
  cluster::TokenBuckets b;
  b.sent(0);                                        // its turn never completes (the run ended)
  b.turn(700 * kMs, 1200 * kMs, {{300 * kMs, 2}});  // 1200, 1500, 1800 ms
  b.turn(400 * kMs, 450 * kMs, {});                 // 450 ms: one token
  int64_t origin = 0;
  std::vector<int64_t> per_second;
  b.finish(origin, per_second);
  CHECK(origin == 400 * kMs);
  // From 400 ms: [400, 1400): 450, 1200 -> 2; [1400, 2400): 1500, 1800 -> 2.
  CHECK(per_second == std::vector<int64_t>{2, 2});
  cluster::TokenBuckets none;
  none.finish(origin, per_second);
  CHECK(origin == -1);
  CHECK(per_second.empty());
}

TEST_CASE("a two-replica run: the origin skips the refused session, a token on the 1 s edge") {
  for (const bool kept : {true, false}) {
    CAPTURE(kept);
    const cluster::RunResult r = straddle_run(kept);
    REQUIRE(r.skipped.size() == 1);
    REQUIRE(r.turns.size() == 2);
    CHECK(r.gaps_kept == kept);
    CHECK(r.turns[0].replica == 0);  // a
    CHECK(r.turns[1].replica == 1);  // b
    // Origin: a's send, 500 ms (huge's 0 was refused). Edge 1500 ms.
    // a: 518 + 11 k < 1500 for k <= 89: 90 tokens in bucket 0, k = 90..99 (1508..1607): 10.
    // b: 631 + 11 k < 1500 for k <= 78: 79 tokens; k = 79 at 1500 exactly: bucket 1.
    // b completes (1500 ms) before a (1607 ms): it waited for a's turn to confirm the origin.
    CHECK(r.tallies.origin_ns == 500 * kMs);
    CHECK(r.tallies.per_second == std::vector<int64_t>{90 + 79, 10 + 1});
    // Every gap is one decode, 11 ms: a's 99 and b's 79.
    CHECK(r.tallies.itl == std::vector<sim::GapRun>{{11 * kMs, 99 + 79}});
    // First to last token: a 518 -> 1607 (1089 ms), b 631 -> 1500 (869 ms).
    CHECK(r.turns[0].span_ns == 1089 * kMs);
    CHECK(r.turns[1].span_ns == 869 * kMs);
    if (kept) {
      CHECK(r.gaps.runs(r.turns[0].gaps_at, r.turns[0].gaps_words) ==
            std::vector<sim::GapRun>{{11 * kMs, 99}});
    } else {
      CHECK(r.turns[0].gaps_words == 0);
      CHECK(r.gaps.words() == 0);
    }
  }
}
