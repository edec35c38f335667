// The CUDA runner against itself and the CPU runner (label gpu; exits 77 without a device).
#include <doctest/doctest.h>

#include <cmath>

#include "kernels/runner/cuda_runner.h"

using namespace isim::kernels;
using namespace isim::kernels::runner;

namespace {

RunnerConfig config(Dtype dtype) {
  RunnerConfig c;
  c.dims = {.layers = 2,
            .hidden = 256,
            .heads = 4,
            .kv_heads = 2,
            .head_dim = 64,
            .ffn = 512,
            .vocab = 1000,
            .dtype = dtype};
  c.block_tokens = 16;
  c.num_blocks = 64;
  c.seed = 3;
  return c;
}

std::vector<int32_t> prompt(int n) {
  std::vector<int32_t> t;
  for (int i = 0; i < n; ++i) t.push_back((i * 37 + 11) % 1000);
  return t;
}

// Prefill in chunks, then decode greedily; the tokens and the first logits row.
std::pair<std::vector<int32_t>, std::vector<float>> generate(Runner& r, size_t chunk, int steps) {
  const auto p = prompt(37);
  std::vector<int32_t> out;
  std::vector<float> first_logits;
  size_t done = 0;
  while (done < p.size()) {
    const size_t n = std::min(chunk, p.size() - done);
    Step s{.tokens = {p.begin() + long(done), p.begin() + long(done + n)},
           .kv_before = int64_t(done),
           .blocks = block_range(0, int64_t(done + n), 16),
           .logits = done + n == p.size()};
    StepResult res = r.step({s}, {.keep_logits = true});
    done += n;
    if (done == p.size()) {
      out.push_back(res.tokens.at(0));
      first_logits = res.logits;
    }
  }
  for (int i = 0; i < steps; ++i) {
    const int64_t kv = int64_t(p.size()) + i;
    Step s{.tokens = {out.back()}, .kv_before = kv, .blocks = block_range(0, kv + 1, 16)};
    out.push_back(r.step({s}).tokens.at(0));
  }
  return {out, first_logits};
}

}  // namespace

TEST_CASE("runner cuda: deterministic, chunking-invariant, and close to the CPU runner") {
  for (Dtype dtype : {Dtype::kBF16, Dtype::kF16}) {
    CAPTURE(dtype_name(dtype));
    auto a = make_cuda_runner(config(dtype));
    auto b = make_cuda_runner(config(dtype));
    const auto ra = generate(*a, 37, 6);
    const auto rb = generate(*b, 37, 6);
    CHECK(ra.first == rb.first);
    CHECK(ra.second == rb.second);
    const auto rc = generate(*b, 8, 0);  // chunked prefill over the same blocks
    CHECK(rc.first.at(0) == ra.first.at(0));

    auto cpu = make_cpu_runner(config(Dtype::kF32));
    const auto ref = generate(*cpu, 37, 0);
    REQUIRE(ref.second.size() == ra.second.size());
    // Rounded weights and activations: compare by correlation, and NaN fails.
    double sxy = 0, sxx = 0, syy = 0;
    for (size_t i = 0; i < ref.second.size(); ++i) {
      REQUIRE(std::isfinite(ra.second[i]));
      sxy += double(ref.second[i]) * ra.second[i];
      sxx += double(ref.second[i]) * ref.second[i];
      syy += double(ra.second[i]) * ra.second[i];
    }
    CHECK(sxy / std::sqrt(sxx * syy) > 0.99);
  }
}

TEST_CASE("runner cuda: phase timers and the swap bench report positive times") {
  auto r = make_cuda_runner(config(Dtype::kBF16));
  Step s{.tokens = prompt(20), .kv_before = 0, .blocks = block_range(0, 20, 16)};
  Step d{.tokens = {5}, .kv_before = 40, .blocks = block_range(10, 41, 16)};
  const StepResult t = r->step({s, d}, {.time_phases = true});
  CHECK(t.times.dense_us > 0);
  CHECK(t.times.decode_attention_us > 0);
  CHECK(t.times.prefill_attention_us > 0);
  CHECK(t.times.lm_head_us > 0);
  auto bench = make_cuda_swap_bench(*r, 8);
  for (const std::string& path : bench->paths()) {
    CAPTURE(path);
    const SwapTiming both = bench->time(path, 8, true, true);
    CHECK(both.out_us > 0);
    CHECK(both.in_us > 0);
  }
}
