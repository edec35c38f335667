// The engine always makes progress: when nothing can run, what it evicts or preempts frees
// room for someone, and simulated time moves on. Each case reproduces a soak failure (issue 17's
// scripts/soak, policy min-waste) on a run small enough to follow by hand.
// Profile (tests/sim_fixtures.h): T(x) = 10 ms + 1 ms per batched token, S = 16; 4-token blocks.
#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "cluster/simulation.h"
#include "tests/sim_fixtures.h"

using namespace isim;
using isim::test::rec;
using isim::test::seg;

namespace {

// Wraps a policy and counts the batches formed. A formation that runs nothing is followed by an
// eviction or a preemption and another formation at the same instant, so an instant that keeps
// forming batches has stopped making progress: simulated time stands still (a livelock). Past
// kMax formations at one instant, or kMaxTotal in all (these runs need a few dozen; a livelock
// in which time moves on never ends), it throws, so a livelock fails the test instead of hanging.
class Watchdog final : public sim::Policy {
 public:
  static constexpr int64_t kMax = 50, kMaxTotal = 1000;
  explicit Watchdog(std::unique_ptr<sim::Policy> p) : p_(std::move(p)) {}
  std::string name() const override { return p_->name(); }
  sim::PauseAction on_pause(const sim::SessionState& s, const sim::ReplicaView& e) override {
    return p_->on_pause(s, e);
  }
  bool resume_at_back() const override { return p_->resume_at_back(); }
  void before_iteration(const sim::ReplicaView& e, sim::KvDecisions& d) override {
    if (e.now() != at_) {
      at_ = e.now();
      n_ = 0;
    }
    if (++n_ > kMax)
      throw std::runtime_error(fmt::format("no progress: {} batches formed at t={} ns", n_, at_));
    if (++total_ > kMaxTotal)
      throw std::runtime_error(fmt::format("no end: {} batches formed by t={} ns", total_, at_));
    most_ = std::max(most_, n_);
    p_->before_iteration(e, d);
  }
  void on_resume(const sim::SessionState& s, double d, const sim::ReplicaView& e) override {
    p_->on_resume(s, d, e);
  }
  bool pipelined_swap() const override { return p_->pipelined_swap(); }
  bool chunked_recompute() const override { return p_->chunked_recompute(); }
  double reserved_gpu_fraction() const override { return p_->reserved_gpu_fraction(); }
  // The most batches formed at one instant.
  int64_t most() const { return most_; }

 private:
  std::unique_ptr<sim::Policy> p_;
  sim::Nanos at_ = -1;
  int64_t n_ = 0, most_ = 0, total_ = 0;
};

std::unique_ptr<sim::Policy> make(const std::string& name, const std::string& estimator = "") {
  policy::PolicyParams params;
  if (!estimator.empty()) params.values["estimator"] = estimator;
  return policy::policy_registry().create(name, "test", params);
}

// min-waste's choices made at the pause: discard a "long" intercept and rebuild in chunks,
// preserve any other.
class DiscardLongInChunks final : public sim::Policy {
 public:
  std::string name() const override { return "discard-long-in-chunks"; }
  sim::PauseAction on_pause(const sim::SessionState& s, const sim::ReplicaView&) override {
    return s.intercept_kind() == "long" ? sim::PauseAction::kDiscard : sim::PauseAction::kPreserve;
  }
  bool chunked_recompute() const override { return true; }
};

sim::EngineConfig engine(const std::string& scheduler, int64_t gpu_blocks, int64_t batch) {
  sim::EngineConfig c;
  c.scheduler = scheduler;
  c.gpu_blocks = gpu_blocks;
  c.cpu_blocks = 0;
  c.max_num_batched_tokens = batch;
  c.check_invariants = true;
  return c;
}

cluster::RunResult run(const trace::Trace& t, const sim::EngineConfig& c, sim::Policy& pol) {
  const auto p = test::round_profile();
  sim::SimExecutor ex(p);
  return cluster::simulate(t, c, ex, pol);
}

trace::Session with_prefix(std::string id, double at, std::vector<trace::Segment> segs,
                           std::vector<uint64_t> hashes) {
  trace::Session s{std::move(id), at, std::move(segs)};
  s.prefix = {4, std::move(hashes)};
  return s;
}

}  // namespace

TEST_CASE("a session rebuilding in chunks takes no cached block unless its chunk fits") {
  // The soak's seed-1 hang (vllm-v1, min-waste with history). 10 GPU blocks, no CPU pool, so
  // min-waste can only preserve or discard. p (16 + 6 out) prefills over [0,26) ms; w (16 + 10
  // out) arrives at 1 ms and joins: [26,53) p decodes, w prefills; both decode from 53 ms on,
  // every full block hashed (vllm-v1), until at 89 ms p's 21st KV token needs a 6th block and
  // none is free: w, admitted last, is preempted (19 KV tokens, its 4 full blocks stay cached).
  // Its rebuild would hit those 4 blocks and then need a 5th for its 4-token chunk (20 context
  // tokens), which is not free. At 100 ms p pauses with 6 blocks (preserved: the elapsed
  // estimate is 0, so W_p = 0) and nothing can run.
  // Before the fix w took its 4 hits anyway and held them while waiting; the idle eviction then
  // chose w (the later arrival) over p, its blocks went back to the cache, it took them again,
  // failed again and was evicted again, forever at t = 100 ms. Now w takes nothing that it
  // cannot use, so the eviction at 100 ms drops p's 6 blocks and w restarts from its 4 hits:
  // two formations at 100 ms, one idle eviction, and w recomputes only the 3 tokens of its
  // fifth block (19 - 16).
  const trace::Trace t = {trace::Session{"p", 0.0, {seg(16, 6, "tool", 100.0), seg(4, 1)}},
                          trace::Session{"w", 0.001, {seg(16, 10)}}};
  Watchdog pol(make("min-waste", "history"));
  const auto r = run(t, engine("vllm-v1", 10, 64), pol);
  CHECK(pol.most() == 2);
  CHECK(rec(r, "p").status == "finished");
  CHECK(rec(r, "w").status == "finished");
  CHECK(r.summary.counters.preemptions == 1);
  CHECK(r.summary.counters.idle_evictions == 1);
  CHECK(rec(r, "w").recomputed_tokens == 3);
  // [100,114) w's 4-token chunk emits its 5th token, then 5 decodes of T(1) = 11 ms.
  CHECK(rec(r, "w").finish_s == doctest::Approx(0.169));
}

TEST_CASE("a waiting session does not hold shared prefix blocks it cannot use") {
  // The same livelock through the ordinary admission (chunked, vllm-v0), so under every policy:
  // preserve here. 7 GPU blocks. p (16-token prompt, hashed; 6 out) pauses at 81 ms holding 6
  // blocks, its 4 prompt blocks published. w arrives at 100 ms with a 24-token prompt whose
  // first 16 tokens are p's: it would share p's 4 blocks and need 2 more, and 1 is free.
  // Before the fix w took the 4 shared blocks and held them: the idle eviction chose w (the
  // later arrival), which freed nothing (p still held them), and w took them again, forever.
  // Now w holds nothing, the eviction drops p, and w prefills its last 8 tokens over the 4
  // cached blocks: [100,118) ms, finished with 16 hit tokens.
  for (const std::string sched : {"chunked", "vllm-v0"}) {
    CAPTURE(sched);
    const trace::Trace t = {
        with_prefix("p", 0.0, {seg(16, 6, "tool", 100.0), seg(4, 1)}, {1, 2, 3, 4}),
        with_prefix("w", 0.1, {seg(24, 1)}, {1, 2, 3, 4, 5, 6})};
    Watchdog pol(make("preserve"));
    const auto r = run(t, engine(sched, 7, 64), pol);
    CHECK(pol.most() == 2);
    CHECK(rec(r, "w").status == "finished");
    CHECK(rec(r, "w").prefix_hit_tokens == 16);
    CHECK(rec(r, "w").finish_s == doctest::Approx(0.118));
    CHECK(rec(r, "p").status == "finished");
    CHECK(r.summary.counters.idle_evictions == 1);
  }
}

TEST_CASE("partial prefills that fill the GPU between them: the latest arrival is preempted") {
  // The soak's seed-28 failure (chunked, min-waste): "no progress possible ... no idle KV to
  // evict". 12 GPU blocks, 32-token batches. l prefills 32 tokens over [0,42) ms, pauses and
  // is discarded; its intercept ends at 43 ms and it rebuilds 40 tokens in chunks of S = 16:
  // [43,69). n (40-token prompt) arrives at 50 ms and is admitted beside l's second chunk:
  // [69,111), l then holds 8 blocks and n 4, and no block is free. At 111 ms l's last 8 tokens
  // need 2 blocks, n's next 24 need 6, nobody decodes and no idle KV is left: before the fix the
  // engine threw. Now n, the latest arrival, is preempted (as vLLM preempts the last running
  // request) and nobody is admitted in its place at that instant: l rebuilds its last 8 in
  // [111,129) and decodes once (its 11th block is free): finished at 140 ms. n then prefills
  // in chunks of 16, 16 and 8 and decodes once: finished at 221 ms, 16 tokens recomputed.
  const trace::Trace t = {trace::Session{"l", 0.0, {seg(32, 1, "long", 0.001), seg(7, 2)}},
                          trace::Session{"n", 0.050, {seg(40, 2)}}};
  Watchdog pol(std::make_unique<DiscardLongInChunks>());
  const auto r = run(t, engine("chunked", 12, 32), pol);
  CHECK(pol.most() == 2);
  CHECK(rec(r, "l").finish_s == doctest::Approx(0.140));
  CHECK(rec(r, "n").finish_s == doctest::Approx(0.221));
  CHECK(rec(r, "n").preemptions == 1);
  CHECK(r.summary.counters.preemptions == 1);
  CHECK(rec(r, "l").recomputed_tokens == 32);
  CHECK(rec(r, "n").recomputed_tokens == 16);
}

TEST_CASE("a prefill preempted because nothing could run is not readmitted at that instant") {
  // The soak's seed-48 failure once the others were fixed (chunked, min-waste): time moved on
  // but nothing finished. 18 GPU blocks, 32-token batches. n and l each prefill 4 tokens and
  // pause, n at 14 ms (preserved, 1 block) and l at 28 ms (discarded). n's turn adds 59 tokens
  // (64 in context): [28,70) it prefills 32. l's turn (32 in context) rebuilds in the
  // recompute lane, which is scheduled before prefills that continue: [70,112) l 16, n 16. At
  // 112 ms l's next 16 need 4 blocks, n's last 12 need 3, and 1 is free: l, the later arrival,
  // is preempted. Had it been readmitted at once, the lane would have given it the freed
  // blocks ahead of n, it would have stuck at the same point 26 ms later, been preempted
  // again, and so on forever. Now n prefills its last 12 in [112,134) and finishes; l rebuilds
  // its 32 tokens in two chunks: finished at 186 ms, 4 + 16 tokens recomputed.
  const trace::Trace t = {trace::Session{"n", 0.0, {seg(4, 1, "short", 0.006), seg(59, 1)}},
                          trace::Session{"l", 0.001, {seg(4, 1, "long", 0.001), seg(27, 1)}}};
  Watchdog pol(std::make_unique<DiscardLongInChunks>());
  const auto r = run(t, engine("chunked", 18, 32), pol);
  CHECK(pol.most() == 2);
  CHECK(rec(r, "n").finish_s == doctest::Approx(0.134));
  CHECK(rec(r, "l").finish_s == doctest::Approx(0.186));
  CHECK(r.summary.counters.preemptions == 1);
  CHECK(rec(r, "l").recomputed_tokens == 4 + 16);
}

TEST_CASE("a rebuild that stops one token short decodes that token (vllm-v1)") {
  // The soak's seeds 1005, 1279, 1527 and 1585 (vllm-v1, min-waste): "no progress possible"
  // with the whole pool free. 8 GPU blocks. a (4 + 18 out), b (4 + 13) and c (4 + 6) arrive at
  // 0, 1 and 2 ms. [0,14) a prefills; [14,33) a decodes, b and c prefill; the three decode in
  // steps of T(3) = 13 ms. At 85 ms a's 10th KV token and b's 9th take the last free block,
  // and c, last in running order, is preempted for its 9th: it loses 8 KV tokens with 5 of its
  // 6 tokens emitted. a and b decode (12 ms steps) until at 169 ms a's 17th needs a 5th block
  // and b is preempted with 15 KV tokens; its 3 full blocks stay cached, and a's 6th block at
  // 213 ms evicts the third. a decodes alone (11 ms) and finishes at 224 ms. The recompute
  // lane (S = 16) then takes b (2 cached blocks hit, 8 to compute) and c's first 8 of 9:
  // [224,250), b's last token: b finished at 250 ms, 15 - 8 = 7 tokens recomputed. c now has
  // KV for all but its last emitted token, as a decoding session has. Before the fix it stayed
  // in the lane, which takes no decoding session, while vllm-v1's running pass skipped the lane:
  // nothing ran at 250 ms. Now c decodes: [250,261), finished at 261 ms.
  const trace::Trace t = {trace::Session{"a", 0.0, {seg(4, 18)}},
                          trace::Session{"b", 0.001, {seg(4, 13)}},
                          trace::Session{"c", 0.002, {seg(4, 6)}}};
  Watchdog pol(std::make_unique<DiscardLongInChunks>());
  const auto r = run(t, engine("vllm-v1", 8, 64), pol);
  CHECK(pol.most() == 1);
  CHECK(rec(r, "a").finish_s == doctest::Approx(0.224));
  CHECK(rec(r, "b").finish_s == doctest::Approx(0.250));
  CHECK(rec(r, "c").finish_s == doctest::Approx(0.261));
  CHECK(rec(r, "b").recomputed_tokens == 7);
  CHECK(rec(r, "b").prefix_hit_tokens == 8);
  CHECK(rec(r, "c").recomputed_tokens == 8);
  CHECK(r.summary.counters.preemptions == 2);
}

TEST_CASE("lost reuse by cause: a discard at the intercept and a preemption are told apart") {
  // The run of "partial prefills that fill the GPU between them" above (chunked, 12 GPU blocks,
  // 32-token batches): l prefills 32 tokens and is discarded at its `long` intercept (the
  // policy drops its 32 KV tokens: cause intercept); n is preempted at 111 ms holding 4 blocks
  // (16 KV tokens: cause preemption). Both rebuild in full, so the split is exact:
  //   intercept 32, preemption 16, idle eviction / migration / role switch 0, total 48.
  const trace::Trace t = {trace::Session{"l", 0.0, {seg(32, 1, "long", 0.001), seg(7, 2)}},
                          trace::Session{"n", 0.050, {seg(40, 2)}}};
  Watchdog pol(std::make_unique<DiscardLongInChunks>());
  const auto r = run(t, engine("chunked", 12, 32), pol);
  const auto cause = [](sim::LostCause c) { return static_cast<size_t>(c); };
  const auto& lost = r.summary.counters.lost_reuse;
  CHECK(lost[cause(sim::LostCause::kIntercept)] == 32);
  CHECK(lost[cause(sim::LostCause::kPreemption)] == 16);
  CHECK(lost[cause(sim::LostCause::kIdleEviction)] == 0);
  CHECK(lost[cause(sim::LostCause::kMigration)] == 0);
  CHECK(lost[cause(sim::LostCause::kRoleSwitch)] == 0);
  CHECK(r.summary.counters.lost_reuse_total() == 48);
  // Per session: l recomputes its 32, n its 16.
  CHECK(rec(r, "l").recomputed_tokens == 32);
  CHECK(rec(r, "n").recomputed_tokens == 16);
  // The names summary.json and results.csv print (lost_kv_reuse_tokens.<name>).
  CHECK(std::string(sim::lost_cause_name(sim::LostCause::kIntercept)) == "intercept");
  CHECK(std::string(sim::lost_cause_name(sim::LostCause::kPreemption)) == "preemption");
}
