// Live execution on the CPU: real runs of a small model under every policy, with exact
// integrity counts, identical token streams, faults that the checks must catch, virtual time,
// and every parameter error.
#include <doctest/doctest.h>

#include <string>

#include <fmt/format.h>

#include "core/input_error.h"
#include "kernels/runner/cuda_module.h"
#include "live/integrity.h"
#include "live/live_executor.h"
#include "tests/sim_fixtures.h"

using namespace isim;

namespace {

// A model the CPU runner executes in microseconds: 2 layers, hidden 64, GQA 4:2, head dim 16,
// vocab 97, with the round profile's 4-token blocks and linear costs (the sim side is
// irrelevant here).
sim::Profile live_profile() {
  return test::runnable_profile(16, "fp32", 4);
}

sim::EngineConfig pools(int64_t gpu, int64_t cpu) {
  sim::EngineConfig c;
  c.gpu_blocks = gpu;
  c.cpu_blocks = cpu;
  c.check_invariants = true;
  return c;
}

cluster::RunResult run_live(const trace::Trace& t, const std::string& policy, sim::EngineConfig cfg,
                            sim::ExecutorParams params = {}) {
  const sim::Profile p = live_profile();
  auto ex = live::executor_registry().create("live-cpu", "test", p, params);
  auto pol = policy::policy_registry().create(policy, "test", policy::PolicyParams{});
  return cluster::simulate(t, cfg, *ex, *pol);
}

std::string fact(const cluster::RunResult& r, const std::string& key) {
  return r.executor.fact(key);
}

// Session a: 10 prompt tokens, 3 outputs, a 0.5 s tool call that returns 5 tokens, 4 outputs.
// Session b: 6 tokens, 2 outputs, no intercept.
trace::Trace two_sessions(double intercept_s = 0.5) {
  trace::Trace t;
  t.push_back({"a", 0.0, {test::seg(10, 3, "math", intercept_s), test::seg(5, 4)}, {}});
  t.push_back({"b", 0.0, {test::seg(6, 2)}, {}});
  return t;
}

}  // namespace

TEST_CASE("live-cpu runs every policy with passing integrity checks and identical tokens") {
  const trace::Trace t = two_sessions();
  std::vector<std::vector<int32_t>> first;
  for (const std::string policy : {"discard", "preserve", "swap", "min-waste"}) {
    CAPTURE(policy);
    const cluster::RunResult r = run_live(t, policy, pools(64, 64));
    REQUIRE(r.executor.live);
    CHECK(r.executor.violations.empty());
    CHECK(fact(r, "integrity.violations") == "0");
    for (const auto& s : r.sessions) CHECK(s.status == "finished");
    // Every input and every output is in the stream: a = 10 + 3 + 5 + 4, b = 6 + 2.
    REQUIRE(r.executor.tokens.size() == 2);
    CHECK(r.executor.tokens[0].size() == 22);
    CHECK(r.executor.tokens[1].size() == 8);
    for (const auto& stream : r.executor.tokens)
      for (int32_t tok : stream) CHECK((tok >= 0 && tok < 97));
    if (first.empty())
      first = r.executor.tokens;
    else
      CHECK(r.executor.tokens == first);
  }
}

TEST_CASE("the integrity checks count exactly what each policy moved or recomputed") {
  const trace::Trace t = two_sessions();
  // discard: at a's pause its KV holds 10 + 3 - 1 = 12 tokens; all 12 are recomputed and
  // checked (exactly: the CPU runner is batch invariant).
  const cluster::RunResult d = run_live(t, "discard", pools(64, 64));
  CHECK(d.summary.counters.recomputed_tokens == 12);
  CHECK(fact(d, "integrity.recomputed_positions_checked") == "12");
  CHECK(fact(d, "integrity.recompute_max_abs_error") == "0");
  CHECK(fact(d, "integrity.swapped_blocks_checked") == "0");
  // swap: 12 tokens are 3 blocks of 4, checked on the way out and on the way back.
  const cluster::RunResult s = run_live(t, "swap", pools(64, 64));
  // 3 blocks of 4 tokens x 512 B (2 layers x K,V x 2 heads x 16 dims x fp32).
  CHECK(s.summary.counters.swapped_out_bytes == 3 * 4 * 512);
  CHECK(fact(s, "integrity.swapped_blocks_checked") == "6");
  CHECK(fact(s, "integrity.recomputed_positions_checked") == "0");
  // preserve moves and recomputes nothing.
  const cluster::RunResult p = run_live(t, "preserve", pools(64, 64));
  CHECK(fact(p, "integrity.swapped_blocks_checked") == "0");
  CHECK(fact(p, "integrity.recomputed_positions_checked") == "0");
}

TEST_CASE("preemption by recompute is checked too, and tokens stay identical") {
  // Six sessions that outgrow a 12-block pool: the engine preempts and rebuilds.
  trace::Trace t;
  for (int i = 0; i < 6; ++i) t.push_back({fmt::format("s{}", i), 0.0, {test::seg(7, 9)}, {}});
  const cluster::RunResult tight = run_live(t, "preserve", pools(12, 0));
  const cluster::RunResult roomy = run_live(t, "preserve", pools(200, 0));
  REQUIRE(tight.summary.counters.preemptions > 0);
  CHECK(roomy.summary.counters.preemptions == 0);
  CHECK(tight.executor.violations.empty());
  CHECK(std::stoll(fact(tight, "integrity.recomputed_positions_checked")) ==
        tight.summary.counters.recomputed_tokens);
  CHECK(tight.executor.tokens == roomy.executor.tokens);
}

TEST_CASE("prefix caching shares real KV: hits, exact checks and the same tokens as without") {
  // Three sessions whose 12-token prompts share their first two 4-token blocks (equal trace
  // hashes give equal synthetic tokens), arriving one after another.
  trace::Trace t;
  for (int i = 0; i < 3; ++i) {
    trace::Session s{fmt::format("p{}", i), 0.05 * i, {test::seg(12, 3)}, {}};
    s.prefix = {4, {101, 202, static_cast<uint64_t>(300 + i)}};
    t.push_back(s);
  }
  sim::EngineConfig on = pools(64, 0), off = pools(64, 0);
  off.prefix_caching = false;
  const cluster::RunResult shared = run_live(t, "preserve", on);
  const cluster::RunResult alone = run_live(t, "preserve", off);
  CHECK(shared.summary.counters.prefix_hit_tokens == 2 * 8);  // p1 and p2 reuse 2 blocks each
  CHECK(alone.summary.counters.prefix_hit_tokens == 0);
  CHECK(shared.executor.violations.empty());
  CHECK(shared.executor.tokens == alone.executor.tokens);
}

TEST_CASE("dropped leading chunks (pensieve, lru) are restored with exact KV") {
  // Two conversations of three turns whose KV outgrows a 10-block GPU and a 2-block CPU tier,
  // so the tier policies drop leading chunks and recompute them (with the turn's new tokens in
  // the same iteration).
  trace::Trace t;
  for (int i = 0; i < 2; ++i)
    t.push_back({fmt::format("c{}", i),
                 0.01 * i,
                 {test::seg(14, 3, "chat", 0.3), test::seg(6, 3, "chat", 0.3), test::seg(5, 2)},
                 {}});
  const cluster::RunResult reference = run_live(t, "preserve", pools(64, 64));
  for (const std::string policy : {"pensieve", "lru"}) {
    CAPTURE(policy);
    const cluster::RunResult r = run_live(t, policy, pools(10, 2));
    CHECK(r.summary.counters.dropped_blocks > 0);
    CHECK(std::stoll(fact(r, "integrity.recomputed_positions_checked")) > 0);
    CHECK(fact(r, "integrity.recompute_max_abs_error") == "0");
    CHECK(r.executor.violations.empty());
    for (const auto& s : r.sessions) CHECK(s.status == "finished");
    CHECK(r.executor.tokens == reference.executor.tokens);
  }
}

TEST_CASE("a corrupted swap copy is caught when the block comes back") {
  const cluster::RunResult r =
      run_live(two_sessions(), "swap", pools(64, 64), {{{"fault", "swap"}}, "executor"});
  REQUIRE(fact(r, "fault").rfind("swap: CPU copy of CPU block", 0) == 0);
  REQUIRE(r.executor.violations.size() == 1);
  CHECK(r.executor.violations[0].find("swap-in of token block 0") != std::string::npos);
  CHECK(r.executor.violations[0].find("did not come back as it was swapped out") !=
        std::string::npos);
  CHECK(r.executor.violations[0].find("session a segment 0") != std::string::npos);
  CHECK(fact(r, "integrity.violations") == "1");
}

TEST_CASE("a wrong recompute is caught, naming the session and position") {
  const cluster::RunResult r =
      run_live(two_sessions(), "discard", pools(64, 64), {{{"fault", "recompute"}}, "executor"});
  CHECK(fact(r, "fault") ==
        "recompute: wrong token fed at session a segment 0 position 0 (input token 0)");
  REQUIRE(!r.executor.violations.empty());
  CHECK(r.executor.violations[0].find("session a segment 0 position 0") != std::string::npos);
  CHECK(r.executor.violations[0].find("recomputed KV differs from the original") !=
        std::string::npos);
  // A fault that the policy never gives a chance to fire says so.
  const cluster::RunResult quiet =
      run_live(two_sessions(), "preserve", pools(64, 64), {{{"fault", "recompute"}}, "executor"});
  CHECK(fact(quiet, "fault") == "recompute (never triggered)");
  CHECK(quiet.executor.violations.empty());
}

TEST_CASE("virtual time: intercepts cost nothing to run, compute is measured") {
  // A 30 s intercept: the virtual clock passes it, the run's real compute is what it measured.
  const cluster::RunResult r = run_live(two_sessions(30.0), "preserve", pools(64, 64));
  const auto& a = test::rec(r, "a");
  CHECK(a.intercept_s == doctest::Approx(30.0));
  CHECK(a.e2e_s > 30.0);
  CHECK(r.summary.makespan_s > 30.0);
  CHECK(std::stod(fact(r, "busy_s")) > 0.0);
  CHECK(std::stod(fact(r, "busy_s")) < r.summary.makespan_s);
  CHECK(std::stoll(fact(r, "iterations_executed")) == r.summary.counters.iterations);
}

TEST_CASE("synthetic inputs: deterministic, in range, shared exactly where prefixes are") {
  trace::Session s1{"x", 0.0, {test::seg(40, 1)}, {}};
  trace::Session s2{"y", 0.0, {test::seg(40, 1)}, {}};
  s1.prefix = {16, {11, 22}};
  s2.prefix = {16, {11, 33}};
  for (int64_t p = 0; p < 16; ++p)
    CHECK(live::input_token(s1, p, 97) == live::input_token(s2, p, 97));
  int same = 0;
  for (int64_t p = 16; p < 40; ++p)
    same += live::input_token(s1, p, 97) == live::input_token(s2, p, 97);
  CHECK(same < 5);
  CHECK(live::input_token(s1, 20, 97) == live::input_token(s1, 20, 97));
  const auto at = live::place_of(two_sessions()[0], 14);
  CHECK(at.segment == 1);
  CHECK(!at.output);
  CHECK(at.index == 1);
  CHECK(live::place_of(two_sessions()[0], 12).output);
}

TEST_CASE("block checksums change with any byte") {
  std::vector<std::byte> b(100, std::byte{7});
  const uint64_t h = live::block_checksum(b);
  for (size_t i : {size_t{0}, size_t{57}, size_t{99}}) {
    auto c = b;
    c[i] ^= std::byte{1};
    CHECK(live::block_checksum(c) != h);
  }
  auto swapped = b;
  swapped[0] = std::byte{1};
  swapped[8] = std::byte{2};
  auto other = b;
  other[0] = std::byte{2};
  other[8] = std::byte{1};
  CHECK(live::block_checksum(swapped) != live::block_checksum(other));
}

TEST_CASE("live executor parameters and pools are checked") {
  const sim::Profile p = live_profile();
  auto make = [&](const std::string& name, sim::ExecutorParams params) {
    params.where = "e.yaml:3: executor";
    return live::executor_registry().create(name, "executor", p, params);
  };
  CHECK_THROWS_WITH_AS(make("live-cpu", {{{"treads", "2"}}, ""}),
                       "e.yaml:3: executor.treads: unknown parameter; executor 'live-cpu' takes "
                       "threads, seed, fault, max_pool_gib",
                       InputError);
  CHECK_THROWS_WITH_AS(make("live-cpu", {{{"fault", "disk"}}, ""}),
                       "e.yaml:3: executor.fault: expected none, swap or recompute, got 'disk'",
                       InputError);
  CHECK_THROWS_WITH_AS(make("live-cpu", {{{"threads", "-1"}}, ""}),
                       "e.yaml:3: executor.threads: must be >= 0", InputError);
  CHECK_THROWS_WITH_AS(make("live-cpu", {{{"threads", "two"}}, ""}),
                       "e.yaml:3: executor.threads: expected an integer, got 'two'", InputError);
  CHECK_THROWS_WITH_AS(make("live-cpu", {{{"max_pool_gib", "0"}}, ""}),
                       "e.yaml:3: executor.max_pool_gib: must be > 0", InputError);
  CHECK_THROWS_WITH_AS(make("sim", {{{"threads", "1"}}, ""}),
                       "e.yaml:3: executor.threads: unknown parameter; executor 'sim' takes no "
                       "parameters",
                       InputError);
  CHECK_THROWS_AS(live::check_executor("live-cpu", {{{"seed", "x"}}, "executor"}), InputError);
  CHECK_NOTHROW(live::check_executor("live-cpu", {{{"seed", "7"}, {"threads", "0"}}, "executor"}));
  // Pools larger than the host budget are refused before anything is allocated.
  trace::Trace t = two_sessions();
  CHECK_THROWS_WITH_AS(
      run_live(t, "preserve", pools(1'000'000, 0), {{{"max_pool_gib", "0.001"}}, "executor"}),
      doctest::Contains("more than executor.max_pool_gib = 0.001; set engine.gpu_blocks"),
      InputError);
  // Without the CUDA module (a build without nvcc) or without a device, live-cuda says which.
  std::string why;
  const auto* cuda = kernels::runner::cuda_module(&why);
  if (!cuda)
    CHECK_THROWS_WITH_AS(make("live-cuda", {}),
                         doctest::Contains("live-cuda: this build has no CUDA backend"),
                         InputError);
  else if (!cuda->device_info().available)
    CHECK_THROWS_WITH_AS(make("live-cuda", {}), doctest::Contains("live-cuda needs a CUDA device"),
                         InputError);
}
