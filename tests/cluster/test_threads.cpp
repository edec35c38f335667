// Replicas advancing apart between the fleet's events (cluster/window.h) on 1, 2 and 4 threads
// against the same fleet run one instant at a time (Checks after every event force that), on
// the round profile (tests/sim_fixtures.h: T(x) = 10 ms + 1 ms per batched token), vllm-v0,
// least-loaded routing. Expected values are worked out by hand below.
#include <doctest/doctest.h>

#include <atomic>
#include <stdexcept>

#include "cluster/simulation.h"
#include "cluster/worker_pool.h"
#include "policies/builtin.h"
#include "policies/routers.h"
#include "tests/sim_fixtures.h"

using namespace isim;
using isim::test::rec;
using isim::test::seg;

namespace {

// a pauses at 40 ms for 1 ms; its resume is routed at 41 ms while c, on the other replica,
// still decodes (it finishes at 45 ms, inside what a window without a's bound would cover).
trace::Trace short_intercept() {
  return {trace::Session{"a", 0.0, {seg(4, 2, "tool", 0.001), seg(4, 1)}},
          trace::Session{"c", 0.009, {seg(4, 3)}}, trace::Session{"b", 0.010, {seg(4, 3)}}};
}

struct ThreadFleet {
  explicit ThreadFleet(size_t n) : profile(test::round_profile()) {
    for (size_t i = 0; i < n; ++i) {
      executors.push_back(std::make_unique<sim::SimExecutor>(profile));
      policies.push_back(
          policy::policy_registry().create("preserve", "test", policy::PolicyParams{}));
    }
  }
  // threads 0: one instant at a time (every check after every event).
  cluster::RunResult run(const trace::Trace& t, int32_t threads, double sample_s = 0) {
    auto router = policy::router_registry().create("least-loaded", "test", Params({}, "router"));
    std::vector<cluster::ReplicaSpec> specs;
    for (size_t i = 0; i < executors.size(); ++i) {
      sim::EngineConfig c;
      c.gpu_blocks = 100;
      c.cpu_blocks = 0;
      c.timeseries_interval_s = sample_s;
      specs.push_back({c, executors[i].get(), policies[i].get(), ""});
    }
    return cluster::simulate(t, std::move(specs), *router, cluster::DisaggConfig{}, nullptr,
                             cluster::Checks(threads == 0), nullptr, nullptr, std::max(threads, 1));
  }
  sim::Profile profile;
  std::vector<std::unique_ptr<sim::Executor>> executors;
  std::vector<std::unique_ptr<sim::Policy>> policies;
};

// What two runs must share, field by field.
void same(const cluster::RunResult& x, const cluster::RunResult& y) {
  REQUIRE(x.sessions.size() == y.sessions.size());
  for (size_t i = 0; i < x.sessions.size(); ++i) {
    const auto &a = x.sessions[i], &b = y.sessions[i];
    CHECK(a.id == b.id);
    CHECK(a.status == b.status);
    CHECK(a.finish_s == b.finish_s);
    CHECK(a.ttft_s == b.ttft_s);
    CHECK(a.resume_ttft_s == b.resume_ttft_s);
    CHECK(a.replica_first == b.replica_first);
    CHECK(a.replica_last == b.replica_last);
    CHECK(a.migrations == b.migrations);
  }
  REQUIRE(x.turns.size() == y.turns.size());
  for (size_t i = 0; i < x.turns.size(); ++i) {
    CHECK(x.turns[i].session == y.turns[i].session);
    CHECK(x.turns[i].seg == y.turns[i].seg);
    CHECK(x.turns[i].finish_s == y.turns[i].finish_s);
    CHECK(x.turns[i].replica == y.turns[i].replica);
  }
  CHECK(x.summary.counters.iterations == y.summary.counters.iterations);
  REQUIRE(x.timeseries.size() == y.timeseries.size());
  for (size_t i = 0; i < x.timeseries.size(); ++i) {
    CHECK(x.timeseries[i].t_s == y.timeseries[i].t_s);
    CHECK(x.timeseries[i].running == y.timeseries[i].running);
    CHECK(x.timeseries[i].waiting == y.timeseries[i].waiting);
  }
  CHECK(x.fleet.migrations == y.fleet.migrations);
}

}  // namespace

TEST_CASE("a pause's short intercept ends inside a window: 1, 2, 4 threads as one at a time" *
          doctest::test_suite("threads")) {
  // Least-loaded (queued prefill + decoding sessions; ties to the lower replica):
  //   0 ms  a -> r0 (0 vs 0); r0 prefills a's 4 tokens: 14 ms, to 14.
  //   9 ms  c -> r1 (r0 holds a's 4 pending tokens); r1 prefills c: 9 -> 23.
  //  10 ms  b -> r0 (4 vs 4).
  //  r0: 14 a's 1st token; b's prefill alone (vllm-v0) 14 -> 28; a and b decode (12 ms) 28 -> 40:
  //      a's 2nd token, a pauses for 1 ms (its intercept ends at 41); b decodes 40 -> 51 and
  //      finishes; a prefills its 4 returning tokens and its last output, which has no KV yet
  //      (10 + 5 = 15 ms), 51 -> 66: a finishes at 66 ms.
  //  r1: c decodes 23 -> 34 -> 45 (11 ms each) and finishes at 45.
  //  41 ms: a's resume sees r0 = 1 decoding (b), r1 = 1 decoding (c): a stays on r0. A window
  //  run past 41 (r1's end at 45 is before 40 + the 11 ms step floor) would have seen r1 empty
  //  and moved a there.
  ThreadFleet f(2);
  const cluster::RunResult one_at_a_time = f.run(short_intercept(), 0);
  for (int32_t threads : {1, 2, 4}) {
    CAPTURE(threads);
    const cluster::RunResult r = f.run(short_intercept(), threads);
    same(one_at_a_time, r);
    CHECK(rec(r, "a").finish_s == doctest::Approx(0.066));
    CHECK(rec(r, "a").resume_ttft_s == doctest::Approx(0.025));  // 66 - 41 ms
    CHECK(rec(r, "a").migrations == 0);
    CHECK(rec(r, "a").replica_last == 0);
    CHECK(rec(r, "b").finish_s == doctest::Approx(0.051));
    CHECK(rec(r, "c").finish_s == doctest::Approx(0.045));
    CHECK(rec(r, "c").replica_first == 1);
    CHECK(r.fleet.migrations == 0);
  }
}

TEST_CASE("windows with samples and many replicas: 1, 2, 4 threads as one at a time" *
          doctest::test_suite("threads")) {
  // 24 sessions on 5 replicas, arrivals every 7 ms, pauses of 3 to 40 ms, a sample every 20
  // ms: windows end at samples, arrivals and intercept ends alike.
  trace::Trace t;
  for (int i = 0; i < 24; ++i)
    t.push_back(trace::Session{
        "s" + std::to_string(i),
        0.007 * i,
        {seg(4 + i % 5, 3 + i % 4, "tool", 0.003 * (1 + i % 13)), seg(2 + i % 3, 2 + i % 6)}});
  ThreadFleet f(5);
  const cluster::RunResult one_at_a_time = f.run(t, 0, 0.02);
  CHECK(one_at_a_time.timeseries.size() > 3);
  for (int32_t threads : {1, 2, 4}) {
    CAPTURE(threads);
    same(one_at_a_time, f.run(t, threads, 0.02));
  }
}

TEST_CASE("WorkerPool: every part once per round; the lowest part's exception" *
          doctest::test_suite("threads")) {
  cluster::WorkerPool pool(3);
  std::vector<std::atomic<int>> calls(3);
  for (int round = 0; round < 100; ++round)
    pool.run([&](int32_t k) { calls[static_cast<size_t>(k)].fetch_add(1); });
  for (auto& c : calls) CHECK(c.load() == 100);
  CHECK_THROWS_WITH_AS(pool.run([](int32_t k) {
    if (k >= 1) throw std::runtime_error("part " + std::to_string(k));
  }),
                       "part 1", std::runtime_error);
  // The pool runs on after a throw.
  pool.run([&](int32_t k) { calls[static_cast<size_t>(k)].fetch_add(1); });
  CHECK(calls[2].load() == 101);
}
