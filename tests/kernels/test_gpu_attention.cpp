// CUDA attention kernels against the CPU reference (label gpu). Inputs are rounded to the
// 16-bit type first, so the reference sees exactly what the kernel reads; outputs start as NaN
// and any NaN left fails.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/cpu/attention.h"
#include "kernels/cpu/block_copy.h"
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

const std::vector<int64_t> kContexts = {1, 3, 7, 19, 733, 4099};

int sm_count() {
  int dev = 0, sms = 0;
  ISIM_CUDA_CHECK(cudaGetDevice(&dev));
  ISIM_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  return sms;
}

test::PagedFixture rounded_fixture(const AttentionShape& sh, const std::vector<int64_t>& lens,
                                   Dtype dt, std::mt19937_64& rng) {
  auto f = test::make_paged(sh, lens, rng);
  test::round_to(f.k_pool, dt);
  test::round_to(f.v_pool, dt);
  return f;
}

constexpr int32_t kWhole = -1;  // one chunk per sequence: no workspace, no merge
constexpr int32_t kAuto = 0;    // decode_plan's chunk size

// Decode of random queries over sequences of `lens` under each chunk size, against the CPU
// reference.
void check_decode(const AttentionShape& sh, const std::vector<int64_t>& lens, Dtype dt,
                  std::mt19937_64& rng, const std::vector<int32_t>& chunk_sizes) {
  const auto f = rounded_fixture(sh, lens, dt, rng);
  const auto batch = static_cast<int32_t>(lens.size());
  const int64_t row = int64_t{sh.num_q_heads} * sh.head_dim;
  auto q = test::random_floats(size_t(batch * row), rng);
  test::round_to(q, dt);
  const float scale = 1.0f / std::sqrt(float(sh.head_dim));
  std::vector<float> want(q.size()), want_lse(size_t(batch) * size_t(sh.num_q_heads));
  kernels::cpu::decode_attention(f.kv(), q.data(), want.data(), want_lse.data(), scale);

  const DeviceKv dkv(f, dt);
  const DeviceBuffer<uint16_t> dq(test::to_half(q, dt));
  for (int32_t chunk : chunk_sizes) {
    const kernels::DecodeChunkPlan plan =
        chunk == kAuto    ? kernels::cuda::decode_plan(sh, f.indptr.data(), batch, sm_count())
        : chunk == kWhole ? kernels::decode_chunk_plan(f.indptr.data(), batch, INT32_MAX)
                          : kernels::decode_chunk_plan(f.indptr.data(), batch, chunk);
    CAPTURE(plan.chunk_pages);
    CAPTURE(plan.work_items);
    DeviceBuffer<uint16_t> out(q.size());
    DeviceBuffer<float> lse(want_lse.size());
    out.poison();
    lse.poison();
    DeviceBuffer<unsigned char> ws(kernels::cuda::decode_workspace_bytes(sh, plan));
    ISIM_CUDA_CHECK(kernels::cuda::launch_decode_attention(dkv.view(f, dt), dq.get(), out.get(),
                                                           lse.get(), scale, plan, ws.get(),
                                                           ws.size(), nullptr));
    ISIM_CUDA_CHECK(cudaDeviceSynchronize());
    check_close(test::to_float(out.download(), dt), want, atol_of(dt), rtol_of(dt));
    check_close(lse.download(), want_lse, 1e-3, 1e-4);
  }
}

}  // namespace

TEST_CASE("CUDA decode attention matches the CPU reference (one chunk, auto, 7 and 1 pages)") {
  std::mt19937_64 rng(2024);
  for (Dtype dt : {Dtype::kBF16, Dtype::kF16}) {
    for (int32_t dim : {64, 128}) {
      // 1-4 on CUDA cores, 5 and 7 in masked 8-row tiles, 8-24 on tensor cores (8 and 12:
      // masked 16-row tiles; 24: a masked 64-row tile).
      for (int32_t group : {1, 2, 3, 4, 5, 7, 8, 12, 16, 24}) {
        for (int32_t bt : {8, 16, 32}) {
          CAPTURE(kernels::dtype_name(dt));
          CAPTURE(dim);
          CAPTURE(group);
          CAPTURE(bt);
          check_decode({2 * group, 2, dim, bt}, kContexts, dt, rng, {kWhole, kAuto, 7, 1});
        }
      }
    }
  }
}

TEST_CASE("CUDA decode attention with block sizes outside 8, 16, 32 (the runtime-size kernel)") {
  std::mt19937_64 rng(12);
  for (Dtype dt : {Dtype::kBF16, Dtype::kF16}) {
    for (int32_t dim : {64, 128}) {
      for (int32_t group : {1, 3, 5, 8, 12, 80}) {  // 80: a full 64-row tile and a masked one
        for (int32_t bt : {12, 24, 1}) {
          CAPTURE(kernels::dtype_name(dt));
          CAPTURE(dim);
          CAPTURE(group);
          CAPTURE(bt);
          check_decode({group, 1, dim, bt}, {1, 5, 25, 733, 1500}, dt, rng, {kWhole, kAuto, 3});
        }
      }
    }
  }
}

TEST_CASE("CUDA decode attention on a ragged batch: one long sequence and many short ones") {
  std::mt19937_64 rng(99);
  std::vector<int64_t> lens = {20000};
  std::uniform_int_distribution<int64_t> short_len(1, 300);
  for (int i = 0; i < 40; ++i) lens.push_back(short_len(rng));
  lens.push_back(2049);
  std::vector<int32_t> indptr{0};
  for (int64_t len : lens) indptr.push_back(indptr.back() + static_cast<int32_t>((len + 15) / 16));
  for (Dtype dt : {Dtype::kBF16, Dtype::kF16}) {
    for (int32_t group : {4, 7, 8}) {
      CAPTURE(kernels::dtype_name(dt));
      CAPTURE(group);
      const AttentionShape sh{2 * group, 2, 128, 16};
      // The automatic plan cuts the 1,250-page sequence into chunks of at least 16 pages
      // (256 tokens) and leaves sequences of at most that whole.
      const auto plan = kernels::cuda::decode_plan(sh, indptr.data(),
                                                   static_cast<int32_t>(lens.size()), sm_count());
      CHECK(plan.split());
      CHECK(plan.chunk_pages >= 16);
      // 1,249 pages: the long sequence's second chunk holds one page.
      check_decode(sh, lens, dt, rng, {kAuto, 16, 1249});
    }
  }
}

TEST_CASE("CUDA append_kv writes the same bytes as the CPU append") {
  std::mt19937_64 rng(3);
  for (Dtype dt : {Dtype::kBF16, Dtype::kF16}) {
    for (int32_t dim : {64, 128}) {
      const AttentionShape sh{8, 2, dim, 16};
      const std::vector<int64_t> lens = {21, 16, 40, 1};
      const std::vector<int32_t> append = {0, 5, 5, 22, 23};
      auto f = rounded_fixture(sh, lens, dt, rng);
      const int64_t row = int64_t{sh.num_kv_heads} * dim;
      auto k_new = test::random_floats(size_t(23 * row), rng);
      auto v_new = test::random_floats(k_new.size(), rng);
      const DeviceKv dkv(f, dt);
      const DeviceBuffer<uint16_t> dk(test::to_half(k_new, dt)), dv(test::to_half(v_new, dt));
      const DeviceBuffer<int32_t> dappend(append);
      const auto view = dkv.view(f, dt);
      ISIM_CUDA_CHECK(kernels::cuda::launch_append_kv(sh, view.table, dappend.get(), 23, dk.get(),
                                                      dv.get(), dkv.k.get(), dkv.v.get(), dt,
                                                      nullptr));
      ISIM_CUDA_CHECK(cudaDeviceSynchronize());
      kernels::cpu::append_kv(sh, f.table(), f.num_blocks, append.data(), k_new.data(),
                              v_new.data(), f.k_pool.data(), f.v_pool.data());
      CHECK(dkv.k.download() == test::to_half(f.k_pool, dt));
      CHECK(dkv.v.download() == test::to_half(f.v_pool, dt));
    }
  }
}

TEST_CASE("CUDA launchers reject unsupported arguments without launching") {
  const AttentionShape sh{4, 2, 96, 16};  // head_dim 96 has no instantiation
  const kernels::cuda::DevicePagedKv kv{
      sh, {nullptr, nullptr, nullptr, 1}, nullptr, nullptr, Dtype::kBF16};
  const kernels::DecodeChunkPlan one{1, 1, 1};
  CHECK(kernels::cuda::launch_decode_attention(kv, nullptr, nullptr, nullptr, 1.f, one, nullptr, 0,
                                               nullptr) == cudaErrorInvalidValue);
  CHECK(kernels::cuda::launch_prefill_attention(kv, nullptr, 1, nullptr, nullptr, nullptr, 1.f,
                                                nullptr) == cudaErrorInvalidValue);
  auto kv128 = kv;
  kv128.shape.head_dim = 128;
  kv128.dtype = Dtype::kF32;  // the kernels read 16-bit types only
  CHECK(kernels::cuda::launch_decode_attention(kv128, nullptr, nullptr, nullptr, 1.f, one, nullptr,
                                               0, nullptr) == cudaErrorInvalidValue);
  // A split plan without its workspace, and a plan for another batch size.
  auto kv_bf16 = kv128;
  kv_bf16.dtype = Dtype::kBF16;
  CHECK(kernels::cuda::launch_decode_attention(kv_bf16, nullptr, nullptr, nullptr, 1.f,
                                               kernels::DecodeChunkPlan{1, 1, 3}, nullptr, 0,
                                               nullptr) == cudaErrorInvalidValue);
  CHECK(kernels::cuda::launch_decode_attention(kv_bf16, nullptr, nullptr, nullptr, 1.f,
                                               kernels::DecodeChunkPlan{2, 1, 2}, nullptr, 0,
                                               nullptr) == cudaErrorInvalidValue);
  CHECK(cudaGetLastError() == cudaSuccess);
}
