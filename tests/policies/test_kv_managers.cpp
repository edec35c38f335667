// The KV managers and the agent context signals on one replica, hand-computed on the round
// profile (tests/sim_fixtures.h: T(x) = 10 ms + 1 ms per batched token, 4-token blocks), vllm-v1
// (every full block is hashed and stays cached when released), `preserve`, every invariant
// checked after each iteration.
#include <doctest/doctest.h>

#include <memory>

#include "cluster/cluster.h"
#include "cluster/simulation.h"
#include "core/input_error.h"
#include "policies/builtin.h"
#include "policies/kv_managers.h"
#include "policies/routers.h"
#include "tests/policies/kv_replica.h"
#include "tests/sim_fixtures.h"
#include "traces/agents.h"

using namespace isim;
using isim::test::rec;
using isim::test::seg;

namespace {

using isim::test::Replica;

trace::Segment with_event(trace::Segment s, trace::ContextEvent ev) {
  s.event = std::move(ev);
  return s;
}

trace::Session hashed(std::string id, double at, int64_t prompt, int64_t out) {
  trace::Session s{std::move(id), at, {seg(prompt, out)}};
  s.prefix = {8, {5}};  // one 8-token trace block: two 4-token engine blocks
  return s;
}

}  // namespace

TEST_CASE("the kv managers are registered and listed") {
  const auto& reg = policy::kv_manager_registry();
  CHECK(reg.contains("local"));
  CHECK(reg.contains("global-lru"));
  CHECK(reg.contains("agent-aware"));
  CHECK_THROWS_WITH_AS(reg.create("lfu", "engine.kv_manager", Params({}, "kv")),
                       "engine.kv_manager: unknown kv manager 'lfu'; valid: agent-aware, "
                       "dynamo-agentic, global-lru, local, oracle-belady",
                       InputError);
  CHECK_THROWS_AS(reg.create("agent-aware", "x", Params({{"default_priority", "101"}}, "kv")),
                  InputError);
  CHECK_THROWS_AS(reg.create("local", "x", Params({{"bogus", "1"}}, "kv")), InputError);
}

TEST_CASE(
    "a reset frees the old context's blocks at once under agent-aware; global-lru keeps "
    "them cached until pressure takes an older useful block instead") {
  // 5 GPU blocks. p (0 s): an 8-token prompt with trace hashes, 1 output: prefills 0 -> 18 ms
  // and finishes; its 2 blocks stay cached (p1 released first, so oldest). a (0.1 s): 10
  // tokens, 3 blocks from the 3 free ones: prefill 100 -> 120 ms, decode -> 131 ms, pause (a
  // 1 s tool) holding 11 tokens in 3 blocks, the first 2 published. At 1.131 s the tool
  // returns 4 tokens and a reset: the context becomes 6 tokens, of which the first 4 survive.
  // a keeps its first block and releases the other two (7 KV tokens): the published one is
  // cached under global-lru, unhashed under agent-aware. Its prefill of 6 tokens needs two more
  // blocks (16 ms, first token at 1.147 s; decode to 1.158 s). Under global-lru only one block
  // is free, so the allocation evicts the oldest cached one, p's second block; under
  // agent-aware both are free. q (2 s) has p's prompt plus one token: it finds p's first block
  // only (4 tokens) under global-lru, both (8 tokens) under agent-aware.
  const trace::ContextEvent reset{trace::ContextEventKind::kReset, 6, 4, ""};
  const trace::Trace t = {
      hashed("p", 0.0, 8, 1),
      trace::Session{"a", 0.1, {seg(10, 2, "tool", 1.0), with_event(seg(4, 2), reset)}},
      hashed("q", 2.0, 9, 1)};
  for (const char* m : {"global-lru", "agent-aware"}) {
    CAPTURE(m);
    Replica r(m, 5);
    auto c = r.start(t);
    c->run_until(sim::from_seconds(1.140));  // a's second prefill is running
    const bool aware = std::string(m) == "agent-aware";
    // global-lru: cached {p0, a's old block}, p1 evicted; agent-aware: cached {p1, p0}.
    CHECK(c->replica(0).view().gpu().cached() == 2);
    CHECK(c->replica(0).view().gpu().evictions() == (aware ? 0 : 1));
    c->run_until(sim::kForever);
    const auto res = c->result();
    CHECK(rec(res, "a").resume_ttft_s == doctest::Approx(0.016));
    CHECK(rec(res, "a").finish_s == doctest::Approx(1.158));
    CHECK(rec(res, "q").prefix_hit_tokens == (aware ? 8 : 4));
    CHECK(res.summary.counters.resets == 1);
    CHECK(res.summary.counters.reset_released_tokens == 7);
    CHECK(res.summary.counters.worthless_freed_blocks == (aware ? 1 : 0));
    CHECK(rec(res, "a").recomputed_tokens == 0);  // the summary is new, not recomputed
  }
}

TEST_CASE("a forked subagent shares its parent's prefix blocks, refcounts exact") {
  // P: 10 tokens, prefill 0 -> 20 ms (2 full blocks published under its own chain), decode to
  // 31 ms, then a 5 s tool holding 11 tokens in 3 blocks. C (1 s) forks from P sharing 8
  // tokens: its prompt is 12 tokens, the first 8 P's. It takes holds on P's two full blocks
  // (8 tokens hit) and prefills 4 tokens: 1.000 -> 1.014 s, its one output. Its last segment
  // ends the subagent: its own block (tokens 8-11) is worthless; P's blocks are not.
  trace::ContextEvent fork{trace::ContextEventKind::kFork, 8, 0, "P"};
  trace::Segment c0 = with_event(seg(12, 1), fork);
  SUBCASE("shared holds while the child runs") {
    const trace::Trace t = {trace::Session{"P", 0.0, {seg(10, 2, "tool", 5.0), seg(1, 1)}},
                            trace::Session{"C", 1.0, {c0}}};
    Replica r("local");
    auto c = r.start(t);
    c->run_until(sim::from_seconds(1.005));
    const auto& e = c->replica(0);
    const cluster::Location pl = c->ledger().where(0), cl = c->ledger().where(1);
    const auto& ps = e.view().session(pl.handle);
    const auto& cs = e.view().session(cl.handle);
    REQUIRE(ps.gpu_blocks.size() == 3);
    REQUIRE(cs.gpu_blocks.size() == 3);
    CHECK(cs.gpu_blocks[0] == ps.gpu_blocks[0]);
    CHECK(cs.gpu_blocks[1] == ps.gpu_blocks[1]);
    CHECK(e.view().gpu().refcount(ps.gpu_blocks[0]) == 2);
    CHECK(e.view().gpu().refcount(ps.gpu_blocks[1]) == 2);
    CHECK(e.view().gpu().refcount(ps.gpu_blocks[2]) == 1);
    CHECK(e.view().gpu().refcount(cs.gpu_blocks[2]) == 1);
    CHECK(e.view().gpu().used() == 4);
    c->run_until(sim::from_seconds(1.020));  // C finished
    CHECK(e.view().gpu().refcount(ps.gpu_blocks[0]) == 1);
    CHECK(e.view().gpu().refcount(ps.gpu_blocks[1]) == 1);
    const auto res = [&] {
      c->run_until(sim::kForever);
      return c->result();
    }();
    CHECK(rec(res, "C").prefix_hit_tokens == 8);
    CHECK(rec(res, "C").finish_s == doctest::Approx(1.014));
    CHECK(res.summary.counters.forks == 1);
  }
  SUBCASE("an ended subagent's own blocks: cached under local, freed under agent-aware") {
    // Segment 0 forks, so the end goes on a second segment after a 0.1 s tool.
    trace::Session child{
        "C", 1.0, {c0, with_event(seg(1, 1), {trace::ContextEventKind::kEnd, 0, 0, ""})}};
    child.segments[0].intercept = trace::Intercept{"tool", 0.1};
    // C: prefill 1.000 -> 1.014 s (first output), pause 0.1 s, then 1 token: context 14, 13
    // KV: prefill 2 tokens 1.114 -> 1.126 s, its output ends it. It holds 4 blocks: P's two,
    // and two of its own, of which the full one (tokens 8-11) is published.
    const trace::Trace t = {trace::Session{"P", 0.0, {seg(10, 2, "tool", 5.0), seg(1, 1)}}, child};
    for (const char* m : {"local", "agent-aware"}) {
      CAPTURE(m);
      Replica r(m);
      auto c = r.start(t);
      c->run_until(sim::from_seconds(1.5));
      const bool aware = std::string(m) == "agent-aware";
      // P still holds its 3 blocks; C's own full block is cached (local) or free (aware).
      CHECK(c->replica(0).view().gpu().used() == 3);
      CHECK(c->replica(0).view().gpu().cached() == (aware ? 0 : 1));
      c->run_until(sim::kForever);
      const auto res = c->result();
      CHECK(rec(res, "C").finish_s == doctest::Approx(1.126));
      CHECK(res.summary.counters.worthless_freed_blocks == (aware ? 1 : 0));
    }
  }
}

TEST_CASE(
    "eviction order: local takes the newest idle session, global-lru the least recently "
    "used, agent-aware the lowest retention priority") {
  // 6 blocks, no prefix caching. A (0 s) and B (0.05 s): 8 tokens each, one output, then a 10 s
  // tool holding 8 KV tokens in 2 blocks: A pauses at 18 ms, B at 68 ms. C (1 s): 12 tokens
  // needs 3 blocks with 2 free, so one idle session's KV goes; it recomputes those 8 tokens at
  // its resume. local: B (the newest arrival); global-lru: A (paused first); agent-aware: the
  // one whose retention hint has the lower priority.
  auto paused = [](std::string id, double at, int32_t prio) {
    trace::Session s{std::move(id), at, {seg(8, 1, "tool", 10.0), seg(1, 1)}};
    s.segments[0].retention = {trace::Retention{0, 8, prio, 0}};
    return s;
  };
  auto lost = [](const cluster::RunResult& r, const char* id) {
    return rec(r, id).recomputed_tokens;
  };
  struct Case {
    const char* manager;
    int32_t a_prio, b_prio;
    const char* evicted;
  };
  for (const Case& k : {Case{"local", 50, 50, "B"}, Case{"global-lru", 50, 50, "A"},
                        Case{"agent-aware", 90, 10, "B"}, Case{"agent-aware", 10, 90, "A"}}) {
    CAPTURE(k.manager);
    CAPTURE(k.a_prio);
    const trace::Trace t = {paused("A", 0.0, k.a_prio), paused("B", 0.05, k.b_prio),
                            trace::Session{"C", 1.0, {seg(12, 1)}}};
    Replica r(k.manager, 6);
    r.cfg.prefix_caching = false;  // an evicted block is gone, not cached
    const auto res = r.run(t);
    const std::string other = std::string(k.evicted) == "A" ? "B" : "A";
    CHECK(lost(res, k.evicted) == 8);  // its 8 KV tokens recomputed at its resume
    CHECK(lost(res, other.c_str()) == 0);
    CHECK(res.summary.counters.idle_evictions == 1);
  }
}

TEST_CASE(
    "no oracle: agent-aware's choice is the same whatever the running intercepts' true "
    "durations") {
  // A and B pause (same kind, same priority) holding 2 blocks each; C needs one of them out at
  // 1 s. Their true durations (10 s and 20 s, or swapped) lie after 1 s: the choice may depend
  // on elapsed time and on completed intercepts only, so the same session is evicted.
  auto trace_with = [](double a_s, double b_s) {
    return trace::Trace{trace::Session{"A", 0.0, {seg(8, 1, "tool", a_s), seg(1, 1)}},
                        trace::Session{"B", 0.05, {seg(8, 1, "tool", b_s), seg(1, 1)}},
                        trace::Session{"C", 1.0, {seg(12, 1)}}};
  };
  Replica r1("agent-aware", 6), r2("agent-aware", 6);
  r1.cfg.prefix_caching = r2.cfg.prefix_caching = false;
  const auto x = r1.run(trace_with(10.0, 20.0));
  const auto y = r2.run(trace_with(20.0, 10.0));
  CHECK(rec(x, "A").recomputed_tokens == rec(y, "A").recomputed_tokens);
  CHECK(rec(x, "B").recomputed_tokens == rec(y, "B").recomputed_tokens);
  CHECK(rec(x, "A").recomputed_tokens + rec(x, "B").recomputed_tokens == 8);
}

TEST_CASE(
    "resets, forks and ends on a loaded fleet: every invariant after every iteration and "
    "instant, under every manager") {
  // Small agent sessions on the round profile: a 16-token system prompt, contexts summarised at
  // 120 tokens, and tool steps that start 1-2 subagents sharing the parent's context (p = 0.3).
  // Three replicas of 100 blocks (400 tokens) behind kv-aware: pressure, evictions, forks that
  // land beside their parent and forks that do not (seed 11: 194 sessions, 138 forks, 47 resets,
  // 600-700 idle evictions).
  trace::AgentsConfig c;
  c.block_tokens = 4;
  trace::AgentKind coding;
  coding.name = "coding";
  coding.max_context = 380;
  coding.system_prompt = 16;
  coding.prompt = trace::normal(20, 6, 1);
  coding.steps = trace::normal(6, 3, 1, 12);
  coding.output = trace::normal(8, 4, 1);
  coding.tool = {"tool", trace::normal(0.5, 0.3, 0.01), trace::normal(12, 6, 1)};
  coding.summarise = trace::SummariseSpec{120, trace::normal(30, 10, 1)};
  coding.subagents = trace::SubagentSpec{0.3, trace::normal(1.5, 0.5, 1, 2), "explore", true,
                                         trace::normal(1.0, 0.3, 0.1)};
  trace::AgentKind explore = coding;
  explore.name = "explore";
  explore.summarise.reset();
  explore.subagents.reset();
  c.kinds = {coding, explore};
  c.phases = {trace::AgentPhase{30, 2.0, {{"coding", 1.0}}}};
  trace::validate_agents_config(c, "test");
  const trace::Trace t = trace::generate_agents(c, 0, 11);
  int64_t forks = 0, resets = 0;
  for (const auto& s : t)
    for (const auto& g : s.segments) {
      forks += g.event.kind == trace::ContextEventKind::kFork;
      resets += g.event.kind == trace::ContextEventKind::kReset;
    }
  REQUIRE(forks > 5);
  REQUIRE(resets > 5);
  for (const char* m : {"local", "global-lru", "agent-aware"}) {
    CAPTURE(m);
    auto run = [&] {
      const sim::Profile p = test::round_profile();
      std::vector<std::unique_ptr<sim::Executor>> ex;
      std::vector<std::unique_ptr<sim::Policy>> pol;
      std::vector<std::unique_ptr<sim::KvManager>> kv;
      std::vector<cluster::ReplicaSpec> specs;
      for (int r = 0; r < 3; ++r) {
        ex.push_back(std::make_unique<sim::SimExecutor>(p));
        pol.push_back(policy::policy_registry().create("preserve", "t", policy::PolicyParams{}));
        kv.push_back(policy::kv_manager_registry().create(m, "t", Params({}, "kv")));
        sim::EngineConfig e;
        e.scheduler = "vllm-v1";
        e.gpu_blocks = 100;
        e.cpu_blocks = 0;
        e.max_num_batched_tokens = 256;
        specs.push_back({e, ex.back().get(), pol.back().get(), "", kv.back().get()});
      }
      auto router = policy::router_registry().create("kv-aware", "t", Params({}, "router"));
      return cluster::simulate(t, std::move(specs), *router, cluster::Checks(true));
    };
    const auto r = run();
    int64_t finished = 0;
    for (const auto& s : r.sessions) finished += s.status == "finished";
    CHECK(finished == static_cast<int64_t>(t.size()));
    CHECK(r.summary.counters.resets == resets);
    CHECK(r.summary.counters.forks > 0);
    CHECK(r.summary.counters.idle_evictions > 0);
    CHECK((r.summary.counters.worthless_freed_blocks > 0) == (std::string(m) == "agent-aware"));
    const auto again = run();
    CHECK(again.summary.ttft.mean == r.summary.ttft.mean);
    CHECK(again.summary.counters.lost_reuse_total() == r.summary.counters.lost_reuse_total());
  }
}
