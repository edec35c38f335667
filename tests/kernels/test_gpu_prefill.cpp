// CUDA multi-token (prefill) attention against the CPU reference (label gpu). Inputs are rounded
// to the 16-bit type first, so the reference sees exactly what the kernel reads; out and lse
// start as NaN and any NaN left fails. The kernel works on 64-row x 64-key tiles, so the sizes
// here straddle tile edges: chunks of 1, 17, 64 and 200 queries, fresh or over existing
// context, GQA groups that do or do not divide 64, shuffled block ids, an empty chunk.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <utility>
#include <vector>

#include "kernels/cpu/attention.h"
#include "kernels/cuda/attention.h"
#include "tests/kernels/gpu_buffers.h"
#include "tests/kernels/gpu_checks.h"
#include "tests/kernels/paged_fixture.h"

using namespace isim;
using kernels::AttentionShape;
using kernels::Dtype;
using test::DeviceBuffer;
using test::DeviceKv;
using test::atol_of;
using test::check_close;
using test::rtol_of;

namespace {

// (kv_len, q_len): the chunk's own tokens are the last q_len of its kv_len.
using Chunks = std::vector<std::pair<int64_t, int32_t>>;

// Runs the CUDA prefill on one ragged batch of `chunks` with fresh random data and compares out
// and lse with the CPU reference.
void check_prefill(const AttentionShape& sh, const Chunks& chunks, Dtype dt, std::mt19937_64& rng) {
  std::vector<int64_t> lens;
  std::vector<int32_t> qo = {0};
  int32_t max_q = 0;
  for (auto [kv_len, q_len] : chunks) {
    lens.push_back(kv_len);
    qo.push_back(qo.back() + q_len);
    max_q = std::max(max_q, q_len);
  }
  auto f = test::make_paged(sh, lens, rng);
  test::round_to(f.k_pool, dt);
  test::round_to(f.v_pool, dt);
  const int64_t row = int64_t{sh.num_q_heads} * sh.head_dim;
  auto q = test::random_floats(size_t(qo.back() * row), rng);
  test::round_to(q, dt);
  const float scale = 1.0f / std::sqrt(float(sh.head_dim));
  std::vector<float> want(q.size()), want_lse(size_t(qo.back()) * size_t(sh.num_q_heads));
  kernels::cpu::prefill_attention(f.kv(), qo.data(), q.data(), want.data(), want_lse.data(),
                                  scale);

  const DeviceKv dkv(f, dt);
  const DeviceBuffer<uint16_t> dq(test::to_half(q, dt));
  const DeviceBuffer<int32_t> dqo(qo);
  DeviceBuffer<uint16_t> out(q.size());
  DeviceBuffer<float> lse(want_lse.size());
  out.poison();
  lse.poison();
  ISIM_CUDA_CHECK(kernels::cuda::launch_prefill_attention(dkv.view(f, dt), dqo.get(), max_q,
                                                          dq.get(), out.get(), lse.get(), scale,
                                                          nullptr));
  ISIM_CUDA_CHECK(cudaDeviceSynchronize());
  check_close(test::to_float(out.download(), dt), want, atol_of(dt), rtol_of(dt));
  check_close(lse.download(), want_lse, 1e-3, 1e-4);
}

// check_prefill for every dtype, head dim 64 and 128, each group and blocks of 8, 16 and 32,
// with two kv heads.
void check_grid(const Chunks& chunks, std::initializer_list<int32_t> groups,
                std::mt19937_64& rng) {
  for (Dtype dt : {Dtype::kBF16, Dtype::kF16}) {
    for (int32_t dim : {64, 128}) {
      for (int32_t group : groups) {
        for (int32_t bt : {8, 16, 32}) {
          CAPTURE(kernels::dtype_name(dt));
          CAPTURE(dim);
          CAPTURE(group);
          CAPTURE(bt);
          check_prefill(AttentionShape{2 * group, 2, dim, bt}, chunks, dt, rng);
        }
      }
    }
  }
}

}  // namespace

TEST_CASE("CUDA multi-token attention matches the CPU reference on ragged causal chunks") {
  std::mt19937_64 rng(77);
  const Chunks chunks = {{1, 1}, {3, 2}, {7, 7}, {19, 5}, {733, 100}, {40, 0}, {4099, 19}};
  check_grid(chunks, {1, 3, 4, 8}, rng);
}

TEST_CASE("CUDA prefill: q_len 1, 17, 64, 200 fresh and over existing context, GQA 1 to 12") {
  std::mt19937_64 rng(1601);
  // An empty chunk first, fresh prompts, then the same q_lens as chunks over earlier context
  // (chunked prefill, recompute, resume), whose start is not on a 64-key tile edge.
  const Chunks chunks = {{45, 0},       {1, 1},        {17, 17},      {64, 64}, {200, 200},
                         {1 + 333, 1},  {17 + 50, 17}, {64 + 64, 64}, {200 + 129, 200}};
  check_grid(chunks, {1, 3, 8, 12}, rng);
}

TEST_CASE("CUDA prefill: group size 64, one query per row tile, and odd block sizes") {
  std::mt19937_64 rng(64);
  const Chunks chunks = {{1, 1}, {90, 17}, {70, 70}, {5, 0}, {130, 3}};
  for (Dtype dt : {Dtype::kBF16, Dtype::kF16}) {
    for (int32_t dim : {64, 128}) {
      for (int32_t bt : {1, 7, 16}) {
        CAPTURE(kernels::dtype_name(dt));
        CAPTURE(dim);
        CAPTURE(bt);
        check_prefill(AttentionShape{64, 1, dim, bt}, chunks, dt, rng);
      }
    }
  }
}

TEST_CASE("CUDA prefill rejects a GQA group above 64 without launching") {
  const AttentionShape sh{130, 2, 128, 16};  // group 65
  const kernels::cuda::DevicePagedKv kv{
      sh, {nullptr, nullptr, nullptr, 1}, nullptr, nullptr, Dtype::kBF16};
  CHECK(kernels::cuda::launch_prefill_attention(kv, nullptr, 1, nullptr, nullptr, nullptr, 1.f,
                                                nullptr) == cudaErrorInvalidValue);
  CHECK(cudaGetLastError() == cudaSuccess);
}
