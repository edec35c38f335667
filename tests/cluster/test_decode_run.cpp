// Coalesced decode steps (sim/decode_run.h), computed by hand on the round profile
// (tests/sim_fixtures.h): T(x) = 10 ms + 1 ms per batched token, 4-token blocks, no step
// overhead; vllm-v0, preserve. Every case runs with coalescing on and off and compares the
// whole result, then checks the hand-computed times and how many steps the runs covered.
#include <doctest/doctest.h>

#include <memory>
#include <utility>

#include "cluster/cluster.h"
#include "cluster/simulation.h"
#include "core/params.h"
#include "policies/routers.h"
#include "tests/sim_fixtures.h"

using namespace isim;
using isim::test::rec;
using isim::test::seg;

namespace {

struct CoalescedRun {
  cluster::RunResult result;
  int64_t runs = 0, steps = 0;  // coalesced runs and the steps they covered
};

CoalescedRun run_coalesced(const trace::Trace& t, int64_t gpu_blocks, bool coalesce) {
  sim::EngineConfig cfg;
  cfg.gpu_blocks = gpu_blocks;
  cfg.cpu_blocks = 100;
  cfg.max_num_batched_tokens = 64;
  cfg.check_invariants = true;
  cfg.coalesce_decode = coalesce;
  sim::SimExecutor ex(test::round_profile());
  auto pol = policy::policy_registry().create("preserve", "test", policy::PolicyParams{});
  cluster::SingleReplica router;
  cluster::Cluster c(t, {cluster::ReplicaSpec{cfg, &ex, pol.get(), ""}}, router,
                     cluster::Checks(true));
  c.load();
  c.run_until(sim::kForever);
  CoalescedRun out;
  out.runs = c.engine(0).decode_runs().runs();
  out.steps = c.engine(0).decode_runs().steps();
  out.result = c.result();
  return out;
}

// Everything a run folder is made of that the engine decides, on and off alike.
void check_same(const cluster::RunResult& on, const cluster::RunResult& off) {
  REQUIRE(on.sessions.size() == off.sessions.size());
  for (size_t i = 0; i < on.sessions.size(); ++i) {
    CHECK(on.sessions[i].first_token_s == off.sessions[i].first_token_s);
    CHECK(on.sessions[i].finish_s == off.sessions[i].finish_s);
    CHECK(on.sessions[i].tpot_s == off.sessions[i].tpot_s);
    CHECK(on.sessions[i].preemptions == off.sessions[i].preemptions);
    CHECK(on.sessions[i].recomputed_tokens == off.sessions[i].recomputed_tokens);
  }
  REQUIRE(on.turns.size() == off.turns.size());
  for (size_t i = 0; i < on.turns.size(); ++i) {
    CHECK(on.gaps.runs(on.turns[i].gaps_at, on.turns[i].gaps_words) ==
          off.gaps.runs(off.turns[i].gaps_at, off.turns[i].gaps_words));
    CHECK(on.turns[i].itl_max_s == off.turns[i].itl_max_s);
    CHECK(on.turns[i].finish_s == off.turns[i].finish_s);
  }
  const sim::Counters& a = on.summary.counters;
  const sim::Counters& b = off.summary.counters;
  CHECK(a.iterations == b.iterations);
  CHECK(a.busy_time == b.busy_time);
  CHECK(a.decode_tokens == b.decode_tokens);
  CHECK(a.prefill_tokens == b.prefill_tokens);
  CHECK(a.preemptions == b.preemptions);
  CHECK(on.summary.waste.active == off.summary.waste.active);
  CHECK(on.summary.waste.preserved == off.summary.waste.preserved);
  CHECK(on.summary.waste.free == off.summary.waste.free);
  CHECK(on.summary.waste.recompute == off.summary.waste.recompute);
  CHECK(on.timeseries.size() == off.timeseries.size());
}

constexpr double kMsS = 1e-3;  // a millisecond in seconds

}  // namespace

TEST_CASE("decode runs: two sessions decode 8 steps as one run, times as stepping's") {
  // a and b arrive at 0 with 3 prompt tokens and 10 outputs each.
  //   [0,16)   prefill 3 + 3 = 6 tokens: 10 + 6 = 16 ms -> token 1 each (kv 3, context 4)
  //   from 16: decodes of 2 sessions, 10 + 2 = 12 ms each. Tokens 2..10 end at 28, 40, ..., 124.
  // The run formed at 16: the fewest tokens left is 10 - 1 = 9, so steps 1..9 (ending 28..124,
  // the last ending both segments). Blocks: step j decodes at kv 3 + j - 1 and crosses into a
  // block at kv 4 and 8 (steps 2 and 6): 4 blocks, 100 free. Nothing else is queued, the first
  // sample after 28 ms is due at 1 s: k = 9, and both finish at 124.
  const trace::Trace t{trace::Session{"a", 0.0, {seg(3, 10)}},
                       trace::Session{"b", 0.0, {seg(3, 10)}}};
  const CoalescedRun on = run_coalesced(t, 100, true);
  const CoalescedRun off = run_coalesced(t, 100, false);
  check_same(on.result, off.result);
  CHECK(on.runs == 1);
  CHECK(on.steps == 9);
  CHECK(off.runs == 0);
  for (const char* id : {"a", "b"}) {
    CHECK(rec(on.result, id).first_token_s == doctest::Approx(16 * kMsS).epsilon(1e-12));
    CHECK(rec(on.result, id).finish_s == doctest::Approx(124 * kMsS).epsilon(1e-12));
  }
  // 9 gaps of 12 ms each, one run-length entry per turn.
  for (const sim::TurnRecord& turn : on.result.turns) {
    const auto gaps = on.result.gaps.runs(turn.gaps_at, turn.gaps_words);
    REQUIRE(gaps.size() == 1);
    CHECK(gaps[0].gap_ns == 12'000'000);
    CHECK(gaps[0].count == 9);
  }
  // 1 prefill + 9 decode steps; busy 16 + 9 x 12 = 124 ms; 2 x 9 decoded tokens.
  CHECK(on.result.summary.counters.iterations == 10);
  CHECK(on.result.summary.counters.busy_time == 124'000'000);
  CHECK(on.result.summary.counters.decode_tokens == 18);
}

TEST_CASE("decode runs: a run stops before the block boundary the pool cannot serve") {
  // As above on 4 GPU blocks. The prefill takes 1 block each (2 free).
  //   Run at 16: step 2 crosses into 2 blocks (2 free: taken), step 6 would need 2 more (0
  //   free): steps 1..5, ending 28, 40, 52, 64, 76 (tokens 2..6; kv 8, context 9).
  //   76: step 6, stepping: a's block fails, b (the last running) is preempted (its 2 blocks
  //   freed, its context of 9 to recompute), a takes one: a alone, 11 ms -> 87 (token 7).
  //   Run at 87: b waits (needs 3 blocks, 1 free; no prefix hashes); a has 3 tokens left, so
  //   steps 1..3 (ending 98, 109, 120; kv 9 -> 11 crosses no block): a finishes at 120.
  //   120: b prefills its 9 tokens: 10 + 9 = 19 ms -> 139 (token 7). Run at 139: 3 left,
  //   steps ending 150, 161, 172: b finishes at 172.
  // Runs: 3, covering 5 + 3 + 3 = 11 steps. Iterations: 1 + 5 + 1 + 3 + 1 + 3 = 14.
  const trace::Trace t{trace::Session{"a", 0.0, {seg(3, 10)}},
                       trace::Session{"b", 0.0, {seg(3, 10)}}};
  const CoalescedRun on = run_coalesced(t, 4, true);
  const CoalescedRun off = run_coalesced(t, 4, false);
  check_same(on.result, off.result);
  CHECK(on.runs == 3);
  CHECK(on.steps == 11);
  CHECK(rec(on.result, "a").finish_s == doctest::Approx(120 * kMsS).epsilon(1e-12));
  CHECK(rec(on.result, "b").finish_s == doctest::Approx(172 * kMsS).epsilon(1e-12));
  CHECK(rec(on.result, "b").preemptions == 1);
  CHECK(on.result.summary.counters.iterations == 14);
  // a's gaps: 5 of 12 ms (16 -> 76), then 4 of 11 ms (76 -> 120).
  for (const sim::TurnRecord& turn : on.result.turns) {
    if (turn.session != 0) continue;
    const auto gaps = on.result.gaps.runs(turn.gaps_at, turn.gaps_words);
    REQUIRE(gaps.size() == 2);
    CHECK(gaps[0] == sim::GapRun{12'000'000, 5});
    CHECK(gaps[1] == sim::GapRun{11'000'000, 4});
  }
}

TEST_CASE("decode runs: an arrival due mid-run ends the run before it") {
  // a arrives at 0 (3 prompt tokens, 10 outputs), b at 50 ms (3, 10).
  //   [0,13) prefill 3 -> token 1. Run at 13: steps of 11 ms may end by b's arrival (50 ms):
  //   24, 35, 46 (57 > 50): k = 3. At 46 a step [46,57) ends past 50: no run. 50: b waits.
  //   57: vllm-v0 prefills b alone: [57,70) -> b's token 1 (a has 5 tokens, kv 7).
  //   Run at 70: a and b decode, 12 ms; a has 5 left: steps ending 82, 94, 106, 118, 130
  //   (k = 5; blocks crossed at step 2 only): a finishes at 130. b has 6 tokens at 130, 4 left:
  //   a run of 11 ms steps ending 141, 152, 163, 174 (k = 4): b finishes at 174.
  // Runs: 3 covering 3 + 5 + 4 = 12 steps; iterations 1 + 3 + 1 + 1 + 5 + 4 = 15.
  const trace::Trace t{trace::Session{"a", 0.0, {seg(3, 10)}},
                       trace::Session{"b", 0.05, {seg(3, 10)}}};
  const CoalescedRun on = run_coalesced(t, 100, true);
  const CoalescedRun off = run_coalesced(t, 100, false);
  check_same(on.result, off.result);
  CHECK(on.runs == 3);
  CHECK(on.steps == 12);
  CHECK(rec(on.result, "a").finish_s == doctest::Approx(130 * kMsS).epsilon(1e-12));
  CHECK(rec(on.result, "b").first_token_s == doctest::Approx(70 * kMsS).epsilon(1e-12));
  CHECK(rec(on.result, "b").finish_s == doctest::Approx(174 * kMsS).epsilon(1e-12));
  CHECK(on.result.summary.counters.iterations == 15);
}

namespace {

// Two replicas behind round-robin, checked after every iteration but not after every event
// (which would run the fleet serially, where runs are not settled).
struct FleetRuns {
  cluster::RunResult result;
  int64_t runs[2] = {0, 0}, steps[2] = {0, 0}, iterations[2] = {0, 0};
};

FleetRuns run_fleet(const trace::Trace& t, bool coalesce) {
  sim::EngineConfig cfg;
  cfg.gpu_blocks = 100;
  cfg.cpu_blocks = 100;
  cfg.max_num_batched_tokens = 64;
  cfg.check_invariants = true;
  cfg.coalesce_decode = coalesce;
  sim::SimExecutor ex0(test::round_profile()), ex1(test::round_profile());
  auto p0 = policy::policy_registry().create("preserve", "test", policy::PolicyParams{});
  auto p1 = policy::policy_registry().create("preserve", "test", policy::PolicyParams{});
  auto router = policy::router_registry().create("round-robin", "test", Params({}, "router"));
  cluster::Checks checks(false);
  checks.engines = true;
  cluster::Cluster c(t,
                     {cluster::ReplicaSpec{cfg, &ex0, p0.get(), ""},
                      cluster::ReplicaSpec{cfg, &ex1, p1.get(), ""}},
                     *router, checks);
  c.load();
  c.run_until(sim::kForever);
  FleetRuns out;
  for (int r = 0; r < 2; ++r) {
    out.runs[r] = c.engine(r).decode_runs().runs();
    out.steps[r] = c.engine(r).decode_runs().steps();
    out.iterations[r] = c.engine(r).counters().iterations;
  }
  out.result = c.result();
  return out;
}

}  // namespace

// a and b arrive at 0 (3 prompt tokens, 10 outputs each), c at `c_at` (3, 2); round-robin puts
// a and c on replica 0, b on replica 1. Replica 0 prefills a in [0,13) (token 1) and plans a
// run at 13 of a's 9 decodes, 11 ms each, ending 24, 35, ..., 112 (no queued event bounds it in
// a fleet: c settles it when it arrives). Replica 1 does the same for b, unsettled: one run of
// 9 steps, b finishes at 112. vllm-v0 prefills an arrival alone.
TEST_CASE("decode runs in a fleet: an arrival inside a run settles it at the step in flight") {
  // c at 50 ms: steps 1..3 ended (24, 35, 46), step 4 [46,57) is in flight: it becomes the
  // run's last. 57: a has 5 tokens; c prefills alone, [57,70) -> c's token 1 (TTFT 20 ms).
  // 70: a and c decode, 12 ms -> 82: a's token 6, c's 2 (c finishes). 82: a alone, 4 left: a
  // run ending 93, 104, 115, 126.
  const trace::Trace t{trace::Session{"a", 0.0, {seg(3, 10)}},
                       trace::Session{"b", 0.0, {seg(3, 10)}},
                       trace::Session{"c", 0.05, {seg(3, 2)}}};
  const FleetRuns on = run_fleet(t, true);
  const FleetRuns off = run_fleet(t, false);
  check_same(on.result, off.result);
  CHECK(rec(on.result, "c").first_token_s == doctest::Approx(70 * kMsS).epsilon(1e-12));
  CHECK(rec(on.result, "c").finish_s == doctest::Approx(82 * kMsS).epsilon(1e-12));
  CHECK(rec(on.result, "a").finish_s == doctest::Approx(126 * kMsS).epsilon(1e-12));
  CHECK(rec(on.result, "b").finish_s == doctest::Approx(112 * kMsS).epsilon(1e-12));
  CHECK(on.runs[0] == 2);
  CHECK(on.steps[0] == 4 + 4);
  CHECK(on.iterations[0] == 1 + 4 + 1 + 1 + 4);
  CHECK(on.runs[1] == 1);
  CHECK(on.steps[1] == 9);
  CHECK(on.iterations[1] == 1 + 9);
}

TEST_CASE("decode runs in a fleet: an arrival at a step's end starts the next step with it") {
  // c at 46 ms, the end of step 3: stepping ends that step before the instant's arrival and
  // forms the next batch after it, so c prefills at once, [46,59) (TTFT 13 ms, not 24 ms after
  // the step [46,57) a run would have kept). 59: a and c decode -> 71: a's token 5, c's 2.
  // 71: a alone, 5 left: a run ending 82, 93, 104, 115, 126.
  const trace::Trace t{trace::Session{"a", 0.0, {seg(3, 10)}},
                       trace::Session{"b", 0.0, {seg(3, 10)}},
                       trace::Session{"c", 0.046, {seg(3, 2)}}};
  const FleetRuns on = run_fleet(t, true);
  const FleetRuns off = run_fleet(t, false);
  check_same(on.result, off.result);
  CHECK(rec(on.result, "c").first_token_s == doctest::Approx(59 * kMsS).epsilon(1e-12));
  CHECK(rec(on.result, "c").finish_s == doctest::Approx(71 * kMsS).epsilon(1e-12));
  CHECK(rec(on.result, "a").finish_s == doctest::Approx(126 * kMsS).epsilon(1e-12));
  CHECK(on.runs[0] == 2);
  CHECK(on.steps[0] == 3 + 5);
  CHECK(on.iterations[0] == 1 + 3 + 1 + 1 + 5);
}
