// The min-waste estimators, each against one hand-computed value, and the crossover.
#include <doctest/doctest.h>

#include "policies/waste.h"
#include "sim/cost_model.h"
#include "sim/profile.h"
#include "tests/test_paths.h"

using namespace isim::policy;

TEST_CASE("each waste formula against a hand-computed value") {
  // W_p = T_hat * C = 2 s * 100 tokens
  CHECK(waste_preserve(2.0, 100) == doctest::Approx(200.0));
  // W_d = T(C) * (C + M) = 0.05 * (100 + 300)
  CHECK(waste_discard(0.05, 100, 300) == doctest::Approx(20.0));
  // c = max(40 - 10, 1) = 30, n = ceil(100 / 30) = 4:
  // T(S)*c*n(n+1)/2 = 0.05*30*10 = 15; n*a*c*M = 4*0.001*30*200 = 24
  CHECK(waste_discard_chunked(100, 40, 10, 200, 0.05, 0.001) == doctest::Approx(39.0));
  // R >= S leaves chunks of one token: c = 1, n = 3: 0.05*1*6 + 3*0.001*1*200 = 0.9
  CHECK(waste_discard_chunked(3, 40, 50, 200, 0.05, 0.001) == doctest::Approx(0.9));
  CHECK(waste_discard_chunked(0, 40, 10, 200, 0.05, 0.001) == 0.0);
  // W_s = (t_out + t_in) * (C + M) = 0.03 * 400
  CHECK(waste_swap_sync(0.01, 0.02, 100, 300) == doctest::Approx(12.0));
}

TEST_CASE("crossover on the published GPT-J profile: short preserves, long discards or swaps") {
  auto p = isim::sim::load_profile(isim::test::source_dir() +
                                   "/calibrate/profiles/a100-80g-gptj-6b.infercept.yaml");
  isim::sim::CostModel cm(p);
  const double S = static_cast<double>(cm.saturation_tokens());
  const double T_S = isim::sim::to_seconds(cm.T(cm.saturation_tokens()));
  const double a = cm.marginal_ns_per_token() * 1e-9;
  const double C = 1000, M = 10000, R = 50;
  const double w_dc = waste_discard_chunked(C, S, R, M, T_S, a);
  // c = 334, n = 3: 0.0277792*334*6 + 3*46.3e-6*334*10000 = 55.67 + 463.93
  CHECK(w_dc == doctest::Approx(519.60).epsilon(1e-4));
  // A 0.1 s tool call (QA-like) is cheaper to keep; a 10 s one (image, TTS) is not.
  CHECK(waste_preserve(0.1, C) < w_dc);
  CHECK(waste_preserve(10.0, C) > w_dc);
  // A synchronous swap of 1000 tokens (448 MB) stalls ~18 ms each way at 25 GB/s.
  const int64_t bytes = 1000 * p.model.kv_bytes_per_token();
  const double t_out =
      isim::sim::to_seconds(cm.transfer(bytes, 63, isim::sim::Direction::kDeviceToHost));
  const double t_in =
      isim::sim::to_seconds(cm.transfer(bytes, 63, isim::sim::Direction::kHostToDevice));
  CHECK(t_out == doctest::Approx(0.01835).epsilon(1e-3));
  CHECK(waste_swap_sync(t_out, t_in, C, M) > waste_preserve(0.1, C));
  CHECK(waste_swap_sync(t_out, t_in, C, M) < waste_preserve(10.0, C));
}
