// Start dependencies (trace::StartAfter; cluster/cluster.h) on the round profile
// (tests/sim_fixtures.h: T(x) = 10 ms + 1 ms per batched token, 4-token blocks), vllm-v0, every
// engine invariant checked after each iteration and the global check after each instant. A
// dependent's arrival_s is left at 0 on purpose: the cluster must ignore it. Every expected time
// is worked out by hand, in integer nanoseconds.
#include <doctest/doctest.h>

#include <stdexcept>

#include "cluster/cluster.h"
#include "cluster/simulation.h"
#include "policies/builtin.h"
#include "policies/routers.h"
#include "tests/sim_fixtures.h"

using namespace isim;
using isim::test::rec;
using isim::test::seg;

namespace {

trace::Session after(const char* id, int32_t p, bool on_finish, double delay,
                     std::vector<trace::Segment> segs) {
  trace::Session s{id, 0.0, std::move(segs)};
  s.start_after = trace::StartAfter{p, on_finish, delay};
  return s;
}

sim::Nanos ns(double s) {
  return sim::from_seconds(s);
}

sim::EngineConfig config(int64_t gpu_blocks = 100) {
  sim::EngineConfig c;
  c.gpu_blocks = gpu_blocks;
  c.cpu_blocks = 0;
  return c;
}

}  // namespace

TEST_CASE("start after: a session arrives exactly when its predecessor finishes, plus the delay") {
  // s0 prefills 8 tokens (0 -> 18 ms) and decodes one more (-> 29 ms). s1 arrives 0.5 s after
  // that, at 529 ms, and prefills 4 tokens (14 ms): it finishes at 543 ms.
  const trace::Trace t = {trace::Session{"s0", 0.0, {seg(8, 2)}},
                          after("s1", 0, true, 0.5, {seg(4, 1)})};
  auto r = test::run(t, "preserve", config());
  CHECK(ns(rec(r, "s0").finish_s) == 29'000'000);
  const auto& s1 = rec(r, "s1");
  CHECK(s1.status == "finished");
  CHECK(ns(s1.arrival_s) == 529'000'000);
  CHECK(ns(s1.finish_s) == 543'000'000);
  CHECK(ns(s1.ttft_s) == 14'000'000);
  CHECK(ns(s1.e2e_s) == 14'000'000);
  SUBCASE("with no delay, at the very instant") {
    const trace::Trace t0 = {trace::Session{"s0", 0.0, {seg(8, 2)}},
                             after("s1", 0, true, 0, {seg(4, 1)})};
    auto r0 = test::run(t0, "preserve", config());
    CHECK(ns(rec(r0, "s1").arrival_s) == 29'000'000);
    CHECK(ns(rec(r0, "s1").finish_s) == 43'000'000);
  }
}

TEST_CASE("start after: a child arrives its delay after its parent arrives, while it runs") {
  // p arrives at 100 ms and prefills 8 tokens (-> 118 ms). c arrives 5 ms after p, at 105 ms,
  // and waits: vllm-v0 prefills it first at 118 ms, 4 tokens (-> 132 ms, its only token); p
  // then decodes its second token (11 ms, -> 143 ms).
  const trace::Trace t = {trace::Session{"p", 0.1, {seg(8, 2)}},
                          after("c", 0, false, 0.005, {seg(4, 1)})};
  auto r = test::run(t, "preserve", config());
  const auto& c = rec(r, "c");
  CHECK(ns(c.arrival_s) == 105'000'000);
  CHECK(ns(c.finish_s) == 132'000'000);
  CHECK(ns(c.ttft_s) == 27'000'000);
  CHECK(ns(rec(r, "p").finish_s) == 143'000'000);
}

TEST_CASE("start after: a skipped predecessor finishes at the instant it would have arrived") {
  // 10 GPU blocks hold 40 tokens: "huge" fits nowhere. Its dependents start from its arrival at
  // 200 ms: "late" 100 ms after it as though finished (300 ms, done at 314 ms), "early" 50 ms
  // after it arrived (250 ms, done at 264 ms). "mid", too big as well, starts 10 ms after early
  // finishes (274 ms) and at once lets "chain" start 100 ms later (374 ms, done at 388 ms).
  const trace::Trace t = {
      trace::Session{"huge", 0.2, {seg(100, 1)}}, after("late", 0, true, 0.1, {seg(4, 1)}),
      after("early", 0, false, 0.05, {seg(4, 1)}), after("mid", 2, true, 0.01, {seg(90, 1)}),
      after("chain", 3, true, 0.1, {seg(4, 1)})};
  auto r = test::run(t, "preserve", config(10));
  CHECK(rec(r, "huge").status == "skipped");
  CHECK(rec(r, "mid").status == "skipped");
  CHECK(r.skipped.size() == 2);
  CHECK(ns(rec(r, "late").arrival_s) == 300'000'000);
  CHECK(ns(rec(r, "late").finish_s) == 314'000'000);
  CHECK(ns(rec(r, "early").arrival_s) == 250'000'000);
  CHECK(ns(rec(r, "early").finish_s) == 264'000'000);
  CHECK(ns(rec(r, "mid").arrival_s) == 274'000'000);
  CHECK(ns(rec(r, "chain").arrival_s) == 374'000'000);
  CHECK(ns(rec(r, "chain").finish_s) == 388'000'000);
}

TEST_CASE("start after: a fleet and a disaggregated fleet route a dependent like any arrival") {
  const trace::Trace t = {trace::Session{"a", 0.0, {seg(8, 3)}},
                          after("b", 0, true, 0.1, {seg(8, 3)})};
  SUBCASE("two replicas, round-robin: b goes to the next one") {
    // a: 18 ms prefill, two 11 ms decodes: done at 40 ms. b arrives at 140 ms on replica 1.
    std::vector<std::unique_ptr<sim::Executor>> ex;
    std::vector<std::unique_ptr<sim::Policy>> pol;
    std::vector<cluster::ReplicaSpec> specs;
    const sim::Profile p = test::round_profile();
    for (int i = 0; i < 2; ++i) {
      ex.push_back(std::make_unique<sim::SimExecutor>(p));
      pol.push_back(policy::policy_registry().create("preserve", "test", policy::PolicyParams{}));
      specs.push_back({config(), ex.back().get(), pol.back().get(), ""});
    }
    auto router = policy::router_registry().create("round-robin", "test", Params({}, "router"));
    auto r = cluster::simulate(t, std::move(specs), *router, /*checks=*/true);
    CHECK(ns(rec(r, "a").finish_s) == 40'000'000);
    CHECK(ns(rec(r, "b").arrival_s) == 140'000'000);
    CHECK(ns(rec(r, "b").finish_s) == 180'000'000);
    CHECK(rec(r, "b").replica_last == 1);
  }
  SUBCASE("prefill on r0, decode on r1 (links 1 MB/s, 2 ms latency)") {
    // a: prefill 0 -> 18 ms, 8000 B over the link -> 28 ms, decodes -> 50 ms. b arrives 100 ms
    // later, at 150 ms, and takes the same path: done at 200 ms.
    const sim::Profile p = test::round_profile();
    cluster::DisaggConfig d;
    d.enabled = true;
    d.roles = {cluster::Role::kPrefill, cluster::Role::kDecode};
    d.links.intra_node = {"nvlink", 0.001, 2e-3};
    d.links.inter_node = {"infiniband", 0.001, 2e-3};
    std::vector<std::unique_ptr<sim::Executor>> ex;
    std::vector<std::unique_ptr<sim::Policy>> pol;
    std::vector<cluster::ReplicaSpec> specs;
    for (int i = 0; i < 2; ++i) {
      ex.push_back(std::make_unique<sim::SimExecutor>(p));
      pol.push_back(policy::policy_registry().create("preserve", "test", policy::PolicyParams{}));
      specs.push_back({config(400), ex.back().get(), pol.back().get(), ""});
    }
    auto router = policy::router_registry().create("least-loaded", "test", Params({}, "router"));
    auto r = cluster::simulate(t, std::move(specs), *router, d, nullptr, /*checks=*/true);
    CHECK(ns(rec(r, "a").finish_s) == 50'000'000);
    const auto& b = rec(r, "b");
    CHECK(ns(b.arrival_s) == 150'000'000);
    CHECK(ns(b.ttft_s) == 18'000'000);
    CHECK(ns(b.finish_s) == 200'000'000);
    CHECK(b.replica_first == 0);
    CHECK(b.replica_last == 1);
  }
}

TEST_CASE("start after: never arrived until it fires; run_until continues; runs repeat exactly") {
  const trace::Trace t = {trace::Session{"s0", 0.0, {seg(8, 2, "tool", 1.0), seg(4, 1)}},
                          after("s1", 0, true, 0.25, {seg(8, 2)}),
                          after("s2", 1, false, 0, {seg(4, 3)})};
  // s0: 18 + 11 ms, a 1 s tool call from 29 ms, then its 4 returned tokens and the last decoded
  // one, whose KV it lacks (10 + 5 ms): done at 1.044 s. s1 and s2 both arrive at 1.294 s.
  const sim::Profile p = test::round_profile();
  auto run_to = [&](sim::Nanos horizon) {
    sim::SimExecutor ex(p);
    auto pol = policy::policy_registry().create("preserve", "test", policy::PolicyParams{});
    cluster::SingleReplica single;
    cluster::Cluster c(t, {cluster::ReplicaSpec{config(), &ex, pol.get(), ""}}, single, true);
    c.load();
    if (horizon != sim::kForever) {
      // s0 is paused; s1 and s2 have not arrived, and are in no replica.
      CHECK(!c.run_until(horizon));
      CHECK(c.ledger().status(0) == cluster::Status::kOnReplica);
      CHECK(c.ledger().status(1) == cluster::Status::kPending);
      CHECK(c.ledger().status(2) == cluster::Status::kPending);
      c.check_global();
      CHECK(!c.run_until(ns(1.29)));
      CHECK(c.ledger().status(0) == cluster::Status::kFinished);
      CHECK(c.ledger().status(1) == cluster::Status::kPending);
    }
    CHECK(c.run_until(sim::kForever));
    return c.result();
  };
  const auto split = run_to(ns(0.5));
  const auto whole = run_to(sim::kForever);
  const auto again = run_to(sim::kForever);
  CHECK(ns(rec(whole, "s0").finish_s) == 1'044'000'000);
  CHECK(ns(rec(whole, "s1").arrival_s) == 1'294'000'000);
  CHECK(ns(rec(whole, "s2").arrival_s) == 1'294'000'000);
  REQUIRE(whole.sessions.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    CAPTURE(i);
    for (const auto* o : {&split, &again}) {
      CHECK(o->sessions[i].status == "finished");
      CHECK(o->sessions[i].arrival_s == whole.sessions[i].arrival_s);
      CHECK(o->sessions[i].first_token_s == whole.sessions[i].first_token_s);
      CHECK(o->sessions[i].finish_s == whole.sessions[i].finish_s);
    }
  }
}

TEST_CASE("start after: a dependency on itself, a later session or none of the trace") {
  const sim::Profile p = test::round_profile();
  // b (index 1) after itself, after c (later), after index 5 or -2 (none), or after a with a
  // negative delay.
  for (int32_t bad : {1, 2, 5, -2, 0}) {
    CAPTURE(bad);
    trace::Trace t = {trace::Session{"a", 0.0, {seg(4, 1)}}, after("b", bad, true, 0, {seg(4, 1)}),
                      trace::Session{"c", 0.0, {seg(4, 1)}}};
    if (bad == 0) t[1].start_after.delay_s = -1;
    sim::SimExecutor ex(p);
    auto pol = policy::policy_registry().create("preserve", "test", policy::PolicyParams{});
    cluster::SingleReplica single;
    cluster::Cluster c(t, {cluster::ReplicaSpec{config(), &ex, pol.get(), ""}}, single, true);
    CHECK_THROWS_AS(c.load(), std::logic_error);
  }
}
