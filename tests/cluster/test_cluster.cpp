// A cluster of 2-3 replicas on the round profile (tests/sim_fixtures.h: T(x) = 10 ms + 1 ms per
// batched token, 4-token blocks), vllm-v0, every invariant checked after each iteration and the
// global check after each instant. Every expected value below is worked out by hand.
#include <doctest/doctest.h>

#include "cluster/simulation.h"
#include "core/input_error.h"
#include "policies/builtin.h"
#include "policies/routers.h"
#include "tests/sim_fixtures.h"

using namespace isim;
using isim::test::rec;
using isim::test::seg;

namespace {

struct Fleet {
  Fleet(size_t n, const std::string& policy) : profile(test::round_profile()) {
    for (size_t i = 0; i < n; ++i) {
      executors.push_back(std::make_unique<sim::SimExecutor>(profile));
      policies.push_back(policy::policy_registry().create(policy, "test", policy::PolicyParams{}));
    }
  }
  cluster::RunResult run(const trace::Trace& t, const std::string& router,
                         std::map<std::string, std::string> params = {}) {
    auto r = policy::router_registry().create(router, "test", Params(params, "router"));
    std::vector<cluster::ReplicaSpec> specs;
    for (size_t i = 0; i < executors.size(); ++i) {
      sim::EngineConfig c;
      c.gpu_blocks = i < gpu_blocks.size() ? gpu_blocks[i] : 100;
      c.cpu_blocks = 0;
      specs.push_back({c, executors[i].get(), policies[i].get(), ""});
    }
    return cluster::simulate(t, std::move(specs), *r, /*check_invariants=*/true);
  }
  sim::Profile profile;
  std::vector<int64_t> gpu_blocks;  // per replica (100 where not given)
  std::vector<std::unique_ptr<sim::Executor>> executors;
  std::vector<std::unique_ptr<sim::Policy>> policies;
};

// a and b each prefill 8 tokens (18 ms), decode one more (11 ms) and pause at 29 ms for 1 s
// holding 9 KV tokens of a 10-token context; then 4 tokens return and one is decoded.
trace::Trace two_pausing() {
  return {trace::Session{"a", 0.0, {seg(8, 2, "tool", 1.0), seg(4, 1)}},
          trace::Session{"b", 0.0, {seg(8, 2, "tool", 1.0), seg(4, 1)}}};
}

}  // namespace

TEST_CASE("session-affinity resumes at the KV; round-robin moves it and recomputes") {
  // 3 replicas. Arrivals: a -> 0, b -> 1 under both routers (b sees a's 8 queued tokens).
  SUBCASE("session-affinity") {
    Fleet f(3, "preserve");
    auto r = f.run(two_pausing(), "session-affinity");
    for (const char* id : {"a", "b"}) {
      const auto& s = rec(r, id);
      CHECK(s.ttft_s == doctest::Approx(0.018));
      // Resumed at 1.029 s at home: prefill the 5 tokens without KV (10 + 5 = 15 ms).
      CHECK(s.finish_s == doctest::Approx(1.044));
      CHECK(s.resume_ttft_s == doctest::Approx(0.015));
      CHECK(s.recomputed_tokens == 0);
      CHECK(s.migrations == 0);
      CHECK(s.replica_first == s.replica_last);
    }
    CHECK(rec(r, "a").replica_first == 0);
    CHECK(rec(r, "b").replica_first == 1);
    CHECK(r.fleet.migrations == 0);
    CHECK(r.summary.counters.lost_reuse_total() == 0);
  }
  SUBCASE("round-robin") {
    Fleet f(3, "preserve");
    auto r = f.run(two_pausing(), "round-robin");
    // Resumes take the next replicas in turn: a -> 2, b -> 0. Each drops its 9 KV tokens at
    // home and prefills its whole 14-token context where it lands (10 + 14 = 24 ms).
    const auto& a = rec(r, "a");
    const auto& b = rec(r, "b");
    CHECK(a.replica_first == 0);
    CHECK(a.replica_last == 2);
    CHECK(b.replica_first == 1);
    CHECK(b.replica_last == 0);
    for (const auto* s : {&a, &b}) {
      CHECK(s->finish_s == doctest::Approx(1.053));
      CHECK(s->resume_ttft_s == doctest::Approx(0.024));
      CHECK(s->recomputed_tokens == 9);
      CHECK(s->migrations == 1);
    }
    CHECK(r.fleet.migrations == 2);
    CHECK(r.summary.counters.recomputed_tokens == 18);
    CHECK(r.summary.counters.lost_reuse[static_cast<size_t>(sim::LostCause::kMigration)] == 18);
    CHECK(r.summary.counters.lost_reuse_total() == 18);
    // Per replica: r0 admitted a and resumed b; r1 admitted b; r2 resumed a.
    CHECK(r.replicas[0].admitted == 1);
    CHECK(r.replicas[0].resumed_here == 1);
    CHECK(r.replicas[1].resumed_here == 0);
    CHECK(r.replicas[2].resumed_here == 1);
  }
}

TEST_CASE("kv-aware places a session on the replica whose prefix cache holds its prompt") {
  // f (8 tokens, no hashes) arrives at 0 and starts prefilling on replica 0, holding 2 blocks.
  // p1 (16 tokens, 4 hashed blocks) arrives at 1 ms: cost = uncached prefill blocks + decode
  // blocks = 4 + (2 + 4) on replica 0 and 4 + (0 + 4) on replica 1, so it goes to 1, where its
  // 4 blocks stay cached after it finishes. p2 (20 tokens, same 4 hashed blocks) arrives at 1 s:
  // 5 + 5 on replica 0, 1 + 5 on replica 1.
  const trace::PrefixHashes h{4, {11, 12, 13, 14}};
  trace::Trace t = {trace::Session{"f", 0.0, {seg(8, 1)}},
                    trace::Session{"p1", 0.001, {seg(16, 1)}, h},
                    trace::Session{"p2", 1.0, {seg(20, 1)}, h}};
  SUBCASE("kv-aware") {
    Fleet f(2, "preserve");
    auto r = f.run(t, "kv-aware");
    CHECK(rec(r, "p1").replica_last == 1);
    const auto& p2 = rec(r, "p2");
    CHECK(p2.replica_last == 1);
    CHECK(p2.prefix_hit_tokens == 16);
    CHECK(p2.ttft_s == doctest::Approx(0.014));  // 4 uncached tokens: 10 + 4 ms
  }
  SUBCASE("round-robin misses it") {
    Fleet f(2, "preserve");
    auto r = f.run(t, "round-robin");
    const auto& p2 = rec(r, "p2");
    CHECK(p2.replica_last == 0);
    CHECK(p2.prefix_hit_tokens == 0);
    CHECK(p2.ttft_s == doctest::Approx(0.030));  // all 20 tokens: 10 + 20 ms
  }
  SUBCASE("the overlap weight is a parameter, checked") {
    Fleet f(2, "preserve");
    CHECK_THROWS_WITH_AS(f.run(t, "kv-aware", {{"overlap_weight", "-1"}}),
                         "router.overlap_weight: must be >= 0", InputError);
    CHECK_THROWS_WITH_AS(f.run(t, "kv-aware", {{"temperature", "0"}}),
                         "router.temperature: unknown parameter; router 'kv-aware' takes "
                         "overlap_weight",
                         InputError);
  }
}

TEST_CASE("kv-aware: overlap_weight trades cached prefill blocks against held decode blocks") {
  // p1 (16 tokens, 4 hashed blocks) arrives at 0: both replicas cost the same, so replica 0
  // (lowest index); it finishes at 26 ms and its 4 blocks stay cached there. h (24 tokens, the
  // same 4 blocks then 2 more) arrives at 0.5 s: 2w + 6 on replica 0 against 6w + 6 on 1, so 0;
  // it prefills its 8 uncached tokens (18 ms) and pauses for 10 s holding 6 blocks.
  // p2 (20 tokens = 5 blocks, the same 4 hashed) arrives at 1 s:
  //   replica 0: w x 1 uncached + (6 held + 5) = w + 11; replica 1: w x 5 + (0 + 5) = 5w + 5.
  //   w = 1: 12 against 10, replica 1 (no hit: TTFT 10 + 20 = 30 ms);
  //   w = 4: 15 against 25, replica 0 (16 hit tokens: TTFT 10 + 4 = 14 ms).
  const trace::PrefixHashes h4{4, {11, 12, 13, 14}};
  const trace::PrefixHashes h6{4, {11, 12, 13, 14, 21, 22}};
  const trace::Trace t = {trace::Session{"p1", 0.0, {seg(16, 1)}, h4},
                          trace::Session{"h", 0.5, {seg(24, 1, "tool", 10.0), seg(1, 1)}, h6},
                          trace::Session{"p2", 1.0, {seg(20, 1)}, h4}};
  SUBCASE("weight 1: the emptier replica") {
    Fleet f(2, "preserve");
    auto r = f.run(t, "kv-aware", {{"overlap_weight", "1"}});
    CHECK(rec(r, "h").replica_first == 0);
    CHECK(rec(r, "p2").replica_first == 1);
    CHECK(rec(r, "p2").prefix_hit_tokens == 0);
    CHECK(rec(r, "p2").ttft_s == doctest::Approx(0.030));
  }
  SUBCASE("weight 4: the replica with the cached prefix") {
    Fleet f(2, "preserve");
    auto r = f.run(t, "kv-aware", {{"overlap_weight", "4"}});
    CHECK(rec(r, "h").replica_first == 0);
    CHECK(rec(r, "p2").replica_first == 0);
    CHECK(rec(r, "p2").prefix_hit_tokens == 16);
    CHECK(rec(r, "p2").ttft_s == doctest::Approx(0.014));
  }
}

TEST_CASE("kv-aware: a resumed session is credited the KV its holder kept") {
  // a alone on 2 replicas: replica 0 (tie). Prefill 8 (18 ms), one decode (11 ms), paused at
  // 29 ms holding 9 KV tokens (3 blocks) of a 10-token context. The resume at 1.029 s has 14
  // context tokens, 4 blocks:
  //   replica 0 (holder): 4 - 9 / 4 = 2 uncached + (3 used + 4 - 3 held) = 2 + 4 = 6;
  //   replica 1: 4 uncached + (0 + 4) = 8.
  // So a stays (had the holder's 3 blocks been counted as new, replica 0 would cost
  // 2 + 3 + 4 = 9 and a would move): it prefills the 5 tokens without KV, 10 + 5 = 15 ms.
  const trace::Trace t = {trace::Session{"a", 0.0, {seg(8, 2, "tool", 1.0), seg(4, 1)}}};
  Fleet f(2, "preserve");
  auto r = f.run(t, "kv-aware");
  const auto& a = rec(r, "a");
  CHECK(a.replica_first == 0);
  CHECK(a.replica_last == 0);
  CHECK(a.migrations == 0);
  CHECK(a.recomputed_tokens == 0);
  CHECK(a.resume_ttft_s == doctest::Approx(0.015));
  CHECK(a.finish_s == doctest::Approx(1.044));
}

TEST_CASE("least-loaded spreads an imbalanced burst by outstanding tokens") {
  // Four sessions at t = 0 with prompts 40, 8, 8, 8, one output each. Least-loaded: s1 -> 0
  // (tie), then replica 0 has 40 queued tokens and replica 1 has 0, 8, 16: s2, s3, s4 -> 1.
  trace::Trace t = {trace::Session{"s1", 0.0, {seg(40, 1)}}, trace::Session{"s2", 0.0, {seg(8, 1)}},
                    trace::Session{"s3", 0.0, {seg(8, 1)}}, trace::Session{"s4", 0.0, {seg(8, 1)}}};
  SUBCASE("least-loaded") {
    Fleet f(2, "preserve");
    auto r = f.run(t, "least-loaded");
    CHECK(rec(r, "s1").replica_last == 0);
    for (const char* id : {"s2", "s3", "s4"}) {
      CHECK(rec(r, id).replica_last == 1);
      CHECK(rec(r, id).ttft_s == doctest::Approx(0.034));  // one 24-token batch: 10 + 24 ms
    }
    CHECK(rec(r, "s1").ttft_s == doctest::Approx(0.050));  // 10 + 40 ms
    CHECK(r.summary.makespan_s == doctest::Approx(0.050));
    // Busy 50 and 34 ms: max / mean = 50 / 42.
    CHECK(r.fleet.busy_imbalance == doctest::Approx(50.0 / 42.0));
  }
  SUBCASE("round-robin alternates") {
    Fleet f(2, "preserve");
    auto r = f.run(t, "round-robin");
    // Replica 0: s1 + s3 = 48 tokens (58 ms); replica 1: s2 + s4 = 16 tokens (26 ms).
    CHECK(rec(r, "s1").ttft_s == doctest::Approx(0.058));
    CHECK(rec(r, "s3").ttft_s == doctest::Approx(0.058));
    CHECK(rec(r, "s2").ttft_s == doctest::Approx(0.026));
    CHECK(r.summary.makespan_s == doctest::Approx(0.058));
    CHECK(r.fleet.busy_imbalance == doctest::Approx(58.0 / 42.0));
  }
}

TEST_CASE("power-of-two is seeded: the same seed places the same way") {
  trace::Trace t;
  for (int i = 0; i < 40; ++i) {
    std::string id = "s";  // (not "s" + to_string(i): GCC 12 warns falsely with -Wrestrict)
    id += std::to_string(i);
    t.push_back(trace::Session{id, 0.01 * i, {seg(8 + i % 5, 3, "x", 0.2), seg(2, 2)}});
  }
  Fleet f1(4, "preserve"), f2(4, "preserve");
  auto a = f1.run(t, "power-of-two", {{"seed", "7"}});
  auto b = f2.run(t, "power-of-two", {{"seed", "7"}});
  REQUIRE(a.sessions.size() == b.sessions.size());
  std::set<int32_t> used;
  for (size_t i = 0; i < a.sessions.size(); ++i) {
    CHECK(a.sessions[i].replica_last == b.sessions[i].replica_last);
    CHECK(a.sessions[i].finish_s == b.sessions[i].finish_s);
    used.insert(a.sessions[i].replica_first);
  }
  CHECK(used.size() == 4);  // it spreads over the fleet
}

TEST_CASE("a session no replica fits is skipped; one that fits only some is routed there") {
  // Replica 0 holds 100 blocks (400 tokens), replica 1 holds 200 (800 tokens).
  trace::Trace t = {trace::Session{"huge", 0.0, {seg(900, 1)}},
                    trace::Session{"big", 0.0, {seg(600, 1)}},
                    trace::Session{"ok", 0.0, {seg(8, 1)}}};
  Fleet f(2, "preserve");
  f.gpu_blocks = {100, 200};
  auto r = f.run(t, "round-robin");
  CHECK(rec(r, "huge").status == "skipped");
  REQUIRE(r.skipped.size() == 1);
  CHECK(r.skipped[0] ==
        "session huge skipped: its context reaches 901 tokens but the GPU holds 400 (100 blocks "
        "of 4, 0 reserved for decodes)");
  // Round-robin's turn is replica 0 for big, which cannot hold it: the next eligible one.
  CHECK(rec(r, "big").replica_last == 1);
  CHECK(rec(r, "ok").replica_last == 0);
  CHECK(rec(r, "ok").status == "finished");
}

TEST_CASE("unknown routers list the valid ones") {
  CHECK_THROWS_WITH_AS(
      policy::router_registry().create("random", "cluster.router", Params{}),
      "cluster.router: unknown router 'random'; valid: dp-lb, kv-aware, least-loaded, "
      "power-of-two, round-robin, session-affinity",
      InputError);
}

TEST_CASE("a run that outlasts its trace stops at the time-series cap, naming the key") {
  // One session, 4-token prompt and 100 output tokens: prefill T(4) = 14 ms, then 99 decodes of
  // T(1) = 11 ms: it ends at 1,103 ms. Sampled every 10 ms: samples at 0, 10, ..., 1,100 ms
  // (those before the last event), 111 in all. A cap of 50 stops the run as it would take the
  // 51st, at t = 500 ms.
  trace::Trace t = {trace::Session{"a", 0.0, {seg(4, 100)}}};
  auto p = test::round_profile();
  sim::EngineConfig c;
  c.gpu_blocks = 100;
  c.cpu_blocks = 0;
  c.timeseries_interval_s = 0.01;
  auto pol = policy::policy_registry().create("discard", "test", policy::PolicyParams{});
  sim::SimExecutor ex(p);
  SUBCASE("under the cap") {
    c.max_time_samples = 111;
    auto r = cluster::simulate(t, c, ex, *pol);
    CHECK(rec(r, "a").finish_s == doctest::Approx(1.103));
    CHECK(r.timeseries.size() == 111);
    CHECK(r.timeseries.back().t_s == doctest::Approx(1.1));
  }
  SUBCASE("over it") {
    c.max_time_samples = 50;
    CHECK_THROWS_WITH_AS(cluster::simulate(t, c, ex, *pol),
                         "metrics.timeseries_interval_s: 0.01 s reached the cap of 50 time-series "
                         "samples at t = 0.500 s, with sessions still running (the run outlasts "
                         "its trace); raise it, e.g. -p metrics.timeseries_interval_s=0.1",
                         InputError);
  }
}
