// The invariant checks catch each planted fault (the engine parts' checks, Cluster::check_global).
// A two-replica fleet on the round profile (tests/sim_fixtures.h: T(x) = 10 ms + 1 ms per
// batched token, 4-token blocks), 20 GPU blocks a replica, vllm-v0, preserve, round-robin (a
// and c on replica 0, b and d on replica 1), stopped at 100 ms:
//   replica 0: [0,26) prefill a and c (8 + 8); [26,38) [38,50) decode both: a pauses at 50 ms
//              with 10 KV tokens in 3 blocks (0.5 s intercept); c decodes alone in 11 ms
//              iterations from 50 ms, the one of [94,105) in flight, with kv 14.
//   replica 1: [0,18) prefill b; then 11 ms decodes, the one of [95,106) in flight.
//   d arrives at 102 ms (the first event after the stop, before either iteration ends).
// Each fault is planted in the engine's parts through EngineTestAccess (a friend of Engine and
// of its parts that only this test defines) and must be caught with its own message; the state
// before planting passes.
#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cluster/cluster.h"
#include "policies/builtin.h"
#include "policies/routers.h"
#include "tests/sim_fixtures.h"

namespace isim::sim {
struct EngineTestAccess {
  static SessionState& slot(Engine& e, int32_t h) { return e.table_[h]; }
  static BlockPool& gpu(Engine& e) { return e.kv_.gpu_; }
  static std::vector<int32_t>& running(Engine& e) { return e.queues_.running_; }
  static std::vector<int32_t>& paused(Engine& e) { return e.queues_.paused_; }
  static int32_t take_slot(Engine& e, SessionState s) {
    const int32_t h = e.table_.take(std::move(s), e.replica_);
    e.prefix_.adopt(e.table_[h]);
    return h;
  }
  static void free_slot(Engine& e, int32_t h) { e.table_.free(h); }
};
}  // namespace isim::sim

using namespace isim;
using isim::test::seg;
using Access = sim::EngineTestAccess;

namespace {

constexpr int32_t kA = 0, kB = 1, kC = 2;  // trace indices

struct Fleet {
  explicit Fleet(cluster::Checks checks = true) {
    for (int r = 0; r < 2; ++r) {
      ex.push_back(std::make_unique<sim::SimExecutor>(profile));
      pol.push_back(policy::policy_registry().create("preserve", "test", policy::PolicyParams{}));
      sim::EngineConfig cfg;
      cfg.gpu_blocks = 20;
      cfg.cpu_blocks = 10;
      cfg.max_num_batched_tokens = 64;
      specs.push_back({cfg, ex.back().get(), pol.back().get(), ""});
    }
    router = policy::router_registry().create("round-robin", "test", Params({}, "router"));
    c = std::make_unique<cluster::Cluster>(trace, specs, *router, checks);
    c->load();
    REQUIRE(!c->run_until(sim::from_ms(100)));
  }
  sim::Engine& r0() { return c->replica(0); }
  sim::Engine& r1() { return c->replica(1); }
  int32_t h(int32_t idx) const { return c->ledger().where(idx).handle; }
  sim::SessionState& a() { return Access::slot(r0(), h(kA)); }
  sim::SessionState& c_() { return Access::slot(r0(), h(kC)); }

  trace::Trace trace = {trace::Session{"a", 0.0, {seg(8, 3, "qa", 0.5), seg(4, 2)}},
                        trace::Session{"b", 0.0, {seg(8, 40)}},
                        trace::Session{"c", 0.0, {seg(8, 40)}},
                        trace::Session{"d", 0.102, {seg(4, 1)}}};
  sim::Profile profile = test::round_profile();
  std::vector<std::unique_ptr<sim::SimExecutor>> ex;
  std::vector<std::unique_ptr<sim::Policy>> pol;
  std::vector<cluster::ReplicaSpec> specs;
  std::unique_ptr<cluster::Router> router;
  std::unique_ptr<cluster::Cluster> c;
};

std::string r0(const std::string& m) { return "invariant (replica 0): " + m; }

}  // namespace

TEST_CASE("the stopped fleet is as described and passes every check") {
  Fleet f;
  REQUIRE(f.c->ledger().where(kA).replica == 0);
  REQUIRE(f.c->ledger().where(kB).replica == 1);
  REQUIRE(f.c->ledger().where(kC).replica == 0);
  CHECK(f.a().phase == sim::Phase::kPaused);
  CHECK(f.a().kv == 10);
  CHECK(f.a().gpu_blocks.size() == 3);
  CHECK(f.c_().phase == sim::Phase::kRunning);
  CHECK(f.c_().kv == 14);
  CHECK(f.r0().busy());
  CHECK(f.r1().busy());
  CHECK_NOTHROW(f.c->check_now());
}

TEST_CASE("planted block faults: each is caught with its own message") {
  Fleet f;
  sim::BlockPool& gpu = Access::gpu(f.r0());
  SUBCASE("a block leaked inside a session (held and listed, but more than its KV needs)") {
    REQUIRE(gpu.allocate(1, f.a().gpu_blocks));
    CHECK_THROWS_WITH_AS(f.r0().check_invariants(),
                         r0("session 0 (paused) has 10 KV tokens needing 3 blocks but holds 4 "
                            "(0 dropped, 0 on CPU, 4 on GPU)").c_str(),
                         std::logic_error);
  }
  SUBCASE("a session holding fewer blocks than its KV needs") {
    std::vector<sim::BlockId> last{f.a().gpu_blocks.back()};
    f.a().gpu_blocks.pop_back();
    gpu.release(last);
    CHECK_THROWS_WITH_AS(f.r0().check_invariants(),
                         r0("session 0 (paused) has 10 KV tokens needing 3 blocks but holds 2 "
                            "(0 dropped, 0 on CPU, 2 on GPU)").c_str(),
                         std::logic_error);
  }
  SUBCASE("a block held but listed by no session") {
    std::vector<sim::BlockId> stray;
    REQUIRE(gpu.allocate(1, stray));
    CHECK_THROWS_WITH_AS(
        f.r0().check_invariants(),
        r0(fmt::format("gpu block {} is held 1 time(s) but listed by no session", stray[0]))
            .c_str(),
        std::logic_error);
  }
  SUBCASE("a block owned by two sessions") {
    const sim::BlockId b = f.c_().gpu_blocks.back();
    f.a().gpu_blocks.push_back(b);
    CHECK_THROWS_WITH_AS(
        f.r0().check_invariants(),
        r0(fmt::format("gpu block {} is held 1 time(s) but listed by session(s) 0, 2", b)).c_str(),
        std::logic_error);
  }
  SUBCASE("a refcount one too high") {
    const sim::BlockId b = f.a().gpu_blocks.front();
    REQUIRE(gpu.publish(b, 0xfa17));
    REQUIRE(gpu.acquire_cached(0xfa17) == b);
    CHECK_THROWS_WITH_AS(
        f.r0().check_invariants(),
        r0(fmt::format("gpu block {} is held 2 time(s) but listed by session(s) 0", b)).c_str(),
        std::logic_error);
  }
  SUBCASE("a refcount one too low") {
    std::vector<sim::BlockId> one{f.a().gpu_blocks.front()};
    gpu.release(one);
    CHECK_THROWS_WITH_AS(
        f.r0().check_invariants(),
        r0(fmt::format("gpu block {} is held 0 time(s) but listed by session(s) 0",
                       f.a().gpu_blocks.front()))
            .c_str(),
        std::logic_error);
  }
}

TEST_CASE("planted list faults: membership is checked by phase, not by count") {
  Fleet f;
  auto& running = Access::running(f.r0());
  auto& paused = Access::paused(f.r0());
  REQUIRE(running == std::vector<int32_t>{f.h(kC)});
  REQUIRE(paused == std::vector<int32_t>{f.h(kA)});
  SUBCASE("a session in two lists") {
    running.push_back(f.h(kA));
    CHECK_THROWS_WITH_AS(f.r0().check_invariants(),
                         r0("session 0 is in the running list and the paused list").c_str(),
                         std::logic_error);
  }
  SUBCASE("a session twice in one list") {
    paused.push_back(f.h(kA));
    CHECK_THROWS_WITH_AS(f.r0().check_invariants(),
                         r0("session 0 is twice in the paused list").c_str(), std::logic_error);
  }
  SUBCASE("two sessions swapped between lists: every count still matches") {
    std::swap(running, paused);
    CHECK_THROWS_WITH_AS(f.r0().check_invariants(),
                         r0("session 0 is paused but in the running list").c_str(),
                         std::logic_error);
  }
  SUBCASE("a phase that names another list") {
    f.c_().phase = sim::Phase::kExporting;
    CHECK_THROWS_WITH_AS(f.r0().check_invariants(),
                         r0("session 2 is exporting but in the running list").c_str(),
                         std::logic_error);
  }
  SUBCASE("a session in no list") {
    paused.clear();
    CHECK_THROWS_WITH_AS(f.r0().check_invariants(), r0("session 0 is paused but in no list").c_str(),
                         std::logic_error);
  }
}

namespace {
// Drops paused a's KV by hand (its blocks released, kv 0), as export_paused would: replica 0
// still passes its own check, and a copy of a is a consistent paused session anywhere.
void drop_a_kv(Fleet& f) {
  Access::gpu(f.r0()).release(f.a().gpu_blocks);
  f.a().kv = 0;
}
void add_to_r1(Fleet& f, sim::SessionState s) {
  Access::paused(f.r1()).push_back(Access::take_slot(f.r1(), std::move(s)));
}
void remove_a(Fleet& f) {
  Access::paused(f.r0()).clear();
  Access::free_slot(f.r0(), f.h(kA));
}
}  // namespace

TEST_CASE("planted placement faults: the global check finds each session in exactly one place") {
  Fleet f;
  drop_a_kv(f);
  SUBCASE("a session on two replicas") {
    add_to_r1(f, f.a());
    CHECK_NOTHROW(f.r0().check_invariants());
    CHECK_NOTHROW(f.r1().check_invariants());
    CHECK_THROWS_WITH_AS(f.c->check_global(), "global invariant: session 0 is on two replicas",
                         std::logic_error);
  }
  SUBCASE("a session on no replica while the ledger places it on one") {
    remove_a(f);
    CHECK_NOTHROW(f.r0().check_invariants());
    CHECK_THROWS_WITH_AS(f.c->check_global(),
                         "global invariant: session 0 is lost: the ledger places it on replica 0",
                         std::logic_error);
  }
  SUBCASE("a session moved to another replica behind the ledger's back") {
    const sim::SessionState moved = f.a();
    remove_a(f);
    add_to_r1(f, moved);
    CHECK_NOTHROW(f.r0().check_invariants());
    CHECK_NOTHROW(f.r1().check_invariants());
    CHECK_THROWS_WITH_AS(f.c->check_global(),
                         "global invariant: session 0 is on replica 1 but the ledger places it "
                         "on 0",
                         std::logic_error);
  }
}

TEST_CASE("Checks(true) checks after every event; per_iteration only at iteration ends") {
  // A block leaked into paused a at 100 ms. The next event is d's arrival at 102 ms; replica
  // 0's iteration ends at 105 ms. check_now after the arrival catches the leak at 102 ms; the
  // per-iteration checks see it only at 105 ms.
  const std::string leak = r0("session 0 (paused) has 10 KV tokens needing 3 blocks but holds 4 "
                              "(0 dropped, 0 on CPU, 4 on GPU)");
  SUBCASE("every event") {
    Fleet f(true);
    REQUIRE(Access::gpu(f.r0()).allocate(1, f.a().gpu_blocks));
    CHECK_THROWS_WITH_AS(f.c->run_until(sim::from_ms(103)), leak.c_str(), std::logic_error);
  }
  SUBCASE("every iteration") {
    Fleet f(cluster::Checks::per_iteration());
    REQUIRE(Access::gpu(f.r0()).allocate(1, f.a().gpu_blocks));
    CHECK_NOTHROW(f.c->run_until(sim::from_ms(103)));
    CHECK_THROWS_WITH_AS(f.c->run_until(sim::from_ms(106)), leak.c_str(), std::logic_error);
  }
}
