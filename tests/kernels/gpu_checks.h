// Shared by the GPU attention suites (test_gpu_attention.cpp, test_gpu_prefill.cpp): the
// tolerances per dtype, a fixture's paged KV on the device, and the closeness check.
// bf16 keeps 8 mantissa bits (relative step 2^-8), fp16 keeps 11; outputs are rounded once.
#pragma once

#include <doctest/doctest.h>

#include <random>
#include <vector>

#include "kernels/cuda/attention.h"
#include "tests/kernels/gpu_buffers.h"
#include "tests/kernels/paged_fixture.h"

namespace isim::test {

inline double atol_of(kernels::Dtype t) {
  return t == kernels::Dtype::kBF16 ? 4e-3 : 1e-3;
}
inline double rtol_of(kernels::Dtype t) {
  return t == kernels::Dtype::kBF16 ? 1e-2 : 2e-3;
}

// The fixture's pools and page table on the device, the pools rounded to `dt`.
struct DeviceKv {
  DeviceBuffer<uint16_t> k, v;
  DeviceBuffer<int32_t> indptr, indices, last;
  DeviceKv(const PagedFixture& f, kernels::Dtype dt)
      : k(to_half(f.k_pool, dt)),
        v(to_half(f.v_pool, dt)),
        indptr(f.indptr),
        indices(f.indices),
        last(f.last_page_len) {}
  kernels::cuda::DevicePagedKv view(const PagedFixture& f, kernels::Dtype dt) const {
    return {f.shape,
            {indptr.get(), indices.get(), last.get(), static_cast<int32_t>(f.kv_lens.size())},
            k.get(),
            v.get(),
            dt};
  }
};

inline void check_close(const std::vector<float>& got, const std::vector<float>& want, double atol,
                        double rtol) {
  REQUIRE(got.size() == want.size());
  const double excess = excess_error(got.data(), want.data(), got.size(), atol, rtol);
  CHECK_MESSAGE(excess <= 0, "worst error exceeds atol + rtol|ref| by " << excess);
}

}  // namespace isim::test
