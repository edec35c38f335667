// The analytic profile of a MoE model: dense_us without the experts, each MoE layer priced by
// the grouped-GEMM roofline (sim/cost_moe.h) at the spec's peaks; hand-computed.
#include <doctest/doctest.h>

#include <string>

#include "calibrate/analytic.h"
#include "calibrate/diff.h"
#include "calibrate/model.h"
#include "sim/cost_model.h"
#include "tests/calibrate/analytic_fixtures.h"
#include "tests/input_error_text.h"

using namespace isim;

namespace {

// 2 bf16 layers of W = 10^7 parameters outside the experts (22,048,000 - 2 x 1000 x 1024 over
// 2 layers), the second layer MoE: 8 experts of 512, 2 per token, 3 x 1024 x 8 x 512 =
// 12,582,912 more parameters.
calib::ModelSpec moe_model(bool moe) {
  calib::ModelSpec m;
  m.source = "made up for the test";
  auto& s = m.shape;
  s.name = "toy-moe";
  s.layers = 2;
  s.hidden = 1024;
  s.heads = 8;
  s.kv_heads = 2;
  s.head_dim = 128;
  s.ffn = 4096;
  s.vocab = 1000;
  s.dtype = "bf16";
  s.params = 22048000;
  if (moe) {
    s.moe = {8, 2, 512, 0, 1};
    s.params += 12582912;
  }
  return m;
}

}  // namespace

TEST_CASE("analytic profile of a MoE model: dense without the experts, a roofline MoE layer") {
  const calib::Efficiency e;  // compute 0.7, memory 0.8
  const sim::Profile dense =
      calib::analytic_profile(isim::test::toy_gpu(), moe_model(false), "t.yaml", e);
  const sim::Profile moe =
      calib::analytic_profile(isim::test::toy_gpu(), moe_model(true), "t.yaml", e);
  CHECK(moe.tables.dense_us == dense.tables.dense_us);
  CHECK(moe.tables.moe_roofline == sim::MoeRoofline{100, 1000, 0.7, 0.8});
  CHECK(moe.provenance_value("moe").find("1 of 2 layers MoE") != std::string::npos);
  // One token: 2 active experts x 1,572,864 parameters x 2 B = 6,291,456 B at 0.8 TB/s =
  // 7.86432 us (its 6,291,456 FLOPs take 0.09 us at 70 TFLOPS); one MoE layer.
  const double t1 = static_cast<double>(sim::CostModel(moe).T(1) - sim::CostModel(dense).T(1));
  CHECK(t1 == doctest::Approx(7864.32).epsilon(1e-4));
  // Parameters that cannot hold the experts are refused.
  calib::ModelSpec bad = moe_model(true);
  bad.shape.params = 1e7;  // less than 2,048,000 + 12,582,912
  CHECK(test::error_of_call([&] {
          (void)calib::analytic_profile(isim::test::toy_gpu(), bad, "t.yaml", e);
        }).find("must exceed embedding + lm_head + the MoE layers' experts") != std::string::npos);
}

TEST_CASE("profile diff compares the moe_us points both profiles have") {
  sim::Profile a = calib::analytic_profile(isim::test::toy_gpu(), moe_model(true), "t.yaml", {});
  sim::Profile b = a;
  a.tables.moe_us = {{1, 4}, {2, 8}, {10, 40, 12, 44}};
  b.tables.moe_us = {{1}, {2, 8}, {11, 40}};
  const calib::DiffReport r = calib::diff_profiles(a, b);
  int moe = 0;
  for (const auto& e : r.entries)
    if (e.table == "moe_us") {
      ++moe;
      if (e.point == "tokens=1 experts=2") CHECK(e.slowdown == doctest::Approx(0.1));  // 11/10
    }
  CHECK(moe == 2);
}
