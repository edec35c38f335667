// The MoE layer of a lockstep group (sim/ep_cost.h): the busiest rank's expert load, the
// all-to-all, and the group's layer, every expected value worked out by hand below.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

#include "sim/ep_cost.h"
#include "sim/group_step.h"
#include "tests/test_paths.h"

using namespace isim::sim;

namespace {

// Exact E[max rank load] by enumeration: T tokens each pick k distinct experts of E uniformly,
// rank r holding experts [r E/R, (r+1) E/R). Independent of the module under test.
double exact_max_load(int experts, int k, int ranks, int tokens) {
  std::vector<std::vector<int>> picks;
  std::vector<int> pick(static_cast<size_t>(k));
  auto gen = [&](auto&& self, int from, int depth) -> void {
    if (depth == k) return picks.push_back(pick);
    for (int e = from; e < experts; ++e) {
      pick[static_cast<size_t>(depth)] = e;
      self(self, e + 1, depth + 1);
    }
  };
  gen(gen, 0, 0);
  const auto combos = static_cast<int64_t>(picks.size());
  int64_t all = 1;
  for (int t = 0; t < tokens; ++t) all *= combos;
  double sum = 0;
  for (int64_t code = 0; code < all; ++code) {
    std::vector<int> load(static_cast<size_t>(ranks), 0);
    int64_t c = code;
    for (int t = 0; t < tokens; ++t, c /= combos)
      for (int e : picks[static_cast<size_t>(c % combos)])
        ++load[static_cast<size_t>(e / (experts / ranks))];
    sum += *std::max_element(load.begin(), load.end());
  }
  return sum / static_cast<double>(all);
}

}  // namespace

TEST_CASE("expected maximum of n standard normals") {
  CHECK(expected_max_std_normal(1) == 0);
  CHECK(expected_max_std_normal(2) == doctest::Approx(1 / std::sqrt(std::numbers::pi)));
  CHECK(expected_max_std_normal(3) == doctest::Approx(1.5 / std::sqrt(std::numbers::pi)));
  CHECK_THROWS(expected_max_std_normal(0));
}

TEST_CASE("the busiest rank's expert load: skew x mean + sd x z, not the mean") {
  // E 4, k 2, R 2, T 1: per token a rank gets 2, 1 or 0 pairs with p 1/6, 4/6, 1/6: mean 1,
  // variance 2 x 1/2 x 1/2 x (4 - 2)/(4 - 1) = 1/3. z_2 = 1/sqrt(pi) = 0.5641896.
  const double z2 = 1 / std::sqrt(std::numbers::pi);
  RankLoad r = rank_load(4, 2, 2, 1, 1.0, z2);
  CHECK(r.mean == doctest::Approx(1));
  CHECK(r.sd == doctest::Approx(std::sqrt(1.0 / 3)));
  CHECK(r.max == doctest::Approx(1 + 0.5773503 * 0.5641896));  // 1.325735
  // The exact value: max is 2 with p 2/6, 1 with p 4/6: 4/3. The normal approximation is 0.6%
  // low here.
  CHECK(exact_max_load(4, 2, 2, 1) == doctest::Approx(4.0 / 3));
  CHECK(r.max == doctest::Approx(4.0 / 3).epsilon(0.01));
  // E 8, k 2, R 4, T 2: mean 1, variance per token 2 x 1/4 x 3/4 x 6/7 = 9/28, sd = sqrt(9/14)
  // = 0.8017837; z_4 = 1.0293754: 1 + 0.825340 = 1.825340. Exact (enumerated): 2.010204; the
  // approximation of a small, discrete batch is 9% low (real batches of hundreds of tokens: 1-2%).
  const double z4 = expected_max_std_normal(4);
  CHECK(z4 == doctest::Approx(1.0293754));
  r = rank_load(8, 2, 4, 2, 1.0, z4);
  CHECK(r.max == doctest::Approx(1.825340));
  CHECK(exact_max_load(8, 2, 4, 2) == doctest::Approx(2.010204));
  CHECK(r.max == doctest::Approx(2.010204).epsilon(0.1));
  // A stated skew of 1.5 raises the hot rank's mean: 1.5 + 0.825340.
  CHECK(rank_load(8, 2, 4, 2, 1.5, z4).max == doctest::Approx(2.325340));
  // Never above T min(k, E/R) = 2 x 2 = 4, nor below for no tokens.
  CHECK(rank_load(8, 2, 4, 2, 4.0, z4).max == doctest::Approx(4));  // 4.825340 capped
  CHECK(rank_load(8, 2, 4, 0, 1.0, z4).max == 0);
}

TEST_CASE("dispatch or combine of a 4-rank EP layer: bytes x (R-1)/R over NVLink and network") {
  const LinkFigures nvlink{450, 3}, ib{50, 10};
  // 100 tokens of 1000 x 2 bytes: 200,000 B, of which 3/4 leave the rank: 150,000 B at
  // 450 GB/s = 0.333333 us, plus 3 us.
  CHECK(alltoall_us(100, 2000, 4, 8, nvlink, ib) == doctest::Approx(3.333333));
  // Two GPUs per NVLink domain: 1/4 (50,000 B) to the one peer inside, 0.111111 + 3 us; 2/4
  // (100,000 B) over the network, 2 + 10 = 12 us; they run at once.
  CHECK(alltoall_us(100, 2000, 4, 2, nvlink, ib) == doctest::Approx(12));
  CHECK(alltoall_us(100, 2000, 1, 8, nvlink, ib) == 0);
}

TEST_CASE("a group's MoE layer: the busiest rank's experts plus dispatch and combine") {
  ModelShape m;
  m.hidden = 1000;
  m.dtype = "bf16";
  m.layers = 2;
  m.moe = {4, 2, 500, 0, 0};  // 4 experts of 500, 2 per token
  TablesForward t;
  t.moe_roofline = {100, 1000, 1, 1};  // 1e14 FLOP/s, 1e12 B/s
  EpGroupShape g;
  g.cores = 2;
  g.ep = true;
  g.intra = {450, 3};
  g.inter = {50, 10};
  const double z2 = 1 / std::sqrt(std::numbers::pi);
  // Cores run 1 and 3 tokens: T = 4, mean 4 x 2 / 2 = 4, sd sqrt(4/3) = 1.154701: L = 4.651470.
  // The rank's 2 experts: 2 (1 - 0.5^4.651470) = 1.920421 active, 1.5e6 parameters each at 2 B
  // = 5,761,263 B at 1e12 B/s = 5.761263 us (FLOPs: 2 x 1.5e6 x 4.65 = 1.4e7, 0.14 us).
  // Communication: the busiest core's 3 tokens x 2000 B x 1/2 = 3,000 B, 3 + 0.006667 us each
  // way: 6.013333 us.
  GroupMoe x = group_moe_layer(m, t, g, z2, {1, 3});
  CHECK(x.load == doctest::Approx(4.651470));
  CHECK(x.expert_us == doctest::Approx(5.761263));
  CHECK(x.bytes == doctest::Approx(3000));
  CHECK(x.comm_us == doctest::Approx(6.013333));
  CHECK(x.us() == doctest::Approx(11.774596));
  // Half the communication hidden behind compute.
  g.overlap = 0.5;
  CHECK(group_moe_layer(m, t, g, z2, {1, 3}).us() == doctest::Approx(5.761263 + 3.006667));
  // Without ep every rank runs all 4 tokens with each expert split 2 ways: 4 (1 - (1/2)^4) =
  // 3.75 experts x 1.5e6 x 2 B / 2 = 5.625 us; an all-gather and a reduce-scatter of 3 tokens
  // from the other rank: 6,000 B, 3.013333 us each.
  g.ep = false;
  g.overlap = 0;
  x = group_moe_layer(m, t, g, z2, {1, 3});
  CHECK(x.expert_us == doctest::Approx(5.625));
  CHECK(x.bytes == doctest::Approx(6000));
  CHECK(x.comm_us == doctest::Approx(6.026667));
}

TEST_CASE("group_step: the slowest core's own time, then the MoE layers; a dummy core's own") {
  // tests/data/profile-tables-small-moe.yaml (tests/cluster/test_lockstep.cpp's numbers): a
  // 3-token prefill alone costs 279 us, of which 200 us MoE; own 79 us. The dummy batch (1
  // token, no logits): 2 x 10 + 40 = 60 us. The layer: 100 us of experts plus 2 x (10 us + 3 x
  // 128 B / 2 at 1 GB/s) = 20.384 us; 2 layers 240.768 us; step 79 + 240.768 = 319.768 us.
  const CostModel cost(load_profile(isim::test::data_dir() + "/profile-tables-small-moe.yaml"));
  CHECK(dummy_own_ns(cost) == 60'000);
  CHECK(core_own_ns(cost, 279'000, 3) == 79'000);
  EpGroupShape g;
  g.cores = 2;
  g.ep = true;
  g.intra = {1, 10};
  g.inter = {1, 10};
  const GroupStep s =
      group_step(cost, g, expected_max_std_normal(2), {79'000, 60'000}, {3, kDummyTokens});
  CHECK(s.slowest == 79'000);
  CHECK(s.layers == 2);
  CHECK(s.layer.comm_us == doctest::Approx(20.384));
  CHECK(s.moe_ns == 240'768);
  CHECK(s.span() == 319'768);
}
