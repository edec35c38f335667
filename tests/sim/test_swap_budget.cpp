// SwapBudget: one PCIe budget for both directions, per-copy overhead, bandwidth by the bytes of
// each copy issued, and the forward pass slowed beside copies. Values computed by hand.
#include <doctest/doctest.h>

#include "sim/swap_budget.h"

using namespace isim::sim;

namespace {

constexpr int64_t kGptjBlock = 16 * 458'752;  // 16 tokens x 2 x 28 layers x 4096 x 2 bytes

// GPT-J-6B on an A100 as in calibrate/profiles/a100-80g-gptj-6b.infercept.yaml: T(x) = 10 ms +
// 0.0463 ms x tokens, S = 384, PCIe 25 GB/s flat each way, duplex 0.8.
Profile gptj(double overhead_us = 0) {
  Profile p;
  p.model.name = "gpt-j-6b";
  p.model.layers = 28;
  p.model.hidden = 4096;
  p.model.heads = 16;
  p.model.kv_heads = 16;
  p.model.head_dim = 256;
  p.model.ffn = 16384;
  p.model.vocab = 50400;
  p.model.dtype = "fp16";
  p.model.params = 6053381344;
  p.block_tokens = 16;
  p.saturation_tokens = 384;
  p.form = ForwardForm::kLinear;
  p.linear = {10.0, 0.0463};
  p.swap.h2d_gbps = Curve1D{{4096, 1073741824}, {25, 25}};
  p.swap.d2h_gbps = p.swap.h2d_gbps;
  p.swap.duplex_factor = 0.8;
  p.swap.per_copy_overhead_us = overhead_us;
  return p;
}

}  // namespace

TEST_CASE("GPT-J at saturation: one budget of T(384) x 25 GB/s for both directions") {
  const CostModel cm(gptj());
  REQUIRE(cm.profile().model.kv_bytes_per_token() * 16 == kGptjBlock);
  // Window T(384) = 10 + 0.0463 x 384 = 27.7792 ms.
  const SwapBudget b(cm, cm.T(384));
  CHECK(b.window() == 27'779'200);
  // One direction alone: a copy of n blocks takes n x 7,340,032 / 25 = n x 293,601.28 ns;
  // 94 blocks = 27,598,520 ns fit, 95 = 27,892,122 do not: 94 blocks, 1,504 tokens.
  CHECK(b.blocks_that_fit(kGptjBlock, Direction::kDeviceToHost, 1000) == 94);
  CHECK(b.blocks_that_fit(kGptjBlock, Direction::kHostToDevice, 1000) == 94);
  // Both directions: 40 blocks in, then every copy at 25 x 0.8 = 20 GB/s (367,001.6 ns a block):
  // 40 in = 14,680,064 ns, leaving 13,099,136 ns: 35 blocks out (12,845,056 ns), 36 do not.
  // 75 blocks (1,200 tokens) in all; separate budgets per direction allowed 75 + 75.
  SwapBudget both = b;
  both.take(40 * kGptjBlock, Direction::kHostToDevice);
  CHECK(both.link() == 11'744'051);  // alone until the other direction moves
  CHECK(both.blocks_that_fit(kGptjBlock, Direction::kDeviceToHost, 1000) == 35);
  both.take(35 * kGptjBlock, Direction::kDeviceToHost);
  CHECK(both.link() == 14'680'064 + 12'845'056);
  CHECK(both.copies(Direction::kDeviceToHost) == 1);
  CHECK(both.copies(Direction::kHostToDevice) == 1);
}

TEST_CASE("every copy pays the per-copy overhead once") {
  // 3 us a copy: one block 3,000 + 293,601.28 = 296,601 ns; one copy of two blocks
  // 3,000 + 587,202.56 = 590,203 ns; two one-block copies 593,202 ns.
  const CostModel cm(gptj(3.0));
  const SwapBudget b(cm, 593'000);
  CHECK(b.blocks_that_fit(kGptjBlock, Direction::kDeviceToHost, 10) == 2);
  SwapBudget one = b;
  one.take(kGptjBlock, Direction::kDeviceToHost);
  CHECK(one.link() == 296'601);
  CHECK(one.blocks_that_fit(kGptjBlock, Direction::kDeviceToHost, 10) == 0);  // 593,202 > 593,000
}

TEST_CASE("bandwidth is read at the bytes of the copy actually issued") {
  // 10 GB/s at one block (7,340,032 B), 25 GB/s at ten (73,400,320 B). One copy of ten blocks
  // takes 73,400,320 / 25 = 2,936,013 ns; ten one-block copies would take 10 x 734,003 ns.
  Profile p = gptj();
  p.swap.h2d_gbps = Curve1D{{7'340'032, 73'400'320}, {10, 25}};
  const CostModel cm(p);
  CHECK(cm.transfer(10 * kGptjBlock, 1, Direction::kHostToDevice) == 2'936'013);
  CHECK(cm.transfer(10 * kGptjBlock, 10, Direction::kHostToDevice) == 7'340'032);
  const SwapBudget b(cm, 3'000'000);
  CHECK(b.blocks_that_fit(kGptjBlock, Direction::kHostToDevice, 10) == 10);
}

TEST_CASE("an idle link admits one block even when it outlasts the window") {
  const CostModel cm(gptj());
  SwapBudget b(cm, 100);
  CHECK(b.blocks_that_fit(kGptjBlock, Direction::kHostToDevice, 5) == 1);
  b.take(kGptjBlock, Direction::kHostToDevice);
  CHECK(b.link() == 293'601);
  CHECK(b.blocks_that_fit(kGptjBlock, Direction::kDeviceToHost, 5) == 0);
  CHECK(b.blocks_that_fit(kGptjBlock, Direction::kDeviceToHost, 0) == 0);
}

TEST_CASE("the forward pass runs (1 + s) x slower while copies run beside it") {
  // s = 0.25. F = 20 ms, copies 10 ms: 10 ms of copies cover 8 ms of compute, F' = 22 ms.
  CHECK(forward_beside_copies(20'000'000, 10'000'000, 0.25) == 22'000'000);
  // Copies of 30 ms outlast the slowed pass: F' = 20 x 1.25 = 25 ms.
  CHECK(forward_beside_copies(20'000'000, 30'000'000, 0.25) == 25'000'000);
  CHECK(forward_beside_copies(20'000'000, 0, 0.25) == 20'000'000);
  CHECK(forward_beside_copies(0, 5'000'000, 0.25) == 0);
  CHECK(forward_beside_copies(20'000'000, 10'000'000, 0) == 20'000'000);
}
