// Each replica part's own invariant check on a part built alone: it passes on a consistent
// state and names the fault planted there. (Faults planted in a running fleet's engines:
// tests/cluster/test_invariant_faults.cpp.) Profile: tests/sim_fixtures.h, 4-token blocks.
#include <doctest/doctest.h>

#include <vector>

#include "sim/waste_meter.h"
#include "tests/sim_fixtures.h"

using namespace isim;
using isim::test::seg;

namespace {

const trace::Session kA{"a", 0.0, {seg(8, 2)}};
const trace::Session kB{"b", 0.0, {seg(8, 2)}};

sim::SessionState arrived(const trace::Session& src, int32_t idx) {
  sim::SessionState s = sim::SessionState::arrive(src, idx, 0);
  s.context = 8;
  return s;
}

// A replica's parts without an engine: 8 GPU and 4 CPU blocks.
sim::EngineConfig small_pools() {
  sim::EngineConfig cfg;
  cfg.gpu_blocks = 8;
  cfg.cpu_blocks = 4;
  return cfg;
}

struct Parts {
  sim::Profile profile = test::round_profile();
  sim::SimExecutor ex{profile};
  sim::EngineConfig cfg = small_pools();
  sim::Counters counters;
  sim::SessionTable table;
  sim::ReplicaQueues queues{table, profile.block_tokens, sim::SchedulerTraits{}};
  sim::KvResidency kv{table, queues, counters, ex, cfg, 0.0};
  sim::PrefixCache prefix{kv, counters, false, false};
  sim::WasteMeter meter{table, queues, kv, prefix};
};

}  // namespace

TEST_CASE("SessionTable: freed slots are reused first; its check names a kv past the context") {
  sim::SessionTable t;
  const int32_t a = t.take(arrived(kA, 0), 3);
  const int32_t b = t.take(arrived(kB, 1), 3);
  CHECK(a == 0);
  CHECK(b == 1);
  CHECK(t[b].h == b);
  CHECK(t[b].m.replica_first == 3);
  t.free(a);
  CHECK(t[a].idx == -1);
  CHECK(t.take(arrived(kA, 2), 3) == a);
  CHECK_NOTHROW(t.check(3));
  t[b].kv = 100;
  CHECK_THROWS_WITH(t.check(3), doctest::Contains("session 1: kv 100 outside [0, context 8]"));
}

TEST_CASE("ReplicaQueues: moves set the phase; its checks name a phase off its list and drift") {
  Parts p;
  const int32_t h = p.table.take(arrived(kA, 0), 0);
  p.queues.wait(h, 0);
  CHECK(p.table[h].phase == sim::Phase::kWaiting);
  CHECK(p.queues.load().queued_prefill_tokens == 8);
  CHECK_NOTHROW(p.queues.check_lists(0));
  CHECK_NOTHROW(p.queues.check_queued(0));
  p.queues.admit(p.queues.waiting().begin());
  CHECK(p.queues.running() == std::vector<int32_t>{h});
  CHECK(p.table[h].phase == sim::Phase::kRunning);
  CHECK_NOTHROW(p.queues.check_lists(0));
  p.table[h].phase = sim::Phase::kPaused;
  CHECK_THROWS_WITH(p.queues.check_lists(0),
                    doctest::Contains("session 0 is paused but in the running list"));
  p.table[h].phase = sim::Phase::kRunning;
  p.queues.remove(sim::Phase::kRunning, h);
  p.queues.wait(h, 0);
  p.table[h].queued_tokens = 5;
  CHECK_THROWS_WITH(p.queues.check_queued(0), doctest::Contains("queued prefill tokens drifted"));
}

TEST_CASE("KvResidency: blocks follow kv through growth and drops; its check names a leak") {
  Parts p;
  const int32_t h = p.table.take(arrived(kA, 0), 0);
  sim::SessionState& s = p.table[h];
  p.queues.wait(h, 0);
  REQUIRE(p.kv.grow_gpu(s, 8));
  s.kv = 8;
  CHECK(s.gpu_blocks.size() == 2);
  CHECK_NOTHROW(p.kv.check_pools());
  CHECK_NOTHROW(p.kv.check_blocks(0, {0}));
  p.kv.drop_kv(s, sim::LostCause::kPreemption);
  CHECK(s.gpu_blocks.empty());
  CHECK(s.recompute_left == 8);
  CHECK(p.kv.gpu().used() == 0);
  CHECK_NOTHROW(p.kv.check_blocks(0, {0}));
  REQUIRE(p.kv.grow_gpu(s, 4));  // a block with no KV in it
  CHECK_THROWS_WITH(p.kv.check_blocks(0, {0}),
                    doctest::Contains("has 0 KV tokens needing 0 blocks but holds 1"));
  // The batch in flight computes 4 tokens for it: the block is then its due.
  CHECK_NOTHROW(p.kv.check_blocks(0, {4}));
}

TEST_CASE("WasteMeter: its check names a clock that went backwards") {
  Parts p;
  CHECK_NOTHROW(p.meter.check_clock(2, 10));
  CHECK_NOTHROW(p.meter.check_clock(2, 10));
  CHECK_THROWS_WITH(p.meter.check_clock(2, 5),
                    doctest::Contains("invariant (replica 2): clock went backwards"));
}

TEST_CASE("gpu_blocks_within: token order with a lead restored in pieces") {
  // Blocks in token order: 2 restored (gpu_blocks 0-1), 3 dropped, 1 on CPU, then gpu_blocks 2-5.
  sim::SessionState s;
  s.restored_blocks = 2;
  s.dropped_blocks = 3;
  s.cpu_blocks = {7};
  s.gpu_blocks = {10, 11, 12, 13, 14, 15};
  CHECK(sim::gpu_blocks_within(s, 1) == 1);  // inside the restored lead
  CHECK(sim::gpu_blocks_within(s, 2) == 2);
  CHECK(sim::gpu_blocks_within(s, 5) == 2);  // ends among the dropped blocks
  CHECK(sim::gpu_blocks_within(s, 6) == 2);  // ... and on the CPU block
  CHECK(sim::gpu_blocks_within(s, 8) == 4);  // two blocks past the CPU one
  CHECK(sim::gpu_blocks_within(s, 20) == 6);
  s.restored_blocks = 0;  // no restore in progress: [dropped][cpu][gpu]
  CHECK(sim::gpu_blocks_within(s, 5) == 1);
  CHECK(sim::gpu_blocks_within(s, 4) == 0);
}
