// The swap fixes, each reproduced on a run small enough to follow by hand.
// Profile (tests/sim_fixtures.h): T(x) = 10 ms + 1 ms per batched token, S = 16, a = 1 ms;
// 4-token blocks of 4000 bytes; 1 byte/us, so one block crosses PCIe in 4 ms.
#include <doctest/doctest.h>

#include "tests/sim_fixtures.h"

using namespace isim;
using isim::test::rec;
using isim::test::seg;

namespace {

sim::EngineConfig engine(int64_t gpu_blocks, int64_t cpu_blocks) {
  sim::EngineConfig c;
  c.gpu_blocks = gpu_blocks;
  c.cpu_blocks = cpu_blocks;
  c.max_num_batched_tokens = 1024;
  c.check_invariants = true;
  return c;
}

cluster::RunResult run_policy(const trace::Trace& t, sim::Policy& pol, const sim::EngineConfig& c,
                              const sim::Profile& p,
                              std::vector<sim::IterationRecord>* iters = nullptr) {
  sim::SimExecutor ex(p);
  return cluster::simulate(t, c, ex, pol, [iters](const sim::IterationRecord& r) {
    if (iters) iters->push_back(r);
  });
}

std::unique_ptr<sim::Policy> min_waste() {
  policy::PolicyParams params;
  params.values["estimator"] = "oracle";
  return policy::policy_registry().create("min-waste", "test", params);
}

// Swaps every paused session's GPU blocks out, pipelined, as fast as the budget allows.
class SwapEverything final : public sim::Policy {
 public:
  std::string name() const override { return "swap-everything"; }
  sim::PauseAction on_pause(const sim::SessionState&, const sim::ReplicaView&) override {
    return sim::PauseAction::kPreserve;
  }
  bool pipelined_swap() const override { return true; }
  void before_iteration(const sim::ReplicaView& e, sim::KvDecisions& d) override {
    for (int32_t h : e.paused())
      if (!e.session(h).gpu_blocks.empty()) d.request_swap_out(h);
  }
};

}  // namespace

TEST_CASE("min-waste swaps within the budget the engine applies: this iteration's forward") {
  // [0,38) prefill long (20) and busy (8); [38,50) decode both: long pauses at 50 ms with 21
  // KV tokens in 6 blocks and a 5 s intercept. From then on busy decodes alone, so the
  // window is T(1) = 11 ms (the previous iteration took 12): one copy of 2 blocks (8 ms) fits,
  // 3 (12 ms) do not. long's 6 blocks leave in 3 iterations of 2, at 50, 61 and 72 ms.
  const trace::Trace t = {trace::Session{"long", 0.0, {seg(20, 2, "image", 5.0), seg(4, 2)}},
                          trace::Session{"busy", 0.0, {seg(8, 100)}}};
  for (const double slowdown : {0.0, 0.5}) {
    CAPTURE(slowdown);
    auto p = test::round_profile();
    p.swap.compute_slowdown = slowdown;
    auto pol = min_waste();
    std::vector<sim::IterationRecord> its;
    run_policy(t, *pol, engine(40, 100), p, &its);
    std::vector<sim::IterationRecord> moving;
    for (const auto& i : its)
      if (i.swap_out_tokens > 0) moving.push_back(i);
    REQUIRE(moving.size() == 3);
    // Beside 8 ms of copies an 11 ms pass slowed by s = 0.5 takes 11 + 8 x 0.5 / 1.5 ms.
    const sim::Nanos d = slowdown == 0 ? 11'000'000 : 13'666'667;
    for (size_t k = 0; k < 3; ++k) {
      CAPTURE(k);
      CHECK(moving[k].start == 50'000'000 + static_cast<sim::Nanos>(k) * d);
      CHECK(moving[k].swap_window == 11'000'000);
      CHECK(moving[k].swap_out_tokens == 8);
      CHECK(moving[k].swap_out_budget_tokens == 8);
      CHECK(moving[k].swap_link == 8'000'000);
      CHECK(moving[k].forward == d);
      CHECK(moving[k].duration == d);
    }
  }
}

TEST_CASE("min-waste with a full CPU pool preserves where W_p < W_dc (design step 3)") {
  // [0,26) prefill a and busy (8 + 8); [26,38) and [38,50) decode both: a pauses at 50 ms
  // with kv 10 (3 blocks), a 30 ms intercept, back at 80 ms.
  // At 50 ms: T_hat = 0.03 s, W_p = 0.03 x 10 = 0.30 token-s. R = 1 (busy), c = 15, n = 1,
  // M = 10 (busy's kv): W_dc = T(16) x 15 + 1 x a x 15 x M = 0.026 x 15 + 0.001 x 15 x 10
  // = 0.54. Its swap-in (3 blocks, 12 ms) is shorter than T_hat, so min-waste wants to swap
  // it, but the CPU pool has no room: step 3 preserves it (0.30 < 0.54). The old rule
  // discarded it, and a then recomputed its 10 tokens.
  // Preserved: busy decodes [50,61) [61,72) [72,83); at 83 a prefills 5 tokens -> [83,98),
  // token 1; [98,110) decodes a and busy -> a finishes at 110 ms.
  const trace::Trace t = {trace::Session{"a", 0.0, {seg(8, 3, "qa", 0.03), seg(4, 2)}},
                          trace::Session{"busy", 0.0, {seg(8, 100)}}};
  auto pol = min_waste();
  auto r = run_policy(t, *pol, engine(40, 0), test::round_profile());
  const auto& a = rec(r, "a");
  CHECK(a.status == "finished");
  CHECK(a.recomputed_tokens == 0);
  CHECK(a.swapped_out_bytes == 0);
  CHECK(r.summary.counters.swap_fallback_discards == 0);
  CHECK(r.summary.counters.discards == 0);
  CHECK(a.resume_ttft_s == doctest::Approx(0.018).epsilon(1e-12));
  CHECK(a.finish_s == doctest::Approx(0.110).epsilon(1e-12));
}

TEST_CASE("two sessions caught mid-swap-in with the GPU full still make progress") {
  // 8 ms a block (half the round bandwidth); 6 GPU blocks; A and B each hold 19 KV tokens
  // (5 blocks) when they pause. A transfer-only iteration gets up to T(16) = 26 ms: 3 blocks.
  //   [0,27) prefill A (17); [27,38) [38,49) decode: A pauses at 49 ms.
  //   [49,73) A out 3 blocks, [73,89) the last 2 (B waits: 5 blocks do not fit in 1).
  //   [89,116) prefill B; [116,127) [127,138) decode: B pauses at 138 ms.
  //   [138,162) [162,178) B out 3 + 2 (C, arrived at 100, waits for 5 blocks).
  //   [178,205) prefill C, which finishes. Both A and B are on CPU; the engine idles.
  //   B resumes at 210: [210,234) B in 3 blocks. A resumes at 220, ahead of B (it arrived
  //   first): [234,258) A in 3 blocks. The GPU is full: A and B each hold 3 GPU + 2 CPU
  //   blocks and neither can finish its swap-in. The old engine threw "no progress possible".
  // Fix: the latest-arriving half-swapped session (B) gives its KV up (an idle eviction) and
  // waits to recompute. [258,274) A in its last 2 blocks; [274,288) A prefills 4 (context 23,
  // 6 blocks) and finishes; [288,321) B prefills all 23 tokens (19 recomputed), finishes.
  const trace::Trace t = {trace::Session{"A", 0.0, {seg(17, 3, "x", 0.171), seg(3, 1)}},
                          trace::Session{"B", 0.001, {seg(17, 3, "x", 0.072), seg(3, 1)}},
                          trace::Session{"C", 0.1, {seg(17, 1)}}};
  auto p = test::round_profile();
  p.swap.h2d_gbps = {{1.0, 1e12}, {0.0005, 0.0005}};
  p.swap.d2h_gbps = p.swap.h2d_gbps;
  SwapEverything pol;
  cluster::RunResult r;
  REQUIRE_NOTHROW(r = run_policy(t, pol, engine(6, 100), p));
  CHECK(rec(r, "A").finish_s == doctest::Approx(0.288).epsilon(1e-12));
  CHECK(rec(r, "A").recomputed_tokens == 0);
  CHECK(rec(r, "B").finish_s == doctest::Approx(0.321).epsilon(1e-12));
  CHECK(rec(r, "B").recomputed_tokens == 19);
  CHECK(r.summary.counters.idle_evictions == 1);
}
