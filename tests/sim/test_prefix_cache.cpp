// Prefix caching across sessions: hash chains, shared blocks, hit accounting, exact times.
// Profile: T(x) = 10 ms + 1 ms/token, 4-token blocks (tests/sim_fixtures.h's round profile).
#include <doctest/doctest.h>

#include "cluster/simulation.h"
#include "core/input_error.h"

#include "tests/sim_fixtures.h"

using namespace isim;
using isim::test::rec;
using isim::test::seg;

namespace {

class Keep final : public sim::Policy {
 public:
  std::string name() const override { return "keep"; }
  sim::PauseAction on_pause(const sim::SessionState&, const sim::ReplicaView&) override {
    return sim::PauseAction::kPreserve;
  }
};

cluster::RunResult run(const trace::Trace& t, int64_t gpu_blocks = 64) {
  sim::EngineConfig cfg;
  cfg.gpu_blocks = gpu_blocks;
  cfg.cpu_blocks = 0;
  cfg.max_num_batched_tokens = 256;
  cfg.check_invariants = true;
  auto p = test::round_profile();
  sim::SimExecutor ex(p);
  Keep keep;
  return cluster::simulate(t, cfg, ex, keep);
}

trace::Session with_prefix(std::string id, double at, int64_t prompt, int64_t out,
                           std::vector<uint64_t> hashes) {
  trace::Session s{std::move(id), at, {seg(prompt, out)}};
  s.prefix = {8, std::move(hashes)};
  return s;
}

std::vector<uint64_t> prefix_chain_of(const trace::Session& s) {
  return sim::prefix_chain(s, 4);
}

}  // namespace

TEST_CASE("the hash chain: equal prefixes hash equally, a diverging block splits the chain") {
  auto a = prefix_chain_of(with_prefix("a", 0, 20, 1, {7, 8}));
  auto b = prefix_chain_of(with_prefix("b", 0, 24, 1, {7, 8, 9}));
  auto c = prefix_chain_of(with_prefix("c", 0, 20, 1, {7, 5}));
  // 8-token trace blocks over 4-token engine blocks: two engine blocks per trace block; only
  // full blocks inside the prompt are hashed.
  REQUIRE(a.size() == 4);
  REQUIRE(b.size() == 6);
  REQUIRE(c.size() == 4);
  CHECK(std::equal(a.begin(), a.end(), b.begin()));  // b extends a
  CHECK(c[0] == a[0]);
  CHECK(c[1] == a[1]);
  CHECK(c[2] != a[2]);  // the second trace block differs
  CHECK(c[3] != a[3]);
  CHECK(a[0] != a[1]);  // positions inside one trace block differ
  auto none = prefix_chain_of(trace::Session{"n", 0, {seg(20, 1)}});
  CHECK(none.empty());
}

TEST_CASE("a later session reuses a finished session's cached prefix blocks") {
  // a: prompt 10 -> [0,20) ms, finishes; its 2 full prefix blocks stay cached.
  // b at 1 s: prompt 12, the first 8 tokens cached -> prefills 4: [1000, 1014) ms.
  // c at 2 s: its first trace block differs from a's, so nothing is shared: [2000, 2022) ms.
  trace::Trace t = {with_prefix("a", 0.0, 10, 1, {5}), with_prefix("b", 1.0, 12, 1, {5}),
                    with_prefix("c", 2.0, 12, 1, {6})};
  auto r = run(t);
  CHECK(rec(r, "a").finish_s == doctest::Approx(0.020).epsilon(1e-12));
  CHECK(rec(r, "b").finish_s == doctest::Approx(1.014).epsilon(1e-12));
  CHECK(rec(r, "b").prefix_hit_tokens == 8);
  CHECK(rec(r, "c").prefix_hit_tokens == 0);  // a diverging first block: no reuse
  CHECK(rec(r, "c").finish_s == doctest::Approx(2.022).epsilon(1e-12));
  CHECK(r.summary.counters.prefix_lookup_tokens == 10 + 12 + 12);
  CHECK(r.summary.counters.prefix_hit_tokens == 8);
}

TEST_CASE("running sessions share blocks, counted once, and the last holder frees them") {
  // a: prompt 10, 3 outputs: [0,20) prefill, then decodes. b arrives at 15 ms with the same
  // 8-token prefix and joins at 20 ms holding a's two prefix blocks (refcount 2); the invariant
  // check (every hold is one listing) runs after every iteration.
  trace::Trace t = {with_prefix("a", 0.0, 10, 3, {5}), with_prefix("b", 0.015, 12, 2, {5})};
  auto r = run(t);
  CHECK(rec(r, "b").prefix_hit_tokens == 8);
  // [20,34) b prefills 4 tokens alone (vllm-v0 runs prefills alone), then both decode:
  // [34,46) -> a token 2, b token 2 (b done); [46,57) -> a token 3 (a done).
  CHECK(rec(r, "b").finish_s == doctest::Approx(0.046).epsilon(1e-12));
  CHECK(rec(r, "a").finish_s == doctest::Approx(0.057).epsilon(1e-12));
}

TEST_CASE("cached blocks are evicted when the pool needs the room") {
  // 4 blocks in all. a caches 2 prefix blocks; d (no prefix) needs all 4 blocks and evicts
  // them; b then finds nothing.
  trace::Trace t = {with_prefix("a", 0.0, 10, 1, {5}), trace::Session{"d", 1.0, {seg(15, 1)}},
                    with_prefix("b", 2.0, 12, 1, {5})};
  auto r = run(t, 4);
  CHECK(rec(r, "b").prefix_hit_tokens == 0);
  CHECK(rec(r, "b").finish_s == doctest::Approx(2.022).epsilon(1e-12));
}

TEST_CASE("a trace block size that engine blocks cannot tile is an input error") {
  auto s = with_prefix("x", 0, 20, 1, {1});
  s.prefix.block_tokens = 6;
  CHECK_THROWS_WITH_AS(prefix_chain_of(s),
                       "session x: prefix.block_tokens 6 is not a multiple of the profile's "
                       "kv.block_tokens 4",
                       InputError);
}
