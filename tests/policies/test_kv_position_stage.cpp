// agent-aware's use of block position (shareable prefixes outlive a session's own blocks in
// the prefix cache) and of the session's stage (intercept history by kind and role), hand-
// computed on one replica (tests/policies/kv_replica.h: T(x) = 10 ms + 1 ms per token, 4-token
// blocks, vllm-v1, preserve, invariants after every iteration).
#include <doctest/doctest.h>

#include <string>

#include "tests/policies/kv_replica.h"
#include "tests/sim_fixtures.h"

using namespace isim;
using isim::test::rec;
using isim::test::Replica;
using isim::test::seg;

namespace {

trace::Session hashed(std::string id, double at, int64_t prompt, int64_t out) {
  trace::Session s{std::move(id), at, {seg(prompt, out)}};
  s.prefix = {8, {5}};  // one 8-token trace block: two 4-token engine blocks
  return s;
}

trace::Session forked(std::string id, double at, trace::Segment first, std::string parent,
                      int64_t shared) {
  first.event = {trace::ContextEventKind::kFork, shared, 0, std::move(parent)};
  return trace::Session{std::move(id), at, {std::move(first), seg(1, 1)}};
}

const sim::SessionState& state(cluster::Cluster& c, int32_t i) {
  return c.replica(0).view().session(c.ledger().where(i).handle);
}

}  // namespace

TEST_CASE("block position: a shared prompt's cached blocks outlive newer private ones under "
          "agent-aware; plain LRU evicts the oldest") {
  // 5 GPU blocks. p (0 s): the 8-token hashed prompt (its 2 blocks are the shareable prefix),
  // 1 output: prefill 0 -> 18 ms, finishes; its blocks are cached, p1 released first. o
  // (0.1 s): 8 private tokens, 1 output, 0.100 -> 0.118 s; its 2 blocks are cached after p's.
  // One block is free. x (0.2 s): 12 private tokens need 3 blocks: the free one and 2 evicted
  // cached ones. LRU (local, global-lru) evicts p1 and p0; agent-aware keeps p's valued blocks
  // and evicts o1 and o0. x: 0.200 -> 0.222 s. q (1 s): p's prompt plus one token: under
  // agent-aware it finds both of p's blocks (8 tokens) and prefills 1 token (11 ms); under LRU
  // it finds none, prefills 9 (19 ms), and the 8 tokens p had published count as lost reuse.
  const trace::Trace t = {hashed("p", 0.0, 8, 1), trace::Session{"o", 0.1, {seg(8, 1)}},
                          trace::Session{"x", 0.2, {seg(12, 1)}}, hashed("q", 1.0, 9, 1)};
  for (const char* m : {"local", "global-lru", "agent-aware"}) {
    CAPTURE(m);
    const bool aware = std::string(m) == "agent-aware";
    Replica r(m, 5);
    auto c = r.start(t);
    c->run_until(sim::from_seconds(0.5));
    CHECK(c->replica(0).view().gpu().evictions() == 2);
    c->run_until(sim::kForever);
    const auto res = c->result();
    CHECK(rec(res, "x").finish_s == doctest::Approx(0.222));
    CHECK(rec(res, "q").prefix_hit_tokens == (aware ? 8 : 0));
    CHECK(rec(res, "q").ttft_s == doctest::Approx(aware ? 0.011 : 0.019));
    CHECK(res.summary.counters.prefix_evicted_tokens == (aware ? 0 : 8));
  }
}

TEST_CASE("block position: a block two sessions hold at once is valued under agent-aware") {
  // P: 10 private tokens, prefill 0 -> 20 ms (2 full blocks published under its own chain, not
  // the trace's: not a shareable prompt), decode to 31 ms, a 5 s tool holding 3 blocks. C (1 s)
  // forks from P sharing 8 tokens and takes holds on P's 2 full blocks: held by two, valued
  // under agent-aware only. P's third block and C's own are held by one.
  const trace::Trace t = {trace::Session{"P", 0.0, {seg(10, 2, "tool", 5.0), seg(1, 1)}},
                          forked("C", 1.0, seg(12, 1), "P", 8)};
  for (const char* m : {"global-lru", "agent-aware"}) {
    CAPTURE(m);
    const bool aware = std::string(m) == "agent-aware";
    Replica r(m);
    auto c = r.start(t);
    c->run_until(sim::from_seconds(1.005));
    const auto& gpu = c->replica(0).view().gpu();
    const auto& ps = state(*c, 0);
    const auto& cs = state(*c, 1);
    REQUIRE(ps.gpu_blocks.size() == 3);
    REQUIRE(cs.gpu_blocks.size() == 3);
    REQUIRE(gpu.refcount(ps.gpu_blocks[0]) == 2);
    CHECK(gpu.valued(ps.gpu_blocks[0]) == aware);
    CHECK(gpu.valued(ps.gpu_blocks[1]) == aware);
    CHECK_FALSE(gpu.valued(ps.gpu_blocks[2]));
    CHECK_FALSE(gpu.valued(cs.gpu_blocks[2]));
  }
}

TEST_CASE("stage: a subagent's tool calls and its root's have their own history under "
          "agent-aware") {
  // R0 and its subagent S0 (0 s, 4 tokens each, 1 output) prefill together, 0 -> 18 ms, and
  // pause in tools of 10 s and 1 s: by 10.018 s both have ended, so the tool history is
  // {1 s, 10 s}, the root stage's {10 s} and the subagent stage's {1 s}. R1 (20 s) pauses at
  // 20.014 s and its subagent S1 (20.1 s) at 20.114 s, both in long tools. At 20.3 s:
  // - with history_min_samples 1, each stage's own history: R1 expects 10 - 0.286 = 9.714 s
  //   more, S1 1 - 0.186 = 0.814 s, so R1's KV goes first;
  // - with 2, the stages have too few samples and the tool history over both roles answers:
  //   R1 (5.5 - 0.286 = 5.214 s) and S1 (5.5 - 0.186 = 5.314 s), so S1's goes first.
  const trace::Trace t = {
      trace::Session{"R0", 0.0, {seg(4, 1, "tool", 10.0), seg(1, 1)}},
      forked("S0", 0.0, seg(4, 1, "tool", 1.0), "R0", 0),
      trace::Session{"R1", 20.0, {seg(4, 1, "tool", 100.0), seg(1, 1)}},
      forked("S1", 20.1, seg(4, 1, "tool", 100.0), "R1", 0)};
  for (const int min_samples : {1, 2}) {
    CAPTURE(min_samples);
    Replica r("agent-aware", 64, {{"history_min_samples", std::to_string(min_samples)}});
    auto c = r.start(t);
    const sim::Nanos at = sim::from_seconds(20.3);
    c->run_until(at);
    const auto& r1 = state(*c, 2);
    const auto& s1 = state(*c, 3);
    REQUIRE(r1.phase == sim::Phase::kPaused);
    REQUIRE(s1.phase == sim::Phase::kPaused);
    REQUIRE(s1.subagent());
    REQUIRE_FALSE(r1.subagent());
    CHECK(r1.pause_start == sim::from_seconds(20.014));
    CHECK(s1.pause_start == sim::from_seconds(20.114));
    const bool root_first = min_samples == 1;
    CHECK(r.kv->evict_before(r1, s1, at) == root_first);
    CHECK(r.kv->evict_before(s1, r1, at) == !root_first);
  }
}
