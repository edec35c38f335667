// live-cuda on a device (label gpu; exits 77 without one): the same integrity guarantees as
// live-cpu with the CUDA runner, bf16 KV, pinned swap space and the copy stream.
#include <doctest/doctest.h>

#include <string>

#include <fmt/format.h>

#include "live/live_executor.h"
#include "tests/sim_fixtures.h"

using namespace isim;

namespace {

// hidden 256, GQA 4:2, head dim 64 (the CUDA attention kernels take 64 or 128), bf16, 16-token
// blocks.
sim::Profile cuda_profile() { return test::runnable_profile(64, "bf16", 16); }

cluster::RunResult run_cuda(const std::string& policy, sim::ExecutorParams params = {}) {
  trace::Trace t;
  for (int i = 0; i < 6; ++i)
    t.push_back({fmt::format("s{}", i), 0.0,
                 {test::seg(40 + 7 * i, 9, "qa", 0.05), test::seg(12, 11)}, {}});
  sim::EngineConfig c;
  c.gpu_blocks = 24;  // tight: preemptions and evictions happen
  c.cpu_blocks = 64;
  c.check_invariants = true;
  auto ex = live::executor_registry().create("live-cuda", "test", cuda_profile(), params);
  auto pol = policy::policy_registry().create(policy, "test", policy::PolicyParams{});
  return cluster::simulate(t, c, *ex, *pol);
}

std::string fact(const cluster::RunResult& r, const std::string& key) {
  return r.executor.fact(key);
}

}  // namespace

TEST_CASE("live-cuda: integrity checks pass under discard, swap and min-waste") {
  std::vector<std::vector<int32_t>> first;
  for (const std::string policy : {"discard", "swap", "min-waste"}) {
    CAPTURE(policy);
    const cluster::RunResult r = run_cuda(policy);
    for (const auto& v : r.executor.violations) MESSAGE(v);
    CHECK(r.executor.violations.empty());
    for (const auto& s : r.sessions) CHECK(s.status == "finished");
    if (policy == "swap") CHECK(std::stoll(fact(r, "integrity.swapped_blocks_checked")) > 0);
    if (policy == "discard")
      CHECK(std::stoll(fact(r, "integrity.recomputed_positions_checked")) > 0);
    // cuBLAS picks kernels by batch size, so bf16 streams may differ in a near-tie: reported,
    // not asserted (live-cpu asserts it exactly).
    if (first.empty())
      first = r.executor.tokens;
    else
      WARN(r.executor.tokens == first);
  }
}

TEST_CASE("live-cuda: injected faults are caught") {
  const cluster::RunResult s = run_cuda("swap", {{{"fault", "swap"}}, "executor"});
  CHECK(!s.executor.violations.empty());
  const cluster::RunResult d = run_cuda("discard", {{{"fault", "recompute"}}, "executor"});
  CHECK(!d.executor.violations.empty());
}
