// `isim profile step` (experiments/run/step_profile.h) on tests/data/profile-tables-small-moe.yaml:
// 2 layers, both MoE (8 experts, 2 per token), moe_us 100 us per layer whatever the load; dense
// tokens [1, 4, 16] -> [10, 16, 64] us; decode attention(2 sequences, 100 KV tokens) 6 us;
// prefill attention(c, 0) = c us; lm_head [1, 8] -> [5, 12] us; overhead 40 us; hidden 64 in
// fp16 (128 B per token). Every expected value is worked out by hand (the numbers of
// tests/cluster/test_lockstep.cpp's group, with a decode batch).
#include <doctest/doctest.h>

#include <cmath>
#include <numbers>
#include <string>

#include "core/input_error.h"
#include "experiments/run/step_profile.h"
#include "sim/profile.h"
#include "tests/cli_helpers.h"
#include "tests/test_paths.h"

using namespace isim;

namespace {

const std::string kMoe = test::data_dir() + "/profile-tables-small-moe.yaml";

// 2 decodes over 50 KV tokens each and a 3-token prefill chunk: 5 tokens, 3 logits.
exp::StepQuery query() {
  exp::StepQuery q;
  q.decode = 2;
  q.kv = 50;
  q.prefill = 3;
  q.links.intra_node = {"nvlink", 1, 10e-6};  // 1 GB/s, 10 us
  return q;
}

}  // namespace

TEST_CASE("profile step: one engine's forward, term by term") {
  // Per layer: dense(5) = 16 + 1/12 x 48 = 20 us; decode attention(2, 100) 6 + prefill
  // attention(3, 0) 3 = 9 us. Two layers: dense 40, attention 18; MoE 2 x 100 = 200; lm_head(3)
  // = 5 + 2/7 x 7 = 7; overhead 40. Forward 305 us; 2 tokens / 305 us per GPU.
  const auto r = exp::profile_step(sim::load_profile(kMoe), query());
  CHECK_FALSE(r.group);
  CHECK(r.batch.total_tokens == 5);
  CHECK(r.batch.num_logits == 3);
  CHECK(r.batch.decode_kv_tokens == 100);
  CHECK(r.parts.dense_us == doctest::Approx(40));
  CHECK(r.parts.attention_us == doctest::Approx(18));
  CHECK(r.parts.moe_us == doctest::Approx(200));
  CHECK(r.parts.lm_head_us == doctest::Approx(7));
  CHECK(r.parts.overhead_us == doctest::Approx(40));
  CHECK(r.parts.total == 305'000);
  CHECK(r.step_ns == 305'000);
  CHECK(r.tokens_per_s_per_gpu == doctest::Approx(2 / 305e-6));
}

TEST_CASE("profile step: a 2-core DP/EP group where both cores run the batch") {
  // A core's own time: 305 - 200 = 105 us. Each MoE layer: the rank's experts 100 us; the
  // busiest core sends its 5 tokens, 5 x 128 B x 1/2 = 320 B at 1 GB/s + 10 us = 10.32 us each
  // way, 20.64 us both, all exposed: 120.64 us. Two layers 241.28 us; step 346.28 us.
  // Load: 10 tokens x 2 experts over 2 ranks, mean 10, sd sqrt(10 x 2 x 1/2 x 1/2 x 6/7) =
  // sqrt(30/7), z = 1/sqrt(pi) for 2 ranks.
  exp::StepQuery q = query();
  q.par.dp = 2;
  q.par.ep = true;
  const auto r = exp::profile_step(sim::load_profile(kMoe), q);
  REQUIRE(r.group);
  CHECK(r.profile.model.ep == 2);
  CHECK(r.shape.cores == 2);
  CHECK(r.shape.gpus_per_domain == 8);
  CHECK(r.own == 105'000);
  CHECK(r.step.layers == 2);
  CHECK(r.step.layer.expert_us == doctest::Approx(100));
  CHECK(r.step.layer.bytes == doctest::Approx(320));
  CHECK(r.step.layer.comm_us == doctest::Approx(20.64));
  CHECK(r.step.layer.exposed_us == doctest::Approx(20.64));
  CHECK(r.step.moe_ns == 241'280);
  CHECK(r.step_ns == 346'280);
  CHECK(r.load.mean == doctest::Approx(10));
  CHECK(r.load.sd == doctest::Approx(std::sqrt(30.0 / 7)));
  CHECK(r.step.layer.load ==
        doctest::Approx(10 + std::sqrt(30.0 / 7) / std::sqrt(std::numbers::pi)));
  CHECK(r.tokens_per_s_per_gpu == doctest::Approx(2 / 346.28e-6));
  CHECK(r.tokens_per_s == doctest::Approx(4 / 346.28e-6));
  // Half the all-to-all hidden: 10.32 us exposed per layer, step 105 + 2 x 110.32 = 325.64 us.
  q.par.ep_overlap = 0.5;
  CHECK(exp::profile_step(sim::load_profile(kMoe), q).step_ns == 325'640);
}

TEST_CASE("profile step: the CLI prints the terms and the group's step") {
  std::string out, err;
  REQUIRE(test::run_bin("isim", "profile step " + kMoe + " --decode 2 --kv 50 --prefill 3", &out,
                        &err) == 0);
  const auto rows = test::squeezed_lines(out);
  const auto has = [&](const std::string& row) {
    return std::find(rows.begin(), rows.end(), row) != rows.end();
  };
  CHECK(has("attention 18.000"));
  CHECK(has("forward 305.000"));
  CHECK(has("output tokens/s per GPU 6557.4"));
  REQUIRE(test::run_bin("isim",
                        "profile step " + kMoe +
                            " --dp 2 --ep --decode 2 --kv 50 --prefill 3 --nvlink-gbps 1 "
                            "--nvlink-latency-us 10",
                        &out, &err) == 0);
  const auto group = test::squeezed_lines(out);
  const auto in_group = [&](const std::string& row) {
    return std::find(group.begin(), group.end(), row) != group.end();
  };
  CHECK(in_group("own (forward - moe) 105.000"));
  CHECK(in_group("dispatch + combine 20.640 (320 B each way from the busiest rank)"));
  CHECK(in_group("step 346.280"));
  CHECK(in_group("output tokens/s per GPU 5775.7"));     // 2 / 346.28 us
  CHECK(in_group("output tokens/s per group 11551.3"));  // 4 / 346.28 us
}

TEST_CASE("profile step: bad input exits 2 naming the flag") {
  const std::string dense = test::data_dir() + "/profile-tables-small.yaml";
  const struct {
    std::string args, text;
  } cases[] = {
      {kMoe + " --decode=-1", "--decode: -1 is out of range"},
      {kMoe + " --decode 1048577", "--decode: 1048577 is out of range"},
      {kMoe + " --decode 1 --kv=-5", "--kv: -5 is out of range"},
      {kMoe, "--decode: nothing to run"},
      {kMoe + " --decode 1 --dp 0", "--dp: 0 is out of range"},
      {kMoe + " --decode 1 --dp 1025", "--dp: 1025 is out of range"},
      {kMoe + " --decode 1 --ep --ep-overlap 2", "--ep-overlap: 2 is out of range"},
      {kMoe + " --decode 1 --ep --expert-skew 0.5", "--expert-skew: 0.5 is out of range"},
      {kMoe + " --decode 1 --dp 3 --ep", "--dp: 8 experts do not divide over dp 3 x tp 1"},
      {dense + " --decode 1 --ep", "--ep: the profile's model tiny is dense"},
      {kMoe + " --decode 1 --network-gbps 0", "--network-gbps: 0 is out of range"},
      {kMoe + " --decode x", "--decode"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.args);
    std::string out, err;
    CHECK(test::run_bin("isim", "profile step " + c.args, &out, &err) == 2);
    CHECK(err.find(c.text) != std::string::npos);
  }
}

TEST_CASE("profile step: a dense model's DP cores are independent engines") {
  // tests/data/profile-tables-small.yaml is the same profile without the MoE term: forward 105 us
  // for the batch above; 4 cores make 4 x 2 tokens per 105 us.
  exp::StepQuery q = query();
  q.par.dp = 4;
  const auto r =
      exp::profile_step(sim::load_profile(test::data_dir() + "/profile-tables-small.yaml"), q);
  CHECK_FALSE(r.group);
  CHECK(r.step_ns == 105'000);
  CHECK(r.tokens_per_s == doctest::Approx(8 / 105e-6));
}
