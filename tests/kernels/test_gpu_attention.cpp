// CUDA attention kernels against the CPU reference (label gpu). Inputs are rounded to the
// 16-bit type first, so the reference sees exactly what the kernel reads; outputs start as NaN
// and any NaN left fails.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "kernels/cpu/attention.h"
#include "kernels/cpu/block_copy.h"
#include "kernels/cuda/attention.h"
#include "tests/kernels/gpu_buffers.h"
#include "tests/kernels/paged_fixture.h"

using namespace isim;
using kernels::AttentionShape;
using kernels::Dtype;
using test::DeviceBuffer;

namespace {

const std::vector<int64_t> kContexts = {1, 3, 7, 19, 733, 4099};

// bf16 keeps 8 mantissa bits (relative step 2^-8), fp16 keeps 11; outputs are rounded once.
double atol_of(Dtype t) {
  return t == Dtype::kBF16 ? 4e-3 : 1e-3;
}
double rtol_of(Dtype t) {
  return t == Dtype::kBF16 ? 1e-2 : 2e-3;
}

int sm_count() {
  int dev = 0, sms = 0;
  ISIM_CUDA_CHECK(cudaGetDevice(&dev));
  ISIM_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  return sms;
}

// The fixture's pools and a query batch on the device, rounded to `dt`.
struct DeviceKv {
  DeviceBuffer<uint16_t> k, v;
  DeviceBuffer<int32_t> indptr, indices, last;
  DeviceKv(const test::PagedFixture& f, Dtype dt)
      : k(test::to_half(f.k_pool, dt)),
        v(test::to_half(f.v_pool, dt)),
        indptr(f.indptr),
        indices(f.indices),
        last(f.last_page_len) {}
  kernels::cuda::DevicePagedKv view(const test::PagedFixture& f, Dtype dt) const {
    return {f.shape,
            {indptr.get(), indices.get(), last.get(), static_cast<int32_t>(f.kv_lens.size())},
            k.get(),
            v.get(),
            dt};
  }
};

test::PagedFixture rounded_fixture(const AttentionShape& sh, const std::vector<int64_t>& lens,
                                   Dtype dt, std::mt19937_64& rng) {
  auto f = test::make_paged(sh, lens, rng);
  test::round_to(f.k_pool, dt);
  test::round_to(f.v_pool, dt);
  return f;
}

void check_close(const std::vector<float>& got, const std::vector<float>& want, double atol,
                 double rtol) {
  REQUIRE(got.size() == want.size());
  const double excess = test::excess_error(got.data(), want.data(), got.size(), atol, rtol);
  CHECK_MESSAGE(excess <= 0, "worst error exceeds atol + rtol|ref| by " << excess);
}

}  // namespace

TEST_CASE("CUDA decode attention matches the CPU reference (splits 1, auto, 7)") {
  std::mt19937_64 rng(2024);
  const int sms = sm_count();
  for (Dtype dt : {Dtype::kBF16, Dtype::kF16}) {
    for (int32_t dim : {64, 128}) {
      for (int32_t group : {1, 2, 3, 4, 8}) {
        for (int32_t bt : {8, 16, 32}) {
          CAPTURE(kernels::dtype_name(dt));
          CAPTURE(dim);
          CAPTURE(group);
          CAPTURE(bt);
          const AttentionShape sh{2 * group, 2, dim, bt};
          const auto f = rounded_fixture(sh, kContexts, dt, rng);
          const auto batch = static_cast<int32_t>(kContexts.size());
          const int64_t row = int64_t{sh.num_q_heads} * dim;
          auto q = test::random_floats(size_t(batch * row), rng);
          test::round_to(q, dt);
          const float scale = 1.0f / std::sqrt(float(dim));
          std::vector<float> want(q.size()), want_lse(size_t(batch) * size_t(sh.num_q_heads));
          kernels::cpu::decode_attention(f.kv(), q.data(), want.data(), want_lse.data(), scale);

          const DeviceKv dkv(f, dt);
          const DeviceBuffer<uint16_t> dq(test::to_half(q, dt));
          const int auto_splits = kernels::cuda::decode_num_splits(batch, sh, 4099, sms);
          for (int splits : {1, auto_splits, 7}) {
            CAPTURE(splits);
            DeviceBuffer<uint16_t> out(q.size());
            DeviceBuffer<float> lse(want_lse.size());
            out.poison();
            lse.poison();
            DeviceBuffer<unsigned char> ws(
                kernels::cuda::decode_workspace_bytes(batch, sh, splits));
            ISIM_CUDA_CHECK(kernels::cuda::launch_decode_attention(
                dkv.view(f, dt), dq.get(), out.get(), lse.get(), scale, splits, ws.get(), ws.size(),
                nullptr));
            ISIM_CUDA_CHECK(cudaDeviceSynchronize());
            check_close(test::to_float(out.download(), dt), want, atol_of(dt), rtol_of(dt));
            check_close(lse.download(), want_lse, 1e-3, 1e-4);
          }
        }
      }
    }
  }
}

TEST_CASE("CUDA multi-token attention matches the CPU reference on ragged causal chunks") {
  std::mt19937_64 rng(77);
  // (kv_len, q_len): the chunk's own tokens are the last q_len of kv_len; one empty chunk.
  const std::vector<std::pair<int64_t, int32_t>> chunks = {{1, 1},     {3, 2},  {7, 7},    {19, 5},
                                                           {733, 100}, {40, 0}, {4099, 19}};
  std::vector<int64_t> lens;
  std::vector<int32_t> qo = {0};
  int32_t max_q = 0;
  for (auto [kv_len, q_len] : chunks) {
    lens.push_back(kv_len);
    qo.push_back(qo.back() + q_len);
    max_q = std::max(max_q, q_len);
  }
  for (Dtype dt : {Dtype::kBF16, Dtype::kF16}) {
    for (int32_t dim : {64, 128}) {
      for (int32_t group : {1, 3, 4, 8}) {
        for (int32_t bt : {8, 16, 32}) {
          CAPTURE(kernels::dtype_name(dt));
          CAPTURE(dim);
          CAPTURE(group);
          CAPTURE(bt);
          const AttentionShape sh{2 * group, 2, dim, bt};
          const auto f = rounded_fixture(sh, lens, dt, rng);
          const int64_t row = int64_t{sh.num_q_heads} * dim;
          auto q = test::random_floats(size_t(qo.back() * row), rng);
          test::round_to(q, dt);
          const float scale = 1.0f / std::sqrt(float(dim));
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
          ISIM_CUDA_CHECK(kernels::cuda::launch_prefill_attention(
              dkv.view(f, dt), dqo.get(), max_q, dq.get(), out.get(), lse.get(), scale, nullptr));
          ISIM_CUDA_CHECK(cudaDeviceSynchronize());
          check_close(test::to_float(out.download(), dt), want, atol_of(dt), rtol_of(dt));
          check_close(lse.download(), want_lse, 1e-3, 1e-4);
        }
      }
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
  CHECK(kernels::cuda::launch_decode_attention(kv, nullptr, nullptr, nullptr, 1.f, 1, nullptr, 0,
                                               nullptr) == cudaErrorInvalidValue);
  CHECK(kernels::cuda::launch_prefill_attention(kv, nullptr, 1, nullptr, nullptr, nullptr, 1.f,
                                                nullptr) == cudaErrorInvalidValue);
  auto kv128 = kv;
  kv128.shape.head_dim = 128;
  kv128.dtype = Dtype::kF32;  // the kernels read 16-bit types only
  CHECK(kernels::cuda::launch_decode_attention(kv128, nullptr, nullptr, nullptr, 1.f, 1, nullptr, 0,
                                               nullptr) == cudaErrorInvalidValue);
  CHECK(cudaGetLastError() == cudaSuccess);
}
