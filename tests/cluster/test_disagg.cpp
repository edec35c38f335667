// Prefill/decode disaggregation on the round profile (tests/sim_fixtures.h: T(x) = 10 ms + 1 ms
// per batched token, 1000 KV bytes per token, 4-token blocks), vllm-v0, with every replica's
// invariants checked after each iteration and the global check (one owner per KV, or in
// flight between exactly two replicas) after each instant. Links run at 1 MB/s (0.001 GB/s)
// with 2 ms latency, so 8 KV tokens (8000 B) move in 2 + 8 = 10 ms.
#include <doctest/doctest.h>

#include <map>
#include <memory>

#include "cluster/cluster.h"
#include "cluster/simulation.h"
#include "policies/builtin.h"
#include "policies/routers.h"
#include "tests/cluster/pd_fleet.h"
#include "tests/sim_fixtures.h"

using namespace isim;
using cluster::Role;
using isim::test::rec;
using isim::test::seg;

namespace {

// Replays scripted role changes: decision k returns script[k].
class Scripted final : public cluster::Planner {
 public:
  Scripted(double every, std::map<int, std::vector<cluster::RoleChange>> script)
      : every_(every), script_(std::move(script)) {}
  std::string name() const override { return "scripted"; }
  double interval_s() const override { return every_; }
  double pull_interval_s() const override { return every_; }
  void observe(const cluster::FleetSnapshot& s) override { pulls.push_back(s); }
  std::vector<cluster::RoleChange> decide(const cluster::PlannerContext&) override {
    auto it = script_.find(decisions++);
    return it == script_.end() ? std::vector<cluster::RoleChange>{} : it->second;
  }
  int decisions = 0;
  std::vector<cluster::FleetSnapshot> pulls;

 private:
  double every_;
  std::map<int, std::vector<cluster::RoleChange>> script_;
};

struct Fleet : test::PdFleet {
  explicit Fleet(std::vector<Role> roles) : PdFleet(std::move(roles), test::two_layer_profile()) {}
};

}  // namespace

TEST_CASE(
    "a session prefills on a prefill replica, its KV crosses the link, it decodes on a decode "
    "replica") {
  Fleet f({Role::kPrefill, Role::kDecode});
  const trace::Trace t = {trace::Session{"a", 0.0, {seg(8, 3)}}};
  SUBCASE("whole KV after the prefill") {
    // Prefill 8 tokens on r0: 0 -> 18 ms, first token. 8 KV tokens = 8000 B: 2 ms latency +
    // 8 ms on the link, landing at 28 ms. Decodes on r1: 28 -> 39 -> 50 ms.
    auto r = f.run(t);
    const auto& a = rec(r, "a");
    CHECK(a.ttft_s == doctest::Approx(0.018));
    CHECK(a.finish_s == doctest::Approx(0.050));
    CHECK(a.replica_first == 0);
    CHECK(a.replica_last == 1);
    CHECK(r.disagg.enabled);
    CHECK(r.disagg.transfers == 1);
    CHECK(r.disagg.transfer_bytes == doctest::Approx(8000));
    CHECK(r.disagg.transfer_s_mean == doctest::Approx(0.010));
    CHECK(r.disagg.transfer_wait_s_mean == doctest::Approx(0.0));
    CHECK(r.replicas[0].counters.prefill_tokens == 8);
    CHECK(r.replicas[0].counters.decode_tokens == 0);
    CHECK(r.replicas[1].counters.decode_tokens == 2);
    CHECK(r.summary.counters.recomputed_tokens == 0);
  }
  SUBCASE("layer by layer during the last prefill iteration") {
    // The 18 ms iteration could carry 18000 B, more than the first layer's 4000 B, so only the
    // last layer (4000 B) moves after it: 2 + 4 = 6 ms, landing at 24 ms; decodes 35, 46 ms.
    f.cfg.links.transfer = "layer";
    auto r = f.run(t);
    CHECK(rec(r, "a").finish_s == doctest::Approx(0.046));
  }
  SUBCASE("across nodes the inter-node link carries it") {
    // One replica per node: 0.5 MB/s, so 2 + 16 = 18 ms, landing at 36 ms; decodes 47, 58 ms.
    f.cfg.links.replicas_per_node = 1;
    auto r = f.run(t);
    CHECK(rec(r, "a").finish_s == doctest::Approx(0.058));
  }
}

TEST_CASE("two transfers from one prefill replica share its link: each gets half") {
  // a and b prefill together on r0 (10 + 16 = 26 ms). Both 8000 B transfers start at 26 ms:
  // 2 ms latency, then 0.5 MB/s each for 16 ms: both land at 44 ms. r1 decodes both together:
  // 44 -> 56 -> 68 ms.
  Fleet f({Role::kPrefill, Role::kDecode});
  const trace::Trace t = {trace::Session{"a", 0.0, {seg(8, 3)}},
                          trace::Session{"b", 0.0, {seg(8, 3)}}};
  auto r = f.run(t);
  for (const char* id : {"a", "b"}) {
    CHECK(rec(r, id).ttft_s == doctest::Approx(0.026));
    CHECK(rec(r, id).finish_s == doctest::Approx(0.068));
  }
  CHECK(r.disagg.transfers == 2);
  CHECK(r.disagg.transfer_s_mean == doctest::Approx(0.018));
}

TEST_CASE("a resumed turn above the split threshold is prefilled remotely, below it locally") {
  // a: 8-token prompt, 2 outputs, a 1 s tool call returning `ret` tokens, then 2 outputs.
  // Turn 1: prefill 0 -> 18 ms, transfer 8000 B -> 28 ms, decode 28 -> 39 ms, pause at 39 ms
  // on r1 holding 9 KV tokens of a 10-token context.
  auto trace_with = [](int64_t ret) {
    return trace::Trace{trace::Session{"a", 0.0, {seg(8, 2, "tool", 1.0), seg(ret, 2)}}};
  };
  // Uncached at the resume: the 14-token context (10 + returned) less the 9 KV tokens r1 kept.
  Fleet f({Role::kPrefill, Role::kDecode});
  f.cfg.split = {"threshold", 5};
  SUBCASE("4 tokens return: r1 prefills them itself") {
    // 5 uncached tokens, not above 5: at 1.039 s r1 prefills them (15 ms), first token at
    // 1.054 s, one decode (11 ms) to 1.065 s. Nothing is lost.
    auto r = f.run(trace_with(4));
    CHECK(rec(r, "a").finish_s == doctest::Approx(1.065));
    CHECK(r.disagg.transfers == 1);
    CHECK(r.summary.counters.recomputed_tokens == 0);
  }
  SUBCASE("6 tokens return, resume_kv recompute: r0 prefills, recomputing what r1 held") {
    // 7 uncached tokens > 5: the turn goes to r0, which dropped nothing but holds only the
    // prompt's blocks in no cache (the trace has no prefix hashes), so it recomputes the 9
    // tokens r1 held (lost by migration) plus 7: 16 tokens, 26 ms, first token at 1.065 s; the
    // 16 KV tokens (16000 B) take 2 + 16 = 18 ms, landing at 1.083 s; one decode to 1.094 s.
    // (The default, fetch, is tested in test_roles_kv.cpp.)
    f.cfg.split.resume_kv = "recompute";
    auto r = f.run(trace_with(6));
    CHECK(rec(r, "a").finish_s == doctest::Approx(1.094));
    CHECK(r.disagg.transfers == 2);
    CHECK(r.summary.counters.lost_reuse[static_cast<size_t>(sim::LostCause::kMigration)] == 9);
  }
}

TEST_CASE("a role switch pays its cost before the replica serves its new role") {
  // Roles P, D, D. L (1000 tokens) arrives at 0 on r0 and prefills until 1.010 s. The planner
  // decides every 50 ms; its first decision (at 50 ms) moves r2 to prefill at a cost of 0.5 s.
  // x arrives at 0.1 s while r2 pays it: only r0 may prefill, so x waits for L's iteration and
  // prefills 1.010 -> 1.028 s (TTFT 0.928 s). y arrives at 0.6 s: r2 is a prefill replica now
  // and idle (r0 has x queued), so y prefills 0.6 -> 0.618 s (TTFT 18 ms).
  Fleet f({Role::kPrefill, Role::kDecode, Role::kDecode});
  f.cfg.switching.cost_s = 0.5;
  Scripted plan(0.05, {{0, {{2, Role::kPrefill}}}});
  const trace::Trace t = {trace::Session{"L", 0.0, {seg(1000, 2)}},
                          trace::Session{"x", 0.1, {seg(8, 2)}},
                          trace::Session{"y", 0.6, {seg(8, 2)}}};
  auto r = f.run(t, &plan);
  CHECK(rec(r, "L").ttft_s == doctest::Approx(1.010));
  CHECK(rec(r, "x").ttft_s == doctest::Approx(0.928));
  CHECK(rec(r, "x").replica_first == 0);
  CHECK(rec(r, "y").ttft_s == doctest::Approx(0.018));
  CHECK(rec(r, "y").replica_first == 2);
  CHECK(r.disagg.role_switches == 1);
  CHECK(plan.decisions >= 1);
  CHECK(!plan.pulls.empty());
}

TEST_CASE("drain-first waits for the replica's work to end; paused KV is dropped and counted") {
  // Roles P, D, D. a prefills on r0 (18 ms), lands on r1 or r2 by least-loaded (r1) at 28 ms,
  // decodes once (39 ms) and pauses holding 9 KV tokens for 1 s. The planner's first decision
  // (50 ms) moves r1 to prefill, draining first with paused KV dropped: r1 has no running work,
  // so it drops a's 9 tokens (counted as role_switch) and takes the role at once. At 1.039 s a
  // resumes (`always` split): r0 and r1 are idle prefill replicas, least-loaded takes r0, which
  // prefills the whole 14-token context (the 9 dropped tokens, the last output, the 4
  // returned): 10 + 14 = 24 ms.
  Fleet f({Role::kPrefill, Role::kDecode, Role::kDecode});
  f.cfg.switching.drain_first = true;
  f.cfg.switching.paused_kv = "drop";
  Scripted plan(0.05, {{0, {{1, Role::kPrefill}}}});
  const trace::Trace t = {trace::Session{"a", 0.0, {seg(8, 2, "tool", 1.0), seg(4, 2)}}};
  auto r = f.run(t, &plan);
  CHECK(r.disagg.role_switches == 1);
  CHECK(r.disagg.switch_dropped_tokens == 9);
  CHECK(r.summary.counters.lost_reuse[static_cast<size_t>(sim::LostCause::kRoleSwitch)] == 9);
  CHECK(rec(r, "a").resume_ttft_s == doctest::Approx(0.024));
  CHECK(rec(r, "a").replica_last == 2);  // r2 is the only decode replica left
}

TEST_CASE("paused KV moves over the link to a decode replica when its replica stops decoding") {
  // Roles P, D, D; split threshold 5. a prefills on r0 (18 ms), lands on r1 (least-loaded) at
  // 28 ms, decodes once (39 ms) and pauses holding 9 KV tokens. Its tool returns 4 tokens, so
  // the resumed turn has 5 uncached tokens: not above 5, it stays with whoever holds the KV.
  Fleet f({Role::kPrefill, Role::kDecode, Role::kDecode});
  f.cfg.split = {"threshold", 5};
  auto trace_with = [](double tool_s) {
    return trace::Trace{trace::Session{"a", 0.0, {seg(8, 2, "tool", tool_s), seg(4, 2)}}};
  };
  const size_t role_switch = static_cast<size_t>(sim::LostCause::kRoleSwitch);
  const size_t migration = static_cast<size_t>(sim::LostCause::kMigration);
  SUBCASE("moved at the switch: the resumed turn finds its KV on r2") {
    // At 50 ms r1 becomes prefill; a's 9 tokens (9000 B) go to r2, the decode replica with the
    // most free blocks, over NVLink: 2 + 9 = 11 ms, landing at 61 ms. At 1.039 s r2 prefills
    // the 5 uncached tokens (15 ms): first token at 1.054 s, one decode to 1.065 s.
    f.cfg.switching.paused_kv = "move";
    Scripted plan(0.05, {{0, {{1, Role::kPrefill}}}});
    auto r = f.run(trace_with(1.0), &plan);
    CHECK(r.disagg.switch_moves == 1);
    CHECK(r.disagg.switch_moved_tokens == 9);
    CHECK(r.disagg.transfers == 1);  // the prefill's; the move is counted apart
    CHECK(rec(r, "a").resume_ttft_s == doctest::Approx(0.015));
    CHECK(rec(r, "a").finish_s == doctest::Approx(1.065));
    CHECK(rec(r, "a").replica_last == 2);
    CHECK(r.summary.counters.lost_reuse_total() == 0);
    CHECK(r.summary.counters.recomputed_tokens == 0);
  }
  SUBCASE("kept: the resumed turn migrates to r2 and recomputes the 9 tokens") {
    // r1 is a prefill replica at 1.039 s, so the local turn goes to r2, which prefills all 14
    // tokens (24 ms).
    Scripted plan(0.05, {{0, {{1, Role::kPrefill}}}});
    auto r = f.run(trace_with(1.0), &plan);
    CHECK(r.disagg.switch_moves == 0);
    CHECK(rec(r, "a").resume_ttft_s == doctest::Approx(0.024));
    CHECK(r.summary.counters.lost_reuse[migration] == 9);
  }
  SUBCASE("dropped: the same recompute, counted as role_switch") {
    f.cfg.switching.paused_kv = "drop";
    Scripted plan(0.05, {{0, {{1, Role::kPrefill}}}});
    auto r = f.run(trace_with(1.0), &plan);
    CHECK(r.disagg.switch_dropped_tokens == 9);
    CHECK(rec(r, "a").resume_ttft_s == doctest::Approx(0.024));
    CHECK(r.summary.counters.lost_reuse[role_switch] == 9);
    CHECK(r.summary.counters.lost_reuse[migration] == 0);
  }
  SUBCASE("the tool returns while the KV is in flight: the turn starts when it lands") {
    // The 15 ms tool ends at 54 ms; the KV lands at 61 ms, where r2 prefills 5 tokens (15 ms):
    // first token at 76 ms, 22 ms after the tool returned; one decode to 87 ms.
    f.cfg.switching.paused_kv = "move";
    Scripted plan(0.05, {{0, {{1, Role::kPrefill}}}});
    auto r = f.run(trace_with(0.015), &plan);
    CHECK(r.disagg.switch_moves == 1);
    CHECK(rec(r, "a").resume_ttft_s == doctest::Approx(0.022));
    CHECK(rec(r, "a").finish_s == doctest::Approx(0.087));
    CHECK(r.summary.counters.recomputed_tokens == 0);
  }
  SUBCASE("a session that pauses after the switch moves when it pauses") {
    // The switch is at 30 ms, while a decodes on r1 (28 -> 39 ms). Zero-downtime: a finishes
    // its decode there and pauses at 39 ms on a prefill replica; its KV leaves then, landing
    // at 50 ms. Drain-first: r1 drains until the pause at 39 ms, then takes the role and
    // moves the paused KV at once: the same landing. Either way 1.039 + 15 ms + 11 ms.
    f.cfg.switching.paused_kv = "move";
    SUBCASE("zero-downtime") {}
    SUBCASE("drain-first") {
      f.cfg.switching.drain_first = true;
    }
    Scripted plan(0.03, {{0, {{1, Role::kPrefill}}}});
    auto r = f.run(trace_with(1.0), &plan);
    CHECK(r.disagg.switch_moves == 1);
    CHECK(r.disagg.switch_moved_tokens == 9);
    CHECK(rec(r, "a").finish_s == doctest::Approx(1.065));
    CHECK(rec(r, "a").replica_last == 2);
  }
  SUBCASE("KV bound for the CPU does not move: it is kept and counted") {
    // Under `swap` a's KV is on its way to (or on) r1's CPU at the switch: it stays.
    f.cfg.switching.paused_kv = "move";
    f.cpu_blocks = 100;
    f.policies[1] = policy::policy_registry().create("swap", "test", policy::PolicyParams{});
    Scripted plan(0.05, {{0, {{1, Role::kPrefill}}}});
    auto r = f.run(trace_with(1.0), &plan);
    CHECK(r.disagg.switch_moves == 0);
    CHECK(r.disagg.switch_kept_tokens == 9);
  }
}

TEST_CASE("a planner may not leave a fleet without a prefill or a decode replica") {
  Fleet f({Role::kPrefill, Role::kDecode});
  Scripted plan(0.05, {{0, {{1, Role::kPrefill}}}});
  const trace::Trace t = {trace::Session{"a", 0.0, {seg(200, 2)}}};
  CHECK_THROWS_WITH_AS(f.run(t, &plan),
                       doctest::Contains("keeps at least one prefill and one decode replica"),
                       std::logic_error);
}

TEST_CASE("a turn sent back to the prefill replica hits the blocks it computed there before") {
  // vllm-v1 names every full block (hash_every_block). a prefills its 16-token prompt on r0
  // (4 blocks, 26 ms), decodes one token on r1 and pauses holding 17 KV tokens. Its resume
  // (22-token context) goes to r0 (`always`): r1's 17 tokens are dropped, but r0 still caches
  // the 4 prompt blocks under the session's block hashes, so it recomputes only the 17th token
  // (lost by migration) and prefills it with the 4 returned and the last output: 6 tokens,
  // 10 + 6 = 16 ms.
  // resume_kv recompute: the fetch (the default) would bring r1's 17 tokens instead.
  Fleet f({Role::kPrefill, Role::kDecode});
  f.cfg.split.resume_kv = "recompute";
  const trace::Trace t = {trace::Session{"a", 0.0, {seg(16, 2, "tool", 1.0), seg(4, 2)}}};
  auto r = f.run(t, nullptr, "least-loaded", "vllm-v1");
  const auto& a = rec(r, "a");
  CHECK(a.ttft_s == doctest::Approx(0.026));
  CHECK(a.resume_ttft_s == doctest::Approx(0.016));
  CHECK(r.summary.counters.lost_reuse[static_cast<size_t>(sim::LostCause::kMigration)] == 1);
}

TEST_CASE(
    "Checks: a bool turns on every check, after every event; global_only leaves the "
    "engines unchecked; per_iteration checks all but not after every event") {
  Fleet f({Role::kPrefill, Role::kDecode});
  const trace::Trace t = {trace::Session{"a", 0.0, {seg(8, 3)}}};
  auto router = policy::router_registry().create("least-loaded", "test", Params({}, "router"));
  const cluster::Checks none = false, all = true, global = cluster::Checks::global_only(),
                        iter = cluster::Checks::per_iteration();
  CHECK((!none.engines && !none.global && !none.each_event));
  CHECK((all.engines && all.global && all.each_event));
  CHECK((!global.engines && global.global && !global.each_event));
  CHECK((iter.engines && iter.global && !iter.each_event));
  for (const cluster::Checks& c : {none, all, global, iter}) {
    cluster::Cluster fleet(t, f.specs("vllm-v0"), *router, c, f.cfg);
    for (int32_t r = 0; r < fleet.size(); ++r)
      CHECK(fleet.replica(r).view().config().check_invariants == c.engines);
    fleet.load();
    fleet.run_until(sim::kForever);
    CHECK(rec(fleet.result(), "a").finish_s == doctest::Approx(0.050));  // as in the first case
  }
}

TEST_CASE("a planner's pulls carry the paused agents, the calls that ended and the turns after") {
  // Roles P, D; pulls every 50 ms. a arrives at 0 with 8 tokens (the first pull counts it),
  // prefills on r0 (18 ms), lands on r1 at 28 ms, decodes once (39 ms) and pauses in "bash"
  // for 1 s holding 9 KV tokens of a 10-token context. The pull at 50 ms sees it paused for
  // 11 ms; the call ends at 1.039 s, returning the next turn's 4 input tokens; that turn's 3
  // outputs are reported, by the kind of the call before it, in the pull after it finished.
  // b (the same from 0.2 s, paused at 0.239 s for 3 s in "wait") keeps the run, and the pulls,
  // going past that.
  Fleet f({Role::kPrefill, Role::kDecode});
  Scripted plan(0.05, {});
  const trace::Trace t = {trace::Session{"a", 0.0, {seg(8, 2, "bash", 1.0), seg(4, 3)}},
                          trace::Session{"b", 0.2, {seg(8, 2, "wait", 3.0), seg(1, 1)}}};
  auto r = f.run(t, &plan);
  const cluster::FleetSnapshot& first = plan.pulls[0];
  CHECK(first.arrivals == 1);
  CHECK(first.arrival_input_tokens == 8);
  REQUIRE(first.paused.size() == 1);
  CHECK(first.paused[0].kind == "bash");
  CHECK(first.paused[0].elapsed_s == doctest::Approx(0.011));
  CHECK(first.paused[0].context_tokens == 10);
  CHECK(first.paused[0].held_kv_tokens == 9);
  CHECK(first.paused[0].replica == 1);
  REQUIRE(plan.pulls[19].paused.size() == 2);  // at 1.0 s, both in their calls
  CHECK(plan.pulls[19].paused[0].elapsed_s == doctest::Approx(0.961));
  CHECK(plan.pulls[19].paused[1].kind == "wait");
  CHECK(plan.pulls[19].paused[1].elapsed_s == doctest::Approx(0.761));
  REQUIRE(plan.pulls[20].paused.size() == 1);  // at 1.05 s, a's call ended
  CHECK(plan.pulls[20].paused[0].kind == "wait");
  REQUIRE(plan.pulls[20].intercepts_ended.size() == 1);
  CHECK(plan.pulls[20].intercepts_ended[0].kind == "bash");
  CHECK(plan.pulls[20].intercepts_ended[0].duration_s == doctest::Approx(1.0));
  CHECK(plan.pulls[20].intercepts_ended[0].returned_tokens == 4);
  REQUIRE(plan.pulls.size() > 40);
  int64_t after = 0, ended = 0;
  for (size_t k = 0; k <= 40; ++k) {  // to 2.05 s: before b's call ends
    const cluster::FleetSnapshot& s = plan.pulls[k];
    ended += static_cast<int64_t>(s.intercepts_ended.size());
    for (const cluster::TurnAfterIntercept& x : s.resumed_turns) {
      CHECK(x.kind == "bash");
      CHECK(x.output_tokens == 3);
      ++after;
    }
  }
  CHECK(ended == 1);
  CHECK(after == 1);
  CHECK(rec(r, "a").finish_s < 3.0);
}
