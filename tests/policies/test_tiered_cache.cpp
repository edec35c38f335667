// Pensieve and LRU over the GPU/CPU tiers: eviction order, the ahead-of-time threshold, the
// decode reservation, and dropped leading chunks recomputed on resume.
// Profile: tests/sim_fixtures.h's round profile (T(x) = 10 ms + 1 ms/token, 4-token blocks,
// 4 ms to swap a block) unless stated.
#include <doctest/doctest.h>

#include <vector>

#include "cluster/cluster.h"
#include "core/input_error.h"
#include "policies/tiered_cache.h"
#include "sim/profile.h"
#include "tests/sim_fixtures.h"
#include "tests/test_paths.h"

using namespace isim;
using isim::test::rec;
using isim::test::seg;

namespace {

std::unique_ptr<sim::Policy> make(const std::string& name,
                                  std::map<std::string, std::string> values) {
  policy::PolicyParams p;
  p.values = std::move(values);
  return policy::policy_registry().create(name, "test", p);
}

sim::EngineConfig cfg(int64_t gpu, int64_t cpu) {
  sim::EngineConfig c;
  c.gpu_blocks = gpu;
  c.cpu_blocks = cpu;
  c.max_num_batched_tokens = 1024;
  c.check_invariants = true;
  return c;
}

// A cluster of one around `pol`, loaded and not yet run.
struct One {
  One(const trace::Trace& t, sim::Executor& ex, sim::Policy& pol)
      : c(t, {cluster::ReplicaSpec{cfg(40, 100), &ex, &pol, ""}}, router, true) {
    c.load();
  }
  cluster::SingleReplica router;
  cluster::Cluster c;
};

// x pauses at 30 ms holding 20 KV tokens (5 blocks); y pauses at 522 ms holding 12 (3 blocks).
trace::Trace two_idle() {
  return {trace::Session{"x", 0.0, {seg(20, 1, "user", 10.0), seg(1, 1)}},
          trace::Session{"y", 0.5, {seg(12, 1, "user", 10.0), seg(1, 1)}}};
}

}  // namespace

TEST_CASE("eviction order: LRU empties the most idle conversation first, leading chunks first") {
  auto pol = make("lru", {{"chunk_tokens", "8"}, {"swap_threshold", "0"}});
  auto& lru = dynamic_cast<policy::TieredCache&>(*pol);
  auto t = two_idle();
  auto p = test::round_profile();
  sim::SimExecutor ex(p);
  One one(t, ex, *pol);
  one.c.run_until(sim::from_seconds(1.0));
  const sim::ReplicaView& e = one.c.replica(0).view();
  REQUIRE(e.session(0).phase == sim::Phase::kPaused);
  REQUIRE(e.session(1).phase == sim::Phase::kPaused);
  CHECK(e.session(0).gpu_blocks.size() == 5);
  CHECK(e.session(1).gpu_blocks.size() == 3);
  // 6 blocks: all 5 of x (chunks of 2, 2, 1), then one whole 2-block chunk of y.
  auto order = lru.plan(e, 6, false);
  REQUIRE(order.size() == 2);
  CHECK(order[0] == std::pair<int32_t, int64_t>{0, 5});
  CHECK(order[1] == std::pair<int32_t, int64_t>{1, 2});
  // 3 blocks: two whole chunks of x.
  auto small = lru.plan(e, 3, false);
  REQUIRE(small.size() == 1);
  CHECK(small[0] == std::pair<int32_t, int64_t>{0, 4});
  // From the CPU tier there is nothing yet.
  CHECK(lru.plan(e, 6, true).empty());
}

TEST_CASE("Pensieve's value: idle conversations and leading chunks are cheapest to keep out") {
  auto prof = sim::load_profile(test::data_dir() + "/profile-tables-small.yaml");
  auto pol = make("pensieve", {{"chunk_tokens", "8"}, {"swap_threshold", "0"}});
  auto& pen = dynamic_cast<policy::TieredCache&>(*pol);
  auto lru_pol = make("lru", {{"chunk_tokens", "8"}});
  auto& lru = dynamic_cast<policy::TieredCache&>(*lru_pol);
  trace::Trace t = two_idle();
  sim::SimExecutor ex(prof);
  One one(t, ex, *pol);
  one.c.run_until(0);  // x has arrived
  const sim::ReplicaView& e = one.c.replica(0).view();
  const auto& x = e.session(0);
  // With this profile, recomputing an 8-token chunk costs 8 x 10 us of dense work plus
  // 2 layers x prefill_attention(8, pos) = 2 x (8 + 2.4 pos / 64) us: 96 us + 75 ns per
  // position. V = cost / idle.
  CHECK(pen.value(e, x, 0, 1.0) == doctest::Approx(96000.0));
  CHECK(pen.value(e, x, 64, 1.0) == doctest::Approx(96000.0 + 75 * 64));
  CHECK(pen.value(e, x, 0, 2.0) == doctest::Approx(48000.0));  // twice as idle, half the value
  CHECK(pen.value(e, x, 0, 1.0) < pen.value(e, x, 8, 1.0));    // leading chunks go first
  // LRU ignores position: only idleness counts.
  CHECK(lru.value(e, x, 0, 1.0) == lru.value(e, x, 64, 1.0));
  CHECK(lru.value(e, x, 0, 2.0) < lru.value(e, x, 0, 1.0));
}

TEST_CASE(
    "Cost(position) order: Pensieve takes a later-idled conversation's lead before a deeper "
    "chunk") {
  // x pauses (20 tokens, 5 blocks) about 50 ms before y (12 tokens, 3 blocks); at 60 s (z's
  // arrival, the clock's next event) both
  // have been idle about a minute, x by a factor of about 1.0008 longer. With 8-token chunks
  // (2 blocks) on this profile a chunk at position p costs 96 us + 75 ns x p, so:
  //   x@0 = 96,000 / idle_x < y@0 = 96,000 / idle_y    (x is idler)
  //   y@0 < x@8 = 96,600 / idle_x                      (600 / 96,000 = 0.6% > 0.08%)
  // Pensieve takes x@0, y@0, x@8 for 6 blocks: 4 of x's, 2 of y's. LRU empties x first
  // (2 + 2 + 1 blocks) and then takes a whole 2-block chunk of y.
  auto prof = sim::load_profile(test::data_dir() + "/profile-tables-small.yaml");
  trace::Trace t = {trace::Session{"x", 0.0, {seg(20, 1, "user", 100.0), seg(1, 1)}},
                    trace::Session{"y", 0.05, {seg(12, 1, "user", 100.0), seg(1, 1)}},
                    trace::Session{"z", 60.0, {seg(4, 1)}}};  // brings the clock to 60 s
  for (const char* name : {"pensieve", "lru"}) {
    CAPTURE(name);
    auto pol = make(name, {{"chunk_tokens", "8"}, {"swap_threshold", "0"}});
    auto& tiers = dynamic_cast<policy::TieredCache&>(*pol);
    sim::SimExecutor ex(prof);
    One one(t, ex, *pol);
    one.c.run_until(sim::from_seconds(60.0));
    const sim::ReplicaView& e = one.c.replica(0).view();
    REQUIRE(e.session(0).phase == sim::Phase::kPaused);
    REQUIRE(e.session(1).phase == sim::Phase::kPaused);
    REQUIRE(e.session(0).pause_start < e.session(1).pause_start);
    REQUIRE(e.session(1).pause_start - e.session(0).pause_start < sim::from_ms(60));
    const auto order = tiers.plan(e, 6, false);
    REQUIRE(e.now() == sim::from_seconds(60.0));
    REQUIRE(order.size() == 2);
    CHECK(order[0].first == 0);
    CHECK(order[1] == std::pair<int32_t, int64_t>{1, 2});
    CHECK(order[0].second == (std::string(name) == "pensieve" ? 4 : 5));
  }
}

TEST_CASE("ahead-of-time swap-out starts only when free GPU blocks fall under the threshold") {
  // 20 GPU blocks. x pauses at 30 ms holding 5. w arrives at 0.1 s with a 40-token prompt
  // (10 blocks) and decodes 4 tokens: free falls to 5 (25%), then 4 as w grows to 11 blocks.
  trace::Trace t = {trace::Session{"x", 0.0, {seg(20, 1, "user", 5.0), seg(1, 1)}},
                    trace::Session{"w", 0.1, {seg(40, 4)}}};
  for (const char* name : {"pensieve", "lru"}) {
    CAPTURE(name);
    SUBCASE("threshold 50%: x's chunks move to CPU within the swap budget") {
      auto pol = make(name, {{"swap_threshold", "0.5"}, {"reserve", "0"}});
      auto p = test::round_profile();
      sim::SimExecutor ex(p);
      std::vector<sim::IterationRecord> its;
      auto r = cluster::simulate(t, cfg(20, 100), ex, *pol,
                                 [&](const sim::IterationRecord& it) { its.push_back(it); });
      CHECK(rec(r, "x").swapped_out_bytes == 5 * 4000);  // all of x's 5 blocks
      CHECK(rec(r, "x").swapped_in_bytes == 5 * 4000);   // and back before its next turn
      // The budget from the profile's numbers (test::round_swap_budget_blocks): w alone decodes,
      // T(1) = 11 ms, 4 ms a block: 2 blocks (8 tokens) an iteration. x's 5 blocks move in
      // w's decode iterations as 2 + 2 + 1, and only after w came.
      std::vector<int64_t> moved;
      for (const auto& it : its) {
        if (it.swap_out_tokens == 0) continue;
        CAPTURE(it.start);
        CHECK(it.start >= sim::from_seconds(0.1));
        CHECK(it.decodes == 1);
        CHECK(it.swap_out_tokens <= 4 * test::round_swap_budget_blocks(1));
        moved.push_back(it.swap_out_tokens);
      }
      CHECK(moved == std::vector<int64_t>{8, 8, 4});
    }
    SUBCASE("threshold 10%: 5 free blocks are enough, nothing moves") {
      auto pol = make(name, {{"swap_threshold", "0.1"}, {"reserve", "0"}});
      auto p = test::round_profile();
      sim::SimExecutor ex(p);
      auto r = cluster::simulate(t, cfg(20, 100), ex, *pol);
      CHECK(rec(r, "x").swapped_out_bytes == 0);
    }
  }
}

TEST_CASE("a share of GPU blocks is kept for decodes: prefills may not take it") {
  // 20 blocks, 10% reserved = 2. a (40 tokens, 10 blocks) is admitted; b (36 tokens, 9 blocks)
  // would leave 1 block, under the reserve, so it waits for a: a [0,50) ms, b [50,96) ms.
  // Without the reserve both prefill together: [0,86) ms.
  trace::Trace t = {trace::Session{"a", 0.0, {seg(40, 1)}}, trace::Session{"b", 0.0, {seg(36, 1)}}};
  auto p = test::round_profile();
  {
    auto pol = make("pensieve", {{"reserve", "0.1"}});
    sim::SimExecutor ex(p);
    auto r = cluster::simulate(t, cfg(20, 0), ex, *pol);
    CHECK(rec(r, "a").finish_s == doctest::Approx(0.050).epsilon(1e-12));
    CHECK(rec(r, "b").finish_s == doctest::Approx(0.096).epsilon(1e-12));
  }
  {
    auto pol = make("pensieve", {{"reserve", "0"}});
    sim::SimExecutor ex(p);
    auto r = cluster::simulate(t, cfg(20, 0), ex, *pol);
    CHECK(rec(r, "b").finish_s == doctest::Approx(0.086).epsilon(1e-12));
  }
  // A prompt that only the reserved blocks could hold can never be prefilled: skipped.
  trace::Trace big = {trace::Session{"big", 0.0, {seg(76, 1)}}};
  auto pol = make("pensieve", {{"reserve", "0.1"}});
  sim::SimExecutor ex(p);
  auto r = cluster::simulate(big, cfg(20, 0), ex, *pol);
  REQUIRE(r.skipped.size() == 1);
  CHECK(r.skipped[0].find("2 reserved for decodes") != std::string::npos);
}

TEST_CASE("with no CPU room, leading chunks are dropped and recomputed on the next turn") {
  // As above but no CPU pool: x's leading chunks are dropped from the GPU (the last block,
  // which may be partial, is kept). At its next turn x prefills the dropped tokens with the
  // returned one and its last output, then decodes.
  trace::Trace t = {trace::Session{"x", 0.0, {seg(20, 1, "user", 5.0), seg(1, 1)}},
                    trace::Session{"w", 0.1, {seg(40, 4)}}};
  auto pol = make("pensieve", {{"swap_threshold", "0.5"}, {"reserve", "0"}});
  auto p = test::round_profile();
  sim::SimExecutor ex(p);
  auto r = cluster::simulate(t, cfg(20, 0), ex, *pol);
  const auto& x = rec(r, "x");
  CHECK(x.status == "finished");
  CHECK(x.swapped_out_bytes == 0);
  CHECK(x.recomputed_tokens == 16);  // 4 of its 5 blocks dropped
  CHECK(r.summary.counters.dropped_blocks == 4);
  // Resume at 5.03 s: prefill 16 recomputed + 1 last output + 1 returned = 18 tokens (28 ms),
  // which emits the turn's only token.
  CHECK(x.finish_s == doctest::Approx(5.058).epsilon(1e-12));
  CHECK(r.summary.counters.oversized_restores == 0);
  CHECK(r.summary.counters.recompute_time == sim::from_ms(16));  // 1 ms a token
}

TEST_CASE("tier parameters are checked") {
  CHECK_THROWS_WITH_AS(make("pensieve", {{"reserve", "1.5"}}), "policy.reserve: must be < 1",
                       InputError);
  CHECK_THROWS_WITH_AS(make("lru", {{"chunk", "8"}}),
                       "policy.chunk: unknown parameter; policy 'lru' takes chunk_tokens, "
                       "swap_threshold, reserve",
                       InputError);
  CHECK_THROWS_AS(make("pensieve", {{"chunk_tokens", "0"}}), InputError);
}

TEST_CASE("on demand: room is made for the next prefill without the engine's fallback") {
  // No ahead-of-time threshold. x pauses holding 5 of 20 blocks; w's 64-token prompt needs 16,
  // one more than is free, so x's least valuable chunk goes to CPU first (not an idle eviction,
  // which would drop all of x).
  trace::Trace t = {trace::Session{"x", 0.0, {seg(20, 1, "user", 5.0), seg(1, 1)}},
                    trace::Session{"w", 0.1, {seg(64, 1)}}};
  for (const char* name : {"pensieve", "lru"}) {
    CAPTURE(name);
    auto pol = make(name, {{"chunk_tokens", "8"}, {"swap_threshold", "0"}, {"reserve", "0"}});
    auto p = test::round_profile();
    sim::SimExecutor ex(p);
    auto r = cluster::simulate(t, cfg(20, 100), ex, *pol);
    CHECK(r.summary.counters.idle_evictions == 0);
    CHECK(rec(r, "x").swapped_out_bytes == 2 * 4000);  // one 8-token chunk of 2 blocks
    CHECK(rec(r, "x").recomputed_tokens == 0);
    CHECK(rec(r, "w").status == "finished");
  }
}

TEST_CASE("a dropped lead larger than one batch is recomputed a batch at a time, alone") {
  // 8-token batches. x prefills its 20 tokens as 8 + 8 + 4 ([0, 50) ms) and pauses with 5
  // blocks. w's prefill takes the GPU under the 50% threshold and, with no CPU room, x's
  // leading 4 blocks are dropped (its last block is kept). At 5.05 s x resumes: 16 dropped +
  // 2 new tokens pending. The lead is larger than a batch, so it is recomputed in two 8-token
  // pieces, the second attending to the first, and only then the 2 new tokens over all 20:
  // 18 + 18 + 12 ms. The 4 tokens x kept are not recomputed.
  trace::Trace t = {trace::Session{"x", 0.0, {seg(20, 1, "user", 5.0), seg(1, 1)}},
                    trace::Session{"w", 0.1, {seg(40, 4)}}};
  auto c = cfg(20, 0);
  c.max_num_batched_tokens = 8;
  for (const char* scheduler : {"chunked", "vllm-v1"}) {
    CAPTURE(scheduler);
    c.scheduler = scheduler;
    auto pol = make("lru", {{"swap_threshold", "0.5"}, {"reserve", "0"}});
    auto p = test::round_profile();
    sim::SimExecutor ex(p);
    std::vector<sim::IterationRecord> its;
    auto r = cluster::simulate(t, c, ex, *pol,
                               [&](const sim::IterationRecord& it) { its.push_back(it); });
    CHECK(r.summary.counters.dropped_blocks == 4);
    CHECK(r.summary.counters.oversized_restores == 1);
    CHECK(rec(r, "x").status == "finished");
    CHECK(rec(r, "x").recomputed_tokens == 16);
    std::vector<int64_t> resumed;  // x's iterations after its intercept
    for (const auto& it : its)
      if (it.start >= sim::from_seconds(5.0)) resumed.push_back(it.batch_tokens);
    CHECK(resumed == std::vector<int64_t>{8, 8, 2});
    CHECK(rec(r, "x").finish_s == doctest::Approx(5.098).epsilon(1e-12));
    // Linear profile: 1 ms of GPU time per recomputed token, wherever it sits.
    CHECK(r.summary.counters.recompute_time == sim::from_ms(16));
  }
}

TEST_CASE("vllm-v1: a lead in pieces takes whole blocks, and waits when the budget left is less") {
  // 10-token steps, 4-token blocks. x prefills 10 + 10 tokens ([0, 40) ms) and pauses; its
  // leading 16 tokens are dropped during w's prefill as above, and it resumes at 5.04 s. v
  // arrives at 5.03 s: [5.03, 5.05) v 10; [5.05, 5.067) v's last 7, leaving 3 tokens, less than
  // a block, so x is not admitted (before, the admission gate passed and the piece failed);
  // [5.067, 5.085) x's first 8-token piece; [5.085, 5.105) the lead's last 8 with the 2 new.
  trace::Trace t = {trace::Session{"x", 0.0, {seg(20, 1, "user", 5.0), seg(1, 1)}},
                    trace::Session{"w", 0.1, {seg(40, 4)}},
                    trace::Session{"v", 5.03, {seg(17, 1)}}};
  auto c = cfg(20, 0);
  c.scheduler = "vllm-v1";
  c.max_num_batched_tokens = 10;
  auto pol = make("lru", {{"swap_threshold", "0.5"}, {"reserve", "0"}});
  auto p = test::round_profile();
  sim::SimExecutor ex(p);
  std::vector<sim::IterationRecord> its;
  auto r =
      cluster::simulate(t, c, ex, *pol, [&](const sim::IterationRecord& it) { its.push_back(it); });
  std::vector<int64_t> late;
  for (const auto& it : its)
    if (it.start >= sim::from_seconds(5.0)) late.push_back(it.batch_tokens);
  CHECK(late == std::vector<int64_t>{10, 7, 8, 10});
  CHECK(r.summary.counters.oversized_restores == 1);
  CHECK(rec(r, "x").recomputed_tokens == 16);
  CHECK(rec(r, "x").finish_s == doctest::Approx(5.105).epsilon(1e-12));
}

TEST_CASE("recompute time prices each recomputed token at its position") {
  // The drop above on the tables profile (10 us a token of dense work; per layer,
  // prefill_attention(8, kv) = 8 + 2.4 kv / 64 us, and (16, 0) = 16 us; 2 layers).
  trace::Trace t = {trace::Session{"x", 0.0, {seg(20, 1, "user", 5.0), seg(1, 1)}},
                    trace::Session{"w", 0.1, {seg(40, 4)}}};
  auto prof = sim::load_profile(test::data_dir() + "/profile-tables-small.yaml");
  for (int64_t batch : {8, 1024}) {
    CAPTURE(batch);
    auto c = cfg(20, 0);
    c.scheduler = "chunked";
    c.max_num_batched_tokens = batch;
    auto pol = make("lru", {{"swap_threshold", "0.5"}, {"reserve", "0"}});
    sim::SimExecutor ex(prof);
    auto r = cluster::simulate(t, c, ex, *pol);
    REQUIRE(rec(r, "x").recomputed_tokens == 16);
    // In two pieces: (80 + 2 x 8) + (80 + 2 x 8.3) us; whole: 160 + 2 x 16 us.
    CHECK(r.summary.counters.recompute_time == (batch == 8 ? 192'600 : 192'000));
  }
}
