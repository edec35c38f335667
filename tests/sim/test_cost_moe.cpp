// The cost model's MoE layer and ragged-decode terms (sim/cost_moe.h), with every expected time
// worked out by hand on tests/data/profile-tables-small.yaml (2 layers; dense tokens [1, 4, 16]
// -> [10, 16, 64] us; decode attention sequences [1, 2] x kv [0, 100] -> [[1, 3], [2, 6]];
// prefill attention chunk [1, 16] x kv [0, 64] -> [[1, 2], [16, 20]]; lm_head sequences [1, 8]
// -> [5, 12]; overhead 40 us).
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <sstream>

#include "cluster/simulation.h"
#include "core/input_error.h"
#include "policies/builtin.h"
#include "sim/cost_model.h"
#include "sim/cost_moe.h"
#include "tests/input_error_text.h"
#include "tests/sim_fixtures.h"
#include "tests/test_paths.h"

using isim::sim::BatchShape;
using isim::sim::CostModel;
using isim::sim::DecodeSkew;
using isim::sim::Profile;

namespace {

Profile small() {
  return isim::sim::load_profile(isim::test::data_dir() + "/profile-tables-small.yaml");
}

// 8 experts, 2 per token, each 16 wide; every layer MoE.
Profile small_moe() {
  Profile p = small();
  p.model.moe = {8, 2, 16, 0, 0};
  return p;
}

// A 3-token prefill (kv 0), one logit: per layer dense(3) = 10 + 2/3 x 6 = 14 and prefill
// attention(3, 0) = 1 + 2/15 x 15 = 3; 2 x (14 + 3) + lm_head(1) 5 + overhead 40 = 79 us.
BatchShape prefill3() {
  BatchShape b;
  b.total_tokens = 3;
  b.num_logits = 1;
  b.prefills.push_back({3, 0});
  return b;
}

// Bins: n (0, 2], (2, 4]; skew rate (-0.01, 0.5], (0.5, 1.01]; kv_big (0, 100], (100, 1000];
// kp (-1, 0], (0, 1000]. One cell: pc 0, n <= 2, rate <= 0.5, kv_big <= 100, kp 0 -> 0.5.
DecodeSkew tiny_skew() {
  DecodeSkew s;
  s.alpha_default = 0.1;
  s.n_bins = {0, 2, 4};
  s.skew_rate_bins = {-0.01, 0.5, 1.01};
  s.kv_big_bins = {0, 100, 1000};
  s.kp_bins = {-1, 0, 1000};
  s.cells.push_back({0, 2, 0.5, 100, 0, 0.5});
  return s;
}

// Two decodes at KV 10 and 40 (sum 50, mean 25, max 40, min 10).
BatchShape ragged() {
  BatchShape b;
  b.total_tokens = 2;
  b.num_decode = 2;
  b.decode_kv_tokens = 50;
  b.decode_kv_max = 40;
  b.decode_kv_min = 10;
  b.num_logits = 2;
  return b;
}

}  // namespace

TEST_CASE("expected distinct experts: E (1 - (1 - k/E)^T) under uniform routing") {
  using isim::sim::expected_active_experts;
  CHECK(expected_active_experts(8, 2, 3) == doctest::Approx(4.625));  // 8 (1 - (3/4)^3)
  CHECK(expected_active_experts(8, 2, 1) == doctest::Approx(2));
  CHECK(expected_active_experts(128, 8, 2) == doctest::Approx(15.5));  // 128 (1 - (15/16)^2)
  CHECK(expected_active_experts(8, 2, 0) == 0);
  CHECK(expected_active_experts(8, 2, 1e6) == doctest::Approx(8));
}

TEST_CASE("MoE layer from a measured moe_us table at the expected distinct experts") {
  Profile p = small_moe();
  // tokens [1, 3] x active experts [2, 8] -> [[10, 40], [12, 44]] us.
  p.tables.moe_us = {{1, 3}, {2, 8}, {10, 40, 12, 44}};
  // T = 3: 4.625 experts; row 3 at 4.625: 12 + (2.625 / 6) x 32 = 26 us per MoE layer.
  bool outside = true;
  CHECK(isim::sim::moe_layer_us(p.model, p.tables, 3, &outside) == doctest::Approx(26));
  CHECK_FALSE(outside);
  // Both layers are MoE: 79 + 2 x 26 = 131 us.
  CHECK(CostModel(p).forward(prefill3()) == 131'000);
  // Leading dense layers keep only dense_us: one of two layers MoE adds 26.
  p.model.moe.dense_layers = 1;
  CHECK(CostModel(p).forward(prefill3()) == 105'000);
  // A dense model's forward is untouched.
  CHECK(CostModel(small()).forward(prefill3()) == 79'000);
}

TEST_CASE("MoE layer from the grouped-GEMM roofline") {
  Profile p = small_moe();
  p.tables.moe_roofline = {0.001, 1, 0.5, 0.5};  // 5e8 FLOP/s and 5e8 B/s reached
  // T = 3: 4.625 experts x 3 x 64 x 16 = 3072 parameters x 2 B = 28,416 B -> 56.832 us; FLOPs
  // 2 x 3072 x 3 tokens x 2 experts each = 36,864 -> 73.728 us: compute-bound.
  CHECK(isim::sim::moe_roofline_us(p.model, p.tables.moe_roofline, 3) == doctest::Approx(73.728));
  CHECK(CostModel(p).forward(prefill3()) == 79'000 + 2 * 73'728);
  // 10x the peak: 7.3728 us of FLOPs, so the weight read (56.832 us) bounds it.
  p.tables.moe_roofline.peak_tflops = 0.01;
  CHECK(isim::sim::moe_roofline_us(p.model, p.tables.moe_roofline, 3) == doctest::Approx(56.832));
  // tp 2 and a shared expert 32 wide at the first peak: routed max(28.416, 36.864) = 36.864;
  // shared 6144 parameters: max(12,288 B / 2 -> 12.288 us, 36,864 FLOPs / 2 -> 36.864 us).
  p.tables.moe_roofline.peak_tflops = 0.001;
  p.model.tp = 2;
  p.model.moe.shared_ffn = 32;
  CHECK(isim::sim::moe_roofline_us(p.model, p.tables.moe_roofline, 3) == doctest::Approx(73.728));
  // int4 weights: half a byte a parameter.
  p.model.weight_dtype = "int4";
  CHECK(p.model.weight_dtype_bytes() == 0.5);
}

TEST_CASE("ragged decode: t_mean + alpha (t_max - t_mean), alpha by bucket") {
  Profile p = small();
  // Without the table: per layer dense(2) = 12 and decode attention(2, 50) = 4;
  // 2 x (12 + 4) + lm_head(2) 6 + 40 = 78 us.
  CHECK(CostModel(p).forward(ragged()) == 78'000);
  p.tables.decode_skew = tiny_skew();
  const CostModel cm(p);
  // Skew rate (25 - 10) / (40 - 10) = 0.5, n 2, kv_big 40, no chunk: the cell, alpha 0.5.
  // t_max = decode attention(2, 2 x 40) = 5.2; 4 + 0.5 x 1.2 = 4.6; 2 x 16.6 + 46 = 79.2 us.
  CHECK(cm.forward(ragged()) == 79'200);
  // No cell for pc 1 (a one-token chunk, kv 0): alpha_default 0.1. dense(3) 14, prefill
  // attention(1, 0) 1, lm_head(3) 7: 2 x (14 + 1 + 4 + 0.1 x 1.2) + 7 + 40 = 85.24 us.
  BatchShape b = ragged();
  b.total_tokens = 3;
  b.num_logits = 3;
  b.prefills.push_back({1, 0});
  CHECK(cm.forward(b) == 85'240);
  // Equal KV, or a caller that leaves decode_kv_max unset: priced at the mean as before.
  b = ragged();
  b.decode_kv_max = 25;
  b.decode_kv_min = 25;
  CHECK(cm.forward(b) == 78'000);
  b.decode_kv_max = 0;
  CHECK(cm.forward(b) == 78'000);
  CHECK(cm.extrapolations() == 0);
}

TEST_CASE("skew lookup: bins are (lo, hi], a value past the last edge takes the last bin") {
  DecodeSkew s = tiny_skew();
  s.cells.push_back({0, 4, 1.01, 1000, 1000, 0.25});
  const isim::sim::SkewLookup l(s);
  CHECK(l.alpha(0, 2, 0.5, 100, 0) == 0.5);
  CHECK(l.alpha(0, 1, -0.005, 1, -0.5) == 0.5);   // the lowest bins
  CHECK(l.alpha(0, 3, 0.5, 100, 0) == 0.1);       // n in (2, 4]: no such cell
  CHECK(l.alpha(0, 999, 2, 5000, 7000) == 0.25);  // past every last edge
  CHECK(l.alpha(16, 2, 0.5, 100, 0) == 0.1);      // pc is matched exactly
}

TEST_CASE("MoE and skew tables round-trip through YAML, and bad cells name their line") {
  Profile p = small();
  p.tables.moe_us = {{1, 3}, {2, 8}, {10, 40, 12, 44}};
  p.tables.moe_roofline = {503.8, 1792, 0.7, 0.8};
  p.tables.decode_skew = tiny_skew();
  std::ostringstream out;
  isim::sim::write_profile(out, p);
  const std::string text = out.str();
  Profile back = isim::sim::parse_profile(text, "p.yaml");
  back.path.clear();
  CHECK(back == p);
  // Existing profiles write none of them.
  std::ostringstream plain;
  isim::sim::write_profile(plain, small());
  CHECK(plain.str().find("decode_skew") == std::string::npos);

  const auto error = [&](const std::string& from, const std::string& to) {
    std::string t = text;
    t.replace(t.find(from), from.size(), to);
    return isim::test::error_of_call([&] { (void)isim::sim::parse_profile(t, "p.yaml"); });
  };
  int line = 1;
  for (size_t i = 0; i < text.find("      - [0, 2, 0.5, 100, 0, 0.5]"); ++i)
    line += text[i] == '\n';
  CHECK(error("[0, 2, 0.5, 100, 0, 0.5]", "[0, 3, 0.5, 100, 0, 0.5]") ==
        fmt::format("p.yaml:{}: forward.tables.decode_skew.cells[0]: n 3: expected an upper bin "
                    "edge of n_bins (2, 4)",
                    line));
  CHECK(error("[0, 2, 0.5, 100, 0, 0.5]", "[0, 2, 0.5, 100, 0]") ==
        fmt::format("p.yaml:{}: forward.tables.decode_skew.cells[0]: expected 6 values [pc, n, "
                    "skew_rate, kv_big, kp, alpha], got 5",
                    line));
  CHECK(error("compute_efficiency: 0.7", "compute_efficiency: 1.5")
            .find("forward.tables.moe_roofline.compute_efficiency: must be at most 1") !=
        std::string::npos);
}

namespace {

// Records every batch the engine hands the executor.
class Recorder final : public isim::sim::Executor {
 public:
  explicit Recorder(const Profile& p) : sim_(p) {}
  std::string name() const override { return "recorder"; }
  isim::sim::Nanos run(const BatchShape& b) override {
    batches.push_back(b);
    return sim_.run(b);
  }
  isim::sim::Nanos transfer(int64_t bytes, int64_t copies, isim::sim::Direction dir,
                            bool duplex) override {
    return sim_.transfer(bytes, copies, dir, duplex);
  }
  const CostModel& cost_model() const override { return sim_.cost_model(); }
  std::vector<BatchShape> batches;

 private:
  isim::sim::SimExecutor sim_;
};

}  // namespace

TEST_CASE("the engine hands the cost model its decodes' largest and smallest KV") {
  // a (prompt 8) and b (prompt 40), 3 tokens each, arrive together; the round profile's engine
  // prefills both, then decodes them together at KV 8 + i and 40 + i.
  using isim::test::seg;
  const isim::trace::Trace t = {isim::trace::Session{"a", 0.0, {seg(8, 3)}},
                                isim::trace::Session{"b", 0.0, {seg(40, 3)}}};
  isim::sim::EngineConfig c;
  c.gpu_blocks = 100;
  c.cpu_blocks = 0;
  Recorder ex(isim::test::round_profile());
  auto pol =
      isim::policy::policy_registry().create("discard", "test", isim::policy::PolicyParams{});
  (void)isim::cluster::simulate(t, c, ex, *pol, [](const isim::sim::IterationRecord&) {});
  int both = 0;
  for (const BatchShape& b : ex.batches) {
    if (b.num_decode != 2) continue;
    ++both;
    CHECK(b.decode_kv_max - b.decode_kv_min == 32);
    CHECK(b.decode_kv_max + b.decode_kv_min == b.decode_kv_tokens);
  }
  CHECK(both == 2);  // tokens 2 and 3 of each (the first comes with the prefill)
}
