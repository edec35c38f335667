#include <doctest/doctest.h>

#include <stdexcept>

#include "sim/cost_model.h"
#include "tests/test_paths.h"

using isim::sim::BatchShape;
using isim::sim::CostModel;
using isim::sim::Curve1D;
using isim::sim::Direction;
using isim::sim::load_profile;
using isim::sim::Profile;

namespace {

// Tables profile (per layer, 2 layers): dense tokens [1,4,16] -> [10,16,64] us; decode attention
// sequences [1,2] x kv [0,100] -> [[1,3],[2,6]]; prefill attention chunk [1,16] x kv [0,64] ->
// [[1,2],[16,20]]; lm_head sequences [1,8] -> [5,12]; overhead 40 us. Swap: h2d bytes
// [1000,1001000] -> [10,20] GB/s, d2h -> [8,16] GB/s, duplex 0.5, 2 us per copy.
Profile tables_profile() {
  return load_profile(isim::test::data_dir() + "/profile-tables-small.yaml");
}
// Linear: T(x) = 2 ms + 0.5 ms * x; swap a single point, 25 GB/s both ways, no overhead.
Profile linear_profile() {
  return load_profile(isim::test::data_dir() + "/profile-linear-small.yaml");
}

BatchShape prefill(int64_t tokens, int64_t kv_before) {
  BatchShape b;
  b.total_tokens = tokens;
  b.num_logits = 1;
  b.prefills.push_back({tokens, kv_before});
  return b;
}

}  // namespace

TEST_CASE("linear forward: base + slope * tokens, zero for an empty batch") {
  const CostModel cm(linear_profile());
  BatchShape b;
  CHECK(cm.forward(b) == 0);
  b.total_tokens = 6;
  b.num_decode = 6;
  b.decode_kv_tokens = 600;
  b.num_logits = 6;
  CHECK(cm.forward(b) == 5'000'000);  // 2 + 0.5 * 6 ms
  b.clear();
  b.prefills.push_back({0, 10});
  CHECK(cm.forward(b) == 2'000'000);  // a batch with a (zero-token) chunk still pays the base
  CHECK(cm.T(8) == 6'000'000);
  CHECK(cm.T(1) == 2'500'000);
  CHECK(cm.T(0) == 2'000'000);
  CHECK(cm.marginal_ns_per_token() == 500'000.0);
  CHECK(cm.saturation_tokens() == 8);
  CHECK(cm.extrapolations() == 0);
  CHECK_THROWS_AS((void)cm.T(-1), std::invalid_argument);
}

TEST_CASE("the shipped InferCept profile reproduces T(x) = 0.0463 x + 10 ms") {
  const CostModel cm(load_profile(isim::test::source_dir() +
                                  "/calibrate/profiles/a100-80g-gptj-6b.infercept.yaml"));
  CHECK(cm.T(1) == 10'046'300);
  CHECK(cm.T(384) == 27'779'200);
  CHECK(cm.marginal_ns_per_token() == doctest::Approx(46300.0).epsilon(1e-12));
  CHECK(cm.saturation_tokens() == 384);
  // 25 GB/s = 25 bytes/ns: 25 MB in 1 ms one way, 1.25 ms with the 0.8 duplex factor.
  CHECK(cm.transfer(25'000'000, 1, Direction::kDeviceToHost) == 1'000'000);
  CHECK(cm.transfer(25'000'000, 1, Direction::kHostToDevice, true) == 1'250'000);
  CHECK(cm.extrapolations() == 0);
}

TEST_CASE("tables forward: T(x) and the marginal slope at saturation") {
  const CostModel cm(tables_profile());
  // T(1): 2 layers x (dense 10 + prefill attention 1) + lm_head 5 + overhead 40 = 67 us.
  CHECK(cm.T(1) == 67'000);
  // T(8): dense(8) = 16 + 4 * 4 = 32, prefill(8, 0) = 1 + 15 * 7/15 = 8 -> 2 x 40 + 45 = 125 us.
  CHECK(cm.T(8) == 125'000);
  // T(16): dense 64, prefill 16 -> 2 x 80 + 45 = 205 us.
  CHECK(cm.T(16) == 205'000);
  CHECK(cm.marginal_ns_per_token() == 10'000.0);  // (205 - 125) us / 8 tokens
  CHECK(cm.extrapolations() == 0);
  CHECK(cm.T(0) == 45'000);  // no dense, no attention: lm_head(1) + overhead
}

TEST_CASE("tables forward: a mixed batch adds every term, zero counts are skipped") {
  const CostModel cm(tables_profile());
  BatchShape b;
  CHECK(cm.forward(b) == 0);
  // Two decodes over 50 KV tokens in total, one 4-token chunk after 32 cached tokens.
  b.total_tokens = 6;
  b.num_decode = 2;
  b.decode_kv_tokens = 50;
  b.num_logits = 3;
  b.prefills.push_back({4, 32});
  // dense(6) = 16 + 4 * 2 = 24; decode(2, 50) = 2 + 4 * 0.5 = 4;
  // prefill(4, 32): at chunk 1 -> 1.5, at chunk 16 -> 18, t = 3/15 -> 1.5 + 0.2 * 16.5 = 4.8;
  // 2 layers x 32.8 = 65.6, lm_head(3) = 7, overhead 40 -> 112.6 us.
  CHECK(cm.forward(b) == 112'600);
  CHECK(cm.extrapolations() == 0);

  b.clear();
  b.total_tokens = 2;
  b.num_decode = 2;
  b.decode_kv_tokens = 100;
  b.num_logits = 2;
  // dense(2) = 12, decode(2, 100) = 6 -> 2 x 18 + lm_head(2) 6 + 40 = 82 us.
  CHECK(cm.forward(b) == 82'000);

  // A chunk that produces no logit (not the sequence's last) and a zero-token chunk.
  b.clear();
  b.total_tokens = 16;
  b.prefills.push_back({16, 64});
  b.prefills.push_back({0, 5});
  // dense(16) = 64, prefill(16, 64) = 20 -> 2 x 84 + 40 = 208 us.
  CHECK(cm.forward(b) == 208'000);
  CHECK(cm.extrapolations() == 0);
}

TEST_CASE("per-pair interpolation of prefill attention is exact for cost proportional to pairs") {
  // A grid of 2 us per 1000 attended pairs: chunk [8, 128, 512] x kv [0, 1024].
  Profile p = tables_profile();
  auto& g = p.tables.prefill_attention_us;
  g.x = {8, 128, 512};
  g.y = {0, 1024};
  g.z.clear();
  auto pairs = [](double c, double k) { return c * k + c * (c + 1) / 2; };
  for (double c : g.x)
    for (double k : g.y) g.z.push_back(0.002 * pairs(c, k));
  p.tables.prefill_interpolation = "per_pair";
  const CostModel per_pair(p);
  p.tables.prefill_interpolation = "time";
  const CostModel by_time(p);
  // Chunk 300 over 100 cached tokens: 300 x 100 + 300 x 301 / 2 = 75,150 pairs -> 150.3 us per
  // layer, exactly; bilinear in time overestimates it (the chord of a convex curve).
  CHECK(per_pair.attention(300, 100) == 2 * 150'300);
  CHECK(by_time.attention(300, 100) > 2 * 170'000);
  // Beyond the chunk axis, per-pair extrapolation keeps the quadratic growth.
  CHECK(per_pair.attention(1024, 0) == 2 * 1'049'600);
  CHECK(by_time.attention(1024, 0) < 2 * 800'000);
  // On grid points both agree.
  CHECK(per_pair.attention(128, 1024) == by_time.attention(128, 1024));
}

TEST_CASE("recompute cost: marginal dense time plus attention at the position, not counted") {
  const CostModel cm(tables_profile());
  // Marginal (T(16) - T(8)) / 8 = 10 us a token; 2 layers x prefill_attention(8, 64) = 2 x 10.4.
  CHECK(cm.recompute_cost(8, 64) == 80'000 + 20'800);
  CHECK(cm.recompute_cost(0, 64) == 0);
  // Beyond the grid (kv 1000 > 64) it is an estimate: extrapolated, but not counted.
  CHECK(cm.recompute_cost(8, 1000) > cm.recompute_cost(8, 64));
  CHECK(cm.extrapolations() == 0);
}

TEST_CASE("tables forward: each evaluation outside a grid is counted") {
  const CostModel cm(tables_profile());
  // T(32): dense(32) = 64 + 4 * 16 = 128 and prefill(32, 0) = 32, both extrapolated;
  // 2 x 160 + 5 + 40 = 365 us.
  CHECK(cm.T(32) == 365'000);
  CHECK(cm.extrapolations() == 2);
  // lm_head(10) = 12 + 2 = 14 (extrapolated); decode(1, 0) = 1 and dense(1) = 10 inside.
  BatchShape b;
  b.total_tokens = 1;
  b.num_decode = 1;
  b.num_logits = 10;
  CHECK(cm.forward(b) == 2 * 11'000 + 14'000 + 40'000);
  CHECK(cm.extrapolations() == 3);
  // prefill(8, 128): kv beyond 64, one extrapolation (dense(8) is inside).
  // At kv 128: chunk 1 -> 1 + 2 = 3, chunk 16 -> 16 + 8 = 24; at chunk 8 -> 3 + 21 * 7/15 = 12.8.
  CHECK(cm.forward(prefill(8, 128)) == 2 * (32'000 + 12'800) + 45'000);
  CHECK(cm.extrapolations() == 4);
}

TEST_CASE("transfer: per-copy overhead, bandwidth by copy size, duplex") {
  const CostModel cm(tables_profile());
  CHECK(cm.transfer(0, 0, Direction::kHostToDevice) == 0);
  CHECK(cm.transfer(0, 5, Direction::kDeviceToHost, true) == 0);
  // One copy of 1,001,000 bytes at 20 GB/s: 50,050 ns + 2 us.
  CHECK(cm.transfer(1'001'000, 1, Direction::kHostToDevice) == 52'050);
  // Four copies of 251,000 bytes: bandwidth 10 + 10 * 0.25 = 12.5 GB/s -> 80,320 ns + 4 x 2 us.
  CHECK(cm.transfer(1'004'000, 4, Direction::kHostToDevice) == 88'320);
  // D2H at 16 GB/s: 62,562.5 ns rounds away from zero to 62,563, + 2 us.
  CHECK(cm.transfer(1'001'000, 1, Direction::kDeviceToHost) == 64'563);
  // Duplex halves it to 8 GB/s: 125,125 ns + 2 us.
  CHECK(cm.transfer(1'001'000, 1, Direction::kDeviceToHost, true) == 127'125);
  // At the first grid point: 1,000 bytes at 10 GB/s = 100 ns + 2 us.
  CHECK(cm.transfer(1'000, 1, Direction::kHostToDevice) == 2'100);
  CHECK(cm.extrapolations() == 0);
  // 2,001,000 bytes: 30 GB/s extrapolated -> 66,700 ns + 2 us.
  CHECK(cm.transfer(2'001'000, 1, Direction::kHostToDevice) == 68'700);
  CHECK(cm.extrapolations() == 1);
  CHECK_THROWS_AS((void)cm.transfer(-1, 1, Direction::kHostToDevice), std::invalid_argument);
  CHECK_THROWS_AS((void)cm.transfer(10, 0, Direction::kHostToDevice), std::invalid_argument);
}

TEST_CASE(
    "transfer: a one-point curve is a constant; a falling curve never drops below its floor") {
  const CostModel lin(linear_profile());
  CHECK(lin.transfer(4'096, 1, Direction::kHostToDevice) == 164);  // 163.84 ns at 25 GB/s
  CHECK(lin.extrapolations() == 0);
  CHECK(lin.transfer(1'000'000, 10, Direction::kDeviceToHost) == 40'000);
  CHECK(lin.extrapolations() == 1);
  CHECK(lin.transfer(1'000'000, 1, Direction::kDeviceToHost, true) == 50'000);  // x 0.8
  CHECK(lin.extrapolations() == 2);

  Profile p = linear_profile();
  p.swap.h2d_gbps = Curve1D{{1000, 2000}, {20, 10}};
  const CostModel falling(p);
  // Extrapolated to 4,000 bytes the curve says -10 GB/s; the slowest measured 10 GB/s is used.
  CHECK(falling.transfer(4'000, 1, Direction::kHostToDevice) == 400);
  CHECK(falling.extrapolations() == 1);
}

TEST_CASE("the cost model keeps its own copy of the profile") {
  Profile p = linear_profile();
  const CostModel cm(p);
  p.linear.base_ms = 100;
  CHECK(cm.T(0) == 2'000'000);
  CHECK(cm.profile().linear.base_ms == 2.0);
}

namespace {

// The small tables profile plus a mixed attention grid whose cells follow
// f(chunk, kv_prefill, decodes, kv_per_decode) = chunk + kv_prefill / 8 + 3 decodes
// + kv_per_decode / 10 on chunk [4, 8] x kv_prefill [0, 32] x decodes [1, 2] x kv [10, 50]
// (linear, so every interpolated or extrapolated value is f itself).
Profile mixed_profile() {
  Profile p = tables_profile();
  auto& g = p.tables.mixed_attention_us;
  g.axes = {std::vector<double>{4, 8}, {0, 32}, {1, 2}, {10, 50}};
  g.z = {8,  12, 11, 15, 12, 16, 15, 19,   // chunk 4: (kv_prefill, decodes) rows x kv_per_decode
         12, 16, 15, 19, 16, 20, 19, 23};  // chunk 8
  return p;
}

// n decodes over `decode_kv` KV tokens in total, plus chunks, one logit per decode and chunk.
BatchShape mixed(int32_t n, int64_t decode_kv, std::vector<BatchShape::Chunk> chunks) {
  BatchShape b;
  b.num_decode = n;
  b.decode_kv_tokens = decode_kv;
  b.total_tokens = n;
  for (const auto& c : chunks) b.total_tokens += c.tokens;
  b.num_logits = n + static_cast<int32_t>(chunks.size());
  b.prefills = std::move(chunks);
  return b;
}

}  // namespace

TEST_CASE("mixed table: one chunk with decodes is read from the mixed grid") {
  const CostModel with(mixed_profile());
  const CostModel without(tables_profile());
  // A 6-token chunk over 16 cached tokens and 2 decodes over 60 KV tokens (30 each); 8 tokens.
  const BatchShape b = mixed(2, 60, {{6, 16}});
  // dense(8) = 16 + 48 * 4/12 = 32; mixed(6, 16, 2, 30) = 6 + 2 + 6 + 3 = 17;
  // 2 layers x 49 = 98, lm_head(3) = 5 + 7 * 2/7 = 7, overhead 40 -> 145 us.
  CHECK(with.forward(b) == 145'000);
  // Without the table: decode(2, 60) = 2 + 4 * 0.6 = 4.4; prefill(6, 16): at chunk 1 -> 1.25,
  // at chunk 16 -> 17, t = 5/15 -> 6.5; 2 x (32 + 4.4 + 6.5) + 7 + 40 = 132.8 us.
  CHECK(without.forward(b) == 132'800);
  CHECK(with.extrapolations() == 0);

  // Decodes alone and a chunk alone keep their own tables.
  CHECK(with.forward(mixed(2, 100, {})) == without.forward(mixed(2, 100, {})));
  CHECK(with.forward(mixed(0, 0, {{6, 16}})) == without.forward(mixed(0, 0, {{6, 16}})));
  CHECK(with.T(8) == without.T(8));
  CHECK(with.attention(6, 16) == without.attention(6, 16));

  // Three decodes lie beyond the decodes axis: extrapolated (f stays exact) and counted.
  // dense(9) = 36, mixed(6, 16, 3, 20) = 6 + 2 + 9 + 2 = 19; 2 x 55 + lm_head(4) 8 + 40 = 158.
  CHECK(with.forward(mixed(3, 60, {{6, 16}})) == 158'000);
  CHECK(with.extrapolations() == 1);
}

TEST_CASE("mixed table: the chunk with the most attended pairs joins the decodes") {
  const CostModel cm(mixed_profile());
  // Chunk 8 @ 0 has more tokens but 36 pairs; chunk 6 @ 16 has 6 x 16 + 21 = 117, so it runs with
  // the decodes: mixed(6, 16, 2, 30) = 17, and chunk 8 @ 0 keeps prefill(8, 0) = 1 + 15 x 7/15
  // = 8. dense(16) = 64: 2 x (64 + 17 + 8) + lm_head(4) 8 + 40 = 226 us. (The other way round
  // it would be mixed(8, 0, 2, 30) = 17 plus prefill(6, 16) = 6.5: 223 us.)
  CHECK(cm.forward(mixed(2, 60, {{8, 0}, {6, 16}})) == 226'000);
  CHECK(cm.forward(mixed(2, 60, {{6, 16}, {8, 0}})) == 226'000);
  CHECK(cm.extrapolations() == 0);
}

TEST_CASE("all-reduce: 2 per layer of total tokens x hidden x dtype bytes") {
  Profile p = tables_profile();
  p.model.tp = 2;
  // hidden 64 x fp16 = 128 bytes per token; 3 us at 256 bytes, 12 us at 2,560.
  p.tables.allreduce_us = Curve1D{{256, 2560}, {3, 12}};
  const CostModel cm(p);
  // Two decodes over 100 KV tokens: 82 us without (see above); 256 bytes -> 3 us per call,
  // + 2 layers x 2 x 3 = 94 us.
  CHECK(cm.forward(mixed(2, 100, {})) == 94'000);
  // T(11): dense(11) = 16 + 48 x 7/12 = 44, prefill(11, 0) = 1 + 15 x 10/15 = 11,
  // all-reduce of 1,408 bytes = 3 + 9 x 1152/2304 = 7.5; 2 x (44 + 11 + 15) + 5 + 40 = 185 us.
  CHECK(cm.T(11) == 185'000);
  CHECK(cm.extrapolations() == 0);
  // 1 token = 128 bytes, below the curve: 3 - 9 x 128/2304 = 2.5 us, extrapolated.
  // T(1) = 2 x (10 + 1 + 5) + 5 + 40 = 77 us.
  CHECK(cm.T(1) == 77'000);
  CHECK(cm.extrapolations() == 1);
  CHECK(cm.forward(BatchShape{}) == 0);
}

TEST_CASE("tables forward: past a dipping last point a time term keeps the edge's time") {
  // dense tokens 1, 4, 16 -> 10, 16, 14 us (a 12.5% dip at the end, which the profile checks
  // accept). Linear extrapolation would give dense(32) = 14 - 16 x 2/12 = 11.33 us, cheaper than
  // 16 tokens; the edge keeps 14. T(32) = 2 layers x (dense 14 + prefill(32, 0) 32) + lm_head(1)
  // 5 + overhead 40 = 137 us (linear extrapolation gave 131.67).
  Profile p = tables_profile();
  p.tables.dense_us.y = {10, 16, 14};
  const CostModel cm(p);
  CHECK(cm.T(32) == 137'000);
  CHECK(cm.extrapolations() == 2);
}
