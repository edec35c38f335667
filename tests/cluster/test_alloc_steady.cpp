// Heap allocations on the iteration path (issue 38: a fleet that stays in cache). This file is
// its own test executable (test_alloc): it replaces the global operator new and delete with
// counting ones, which must not leak into other tests.
//
// Set-up (tests/sim_fixtures.h): the round profile, T(x) = 10 ms + 1 ms per batched token,
// 4-token blocks, no step overhead; vllm-v0, preserve, 2 replicas behind round-robin, no time
// series (timeseries_interval_s 0: a sample tick appends to the series, by design).
#include <doctest/doctest.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "policies/builtin.h"
#include "policies/routers.h"
#include "tests/sim_fixtures.h"

namespace {
std::atomic<int64_t> g_allocations{0};

void* counted(std::size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n > 0 ? n : 1)) return p;
  throw std::bad_alloc();
}
void* counted_aligned(std::size_t n, std::align_val_t al) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  const auto a = static_cast<std::size_t>(al);
  if (void* p = std::aligned_alloc(a, (n + a - 1) / a * a)) return p;
  throw std::bad_alloc();
}
}  // namespace

void* operator new(std::size_t n) {
  return counted(n);
}
void* operator new[](std::size_t n) {
  return counted(n);
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return counted(n);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, const std::nothrow_t& t) noexcept {
  return operator new(n, t);
}
void* operator new(std::size_t n, std::align_val_t al) {
  return counted_aligned(n, al);
}
void* operator new[](std::size_t n, std::align_val_t al) {
  return counted_aligned(n, al);
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete[](void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete(void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}

using namespace isim;
using isim::test::seg;

namespace {

constexpr sim::Nanos kMs = 1'000'000;

// Two replicas on the round profile, run step by step with run_until; `coalesce`: decode
// steps coalesce into runs (sim/decode_run.h) or are stepped one at a time.
struct AllocFleet {
  explicit AllocFleet(const trace::Trace& t, const std::string& route = "round-robin",
                      bool coalesce = true)
      : profile(test::round_profile()), trace(t) {
    router = policy::router_registry().create(route, "test", Params({}, "router"));
    std::vector<cluster::ReplicaSpec> specs;
    for (int i = 0; i < 2; ++i) {
      executors.push_back(std::make_unique<sim::SimExecutor>(profile));
      policies.push_back(policy::policy_registry().create("preserve", "test", {}));
      sim::EngineConfig c;
      c.gpu_blocks = 1000;
      c.cpu_blocks = 0;
      c.timeseries_interval_s = 0;
      c.coalesce_decode = coalesce;
      specs.push_back({c, executors.back().get(), policies.back().get(), ""});
    }
    cluster = std::make_unique<cluster::Cluster>(trace, std::move(specs), *router);
    cluster->load();
  }
  // Allocations while the run advances to `t`.
  int64_t allocations_until(sim::Nanos t) {
    const int64_t before = g_allocations.load();
    cluster->run_until(t);
    return g_allocations.load() - before;
  }
  int64_t iterations() const {
    return cluster->engine(0).view().counters().iterations +
           cluster->engine(1).view().counters().iterations;
  }

  sim::Profile profile;
  trace::Trace trace;
  std::unique_ptr<cluster::Router> router;
  std::vector<std::unique_ptr<sim::Executor>> executors;
  std::vector<std::unique_ptr<sim::Policy>> policies;
  std::unique_ptr<cluster::Cluster> cluster;
};

// At t = 0, round-robin: w0 -> 0, w1 -> 1, a -> 0, b -> 1, c -> 0, d -> 1. Each replica's first
// iteration prefills its w (1,000 tokens = 250 blocks) and two 8-token prompts: 1,016 tokens,
// T = 10 + 1,016 = 1,026 ms. w's one output ends it there: its 250 blocks go back to the free
// list, so the pool's per-block arrays never grow again (the decoders' blocks come off the free
// list). From 1,026 ms each replica decodes its two sessions: T = 10 + 2 = 12 ms per iteration,
// every token gap 12 ms (one run-length entry per turn).
trace::Trace warm_then_decode() {
  return {trace::Session{"w0", 0.0, {seg(1000, 1)}}, trace::Session{"w1", 0.0, {seg(1000, 1)}},
          trace::Session{"a", 0.0, {seg(8, 400)}},   trace::Session{"b", 0.0, {seg(8, 400)}},
          trace::Session{"c", 0.0, {seg(8, 400)}},   trace::Session{"d", 0.0, {seg(8, 400)}}};
}

}  // namespace

TEST_CASE("counting allocator: the counter sees allocations") {
  const int64_t before = g_allocations.load();
  auto p = std::make_unique<std::vector<int>>(100);  // the vector object and its 100 ints: 2
  CHECK(g_allocations.load() - before == 2);
}

TEST_CASE("a fleet that only decodes allocates nothing per iteration, stepped one at a time") {
  AllocFleet f(warm_then_decode(), "round-robin", false);
  // Warm-up: the prefills end at 1,026 ms, then 20 decode iterations per replica end at
  // 1,026 + 20 x 12 = 1,266 ms, where the 21st starts; every buffer has grown to its size.
  f.allocations_until(1026 * kMs + 20 * 12 * kMs);
  const int64_t warm = f.iterations();  // counted as they start
  CHECK(warm == 2 * (1 + 20 + 1));      // per replica: the prefill, 20 decodes and the 21st
  // 200 more decode iterations per replica: a, b, c, d reach 1 + 220 of their 400 tokens, so
  // none finishes, nothing arrives, and every new block (one per 4 tokens) is on the free list.
  const int64_t n = f.allocations_until(1026 * kMs + 220 * 12 * kMs);
  CHECK(f.iterations() - warm == 2 * 200);
  CHECK(n == 0);
}

TEST_CASE("a fleet that only decodes allocates nothing per iteration, in coalesced runs") {
  AllocFleet f(warm_then_decode());
  // A run's per-step lists grow to the longest run once. Warm-up: from 1,026 ms each replica
  // decodes in runs that end by the horizon, 1,026 + 200 x 12 ms: 200 steps, 1 + 200 tokens.
  f.allocations_until(1026 * kMs + 200 * 12 * kMs);
  const int64_t warm = f.iterations();
  CHECK(warm == 2 * (1 + 200 + 1));  // as stepping counts: the prefill, 200 decodes, the next
  // 190 more steps per replica in runs no longer than the longest so far: a, b, c, d reach
  // 1 + 390 of their 400 tokens.
  const int64_t n = f.allocations_until(1026 * kMs + 390 * 12 * kMs);
  CHECK(f.iterations() - warm == 2 * 190);
  CHECK(n == 0);
}

// Case 2 adds 4 sessions in a warm-up round (q, from 1.5 s) and 4 counted ones (p, from 3.5 s),
// every 0.25 s, each: an 8-token prompt, 4 outputs, a 0.2 s tool call, 4 tokens back, 4 outputs,
// the end. The decoders a-d now emit 800 tokens each (till ~11 s): they decode throughout.
// session-affinity resumes every p on its own replica (no migration).
trace::Trace arrivals_and_pauses() {
  trace::Trace t = warm_then_decode();
  for (size_t i = 2; i < t.size(); ++i) t[i].segments[0].output = 800;
  for (const char* round : {"q", "p"})
    for (int k = 0; k < 4; ++k)
      t.push_back(trace::Session{round + std::to_string(k),
                                 (*round == 'q' ? 1.5 : 3.5) + 0.25 * k,
                                 {seg(8, 4, "tool", 0.2), seg(4, 4)}});
  return t;
}

// The p round's allocations; `stepped`: decode steps one at a time, where each arrival's own
// count is exact. In coalesced runs an arrival also settles its replica's run (Engine::settle):
// the decoders' gaps of the steps before it land then, not at each step, so only the round's
// total is bounded.
static void p_round(bool stepped) {
  AllocFleet f(arrivals_and_pauses(), "session-affinity", !stepped);
  f.allocations_until(3400 * kMs);  // the q round is over: shared lists have grown
  // An arrival alone (no other event at its instant): 2 allocations, the waiting queue's node
  // (ReplicaQueues keeps a std::set) and the turn's block list (Engine::reserve_turn_blocks).
  int64_t total = 0;
  for (int k = 0; k < 4; ++k) {
    const sim::Nanos at = 3500 * kMs + k * 250 * kMs;
    total += f.allocations_until(at - 1);
    const int64_t n = f.allocations_until(at);
    if (stepped) CHECK(n == 2);
    total += n;
  }
  total += f.allocations_until(5500 * kMs);  // every p has finished by then
  for (int k = 0; k < 4; ++k)
    CHECK(f.cluster->ledger().status(10 + k) == cluster::Status::kFinished);
  // The bound, per p session (4 of them), by what allocates:
  //   arrival: 2 (above);
  //   resume: 2, the waiting queue's node and the new turn's larger block list
  //     (blocks_for(12 + 4 + 4, 4) = 5 > blocks_for(8 + 4, 4) = 3 reserved before);
  //   each of its 2 turns: at most 3 growths of its gap runs (4 outputs: <= 3 gaps; capacity
  //     1, 2, 4) and 1 copy of them into the turn's record (Cluster::segment_done, the ledger).
  // 4 x (2 + 2 + 2 x (3 + 1)) = 48, plus the ledger's two lists doubling once each: its turns
  // (10 before the p round, w0, w1 and 4 q x 2, capacity 16; 18 after) and its resumed turns'
  // first-token times (4 q, capacity 4; 8 after): 50.
  CHECK(total <= 4 * (2 + 2 + 2 * (3 + 1)) + 2);
  MESSAGE("allocations over the p round: " << total << " (bound 50)");
}

TEST_CASE("arrivals, pauses, resumes and finishes allocate within a hand-derived bound") {
  SUBCASE("stepped") {
    p_round(true);
  }
  SUBCASE("coalesced") {
    p_round(false);
  }
}
