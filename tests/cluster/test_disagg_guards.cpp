// Guards on the disaggregation arithmetic that users' figures depend on (issue 36): how much a
// layer-by-layer transfer still sends after the last prefill iteration, whose egress link a
// transfer takes, and llm-d's split rule (the cached-prefix credit of a new session and the
// threshold's boundary). Round profile (tests/sim_fixtures.h: T(x) = 10 ms + 1 ms per batched
// token, 1000 KV bytes per token, 4-token blocks), vllm-v0, every invariant and the global check
// after each instant. Every expected value is worked out by hand in the comments.
#include <doctest/doctest.h>

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

struct GuardFleet : test::PdFleet {
  explicit GuardFleet(std::vector<Role> roles)
      : PdFleet(std::move(roles), test::two_layer_profile()) {}
};

}  // namespace

TEST_CASE("a layer-wise transfer sends what the link could not carry during the last iteration") {
  // A slow link: 0.00025 GB/s = 250 B per ms, 2 ms latency. a prefills 40 tokens on r0 in one
  // iteration, 10 + 40 = 50 ms (first token at 50 ms): 40 KV tokens = 40,000 B, 20,000 B a layer.
  // During the 50 ms iteration the link carried 50 x 250 = 12,500 B, so 40,000 - 12,500 =
  // 27,500 B are left, more than the last layer's 20,000 B floor: 2 + 27,500 / 250 = 112 ms,
  // landing at 162 ms; r1 decodes twice (11 ms each): finished at 184 ms.
  // (Whole: 2 + 160 = 162 ms on the link, finished at 234 ms; the floor alone: 2 + 80 ms,
  // finished at 154 ms.)
  GuardFleet f({Role::kPrefill, Role::kDecode});
  f.cfg.links.intra_node = {"nvlink", 0.00025, 2e-3};
  const trace::Trace t = {trace::Session{"a", 0.0, {seg(40, 3)}}};
  SUBCASE("layer") {
    f.cfg.links.transfer = "layer";
    const auto r = f.run(t);
    CHECK(rec(r, "a").ttft_s == doctest::Approx(0.050));
    CHECK(rec(r, "a").finish_s == doctest::Approx(0.184));
    CHECK(r.disagg.transfer_bytes == doctest::Approx(40000));  // the whole KV, streamed or not
    CHECK(r.disagg.transfer_s_mean == doctest::Approx(0.112));
  }
  SUBCASE("whole") {
    const auto r = f.run(t);
    CHECK(rec(r, "a").finish_s == doctest::Approx(0.234));
    CHECK(r.disagg.transfer_s_mean == doctest::Approx(0.162));
  }
}

TEST_CASE("a transfer takes the sender's egress link, not the receiver's") {
  // Roles P, P, D. a and b arrive at 0 with 8-token prompts: least-loaded sends a to r0 and b
  // to r1 (r0 already has 8 tokens queued). Both prefill 0 -> 18 ms. Each 8000 B copy leaves
  // on its own prefill replica's link: 2 + 8 = 10 ms, both landing at 28 ms; r2 decodes both
  // together, T(2) = 12 ms: 40, 52 ms. (Had both taken r2's link, they would share it at half
  // speed: 2 + 16 ms, landing at 36 ms, finished at 60 ms.)
  GuardFleet f({Role::kPrefill, Role::kPrefill, Role::kDecode});
  const trace::Trace t = {trace::Session{"a", 0.0, {seg(8, 3)}},
                          trace::Session{"b", 0.0, {seg(8, 3)}}};
  const auto r = f.run(t);
  CHECK(rec(r, "a").replica_first == 0);
  CHECK(rec(r, "b").replica_first == 1);
  for (const char* id : {"a", "b"}) {
    CAPTURE(id);
    CHECK(rec(r, id).replica_last == 2);
    CHECK(rec(r, id).ttft_s == doctest::Approx(0.018));
    CHECK(rec(r, id).finish_s == doctest::Approx(0.052));
  }
  CHECK(r.disagg.transfers == 2);
  CHECK(r.disagg.transfer_s_mean == doctest::Approx(0.010));
}

TEST_CASE("llm-d's split: a new session's cached prefix is credited; the threshold is exclusive") {
  // Roles P, M (mixed); split threshold 16 tokens. p (16 tokens, 4 hashed blocks) arrives at 0:
  // nothing cached anywhere, 16 uncached, not above 16: prefilled locally on r1 (26 ms), where
  // its 4 blocks stay cached after it finishes.
  // q arrives at 1 s sharing those 4 blocks (16 tokens) and adding `extra` tokens:
  //   extra 16: 32 - 16 cached on r1 = 16 uncached, not above 16: local on r1, which hits the
  //             16 cached tokens and prefills 16: TTFT 10 + 16 = 26 ms.
  //   extra 17: 17 uncached > 16: remote on r0, which caches nothing: 33 tokens, TTFT 43 ms.
  // (Without the credit q's 32 tokens would go to r0; with ">=" so would p and q at 16.)
  const trace::PrefixHashes hp{4, {11, 12, 13, 14}};
  const auto run = [&](int64_t extra) {
    GuardFleet f({Role::kPrefill, Role::kMixed});
    f.cfg.split = {"threshold", 16};
    trace::PrefixHashes hq{4, {11, 12, 13, 14, 15, 16, 17, 18}};
    const trace::Trace t = {trace::Session{"p", 0.0, {seg(16, 1)}, hp},
                            trace::Session{"q", 1.0, {seg(16 + extra, 1)}, hq}};
    return f.run(t);
  };
  SUBCASE("16 uncached: local") {
    const auto r = run(16);
    CHECK(rec(r, "p").replica_first == 1);
    CHECK(rec(r, "q").replica_first == 1);
    CHECK(rec(r, "q").prefix_hit_tokens == 16);
    CHECK(rec(r, "q").ttft_s == doctest::Approx(0.026));
    CHECK(r.disagg.transfers == 0);
  }
  SUBCASE("17 uncached: remote") {
    const auto r = run(17);
    CHECK(rec(r, "p").replica_first == 1);
    CHECK(rec(r, "q").replica_first == 0);
    CHECK(rec(r, "q").prefix_hit_tokens == 0);
    CHECK(rec(r, "q").ttft_s == doctest::Approx(0.043));
  }
}
