// Block copies round-trip byte-identical; append writes exactly the new tokens' slots.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <stdexcept>
#include <vector>

#include "kernels/cpu/attention.h"
#include "kernels/cpu/block_copy.h"
#include "tests/kernels/dense_attention.h"
#include "tests/kernels/paged_fixture.h"

using namespace isim;
using kernels::BlockPool;

namespace {

std::vector<unsigned char> random_bytes(size_t n, std::mt19937_64& rng) {
  std::vector<unsigned char> v(n);
  for (auto& b : v) b = static_cast<unsigned char>(rng());
  return v;
}

const unsigned char* block_at(const std::vector<unsigned char>& pool, const BlockPool& p,
                              int64_t plane, int64_t id) {
  return pool.data() + plane * p.plane_stride() + id * p.block_bytes;
}

}  // namespace

TEST_CASE("gather to staging then scatter into another pool round-trips byte-identical") {
  std::mt19937_64 rng(42);
  // 3 layers (6 planes), 37 blocks of 7 bytes: odd sizes on purpose.
  for (int64_t block_bytes : {7, 64, 4096}) {
    CAPTURE(block_bytes);
    auto gpu = random_bytes(size_t(6 * 37 * block_bytes), rng);
    auto cpu = random_bytes(size_t(6 * 50 * block_bytes), rng);
    const auto cpu_before = cpu;
    const BlockPool gp{gpu.data(), 6, 37, block_bytes}, cp{cpu.data(), 6, 50, block_bytes};
    std::vector<int32_t> from(37), to(50);
    std::iota(from.begin(), from.end(), 0);
    std::iota(to.begin(), to.end(), 0);
    std::shuffle(from.begin(), from.end(), rng);
    std::shuffle(to.begin(), to.end(), rng);
    const int64_t n = 19;
    std::vector<unsigned char> staging(size_t(6 * n * block_bytes));
    kernels::cpu::copy_blocks(kernels::gather_blocks(gp, from.data(), n, staging.data()));
    kernels::cpu::copy_blocks(kernels::scatter_blocks(staging.data(), n, cp, to.data()));
    std::vector<bool> written(50, false);
    for (int64_t i = 0; i < n; ++i) {
      written[size_t(to[size_t(i)])] = true;
      for (int64_t p = 0; p < 6; ++p) {
        CHECK(std::memcmp(block_at(cpu, cp, p, to[size_t(i)]),
                          block_at(gpu, gp, p, from[size_t(i)]), size_t(block_bytes)) == 0);
        CHECK(std::memcmp(staging.data() + (p * n + i) * block_bytes,
                          block_at(gpu, gp, p, from[size_t(i)]), size_t(block_bytes)) == 0);
      }
    }
    for (int64_t b = 0; b < 50; ++b) {
      if (written[size_t(b)]) continue;
      for (int64_t p = 0; p < 6; ++p)
        CHECK(std::memcmp(block_at(cpu, cp, p, b), block_at(cpu_before, cp, p, b),
                          size_t(block_bytes)) == 0);
    }
    // And back: the round trip restores the source blocks exactly.
    std::vector<unsigned char> back(gpu.size(), 0);
    const BlockPool bp{back.data(), 6, 37, block_bytes};
    kernels::cpu::copy_blocks(kernels::pool_to_pool(cp, to.data(), bp, from.data(), n));
    for (int64_t i = 0; i < n; ++i)
      for (int64_t p = 0; p < 6; ++p)
        CHECK(std::memcmp(block_at(back, bp, p, from[size_t(i)]),
                          block_at(gpu, gp, p, from[size_t(i)]), size_t(block_bytes)) == 0);
  }
}

TEST_CASE("copy_blocks rejects bad descriptors") {
  CHECK_THROWS_AS(kernels::cpu::copy_blocks({.count = -1, .block_bytes = 4}),
                  std::invalid_argument);
  CHECK_THROWS_WITH_AS(kernels::cpu::copy_blocks({.count = 1, .block_bytes = 4}),
                       "copy_blocks: src and dst must be set", std::invalid_argument);
  kernels::cpu::copy_blocks({.count = 0, .block_bytes = 4});  // nothing to do is fine
}

TEST_CASE("append_kv writes new tokens into their paged slots, then attention sees them") {
  std::mt19937_64 rng(8);
  const kernels::AttentionShape sh{4, 2, 8, 16};
  // Three sequences after appending chunks of 5, 0 and 17 tokens.
  const std::vector<int64_t> lens = {21, 16, 40};
  const std::vector<int32_t> append_indptr = {0, 5, 5, 22};
  auto f = test::make_paged(sh, lens, rng);
  const int64_t row = int64_t{sh.num_kv_heads} * sh.head_dim;
  const auto k_new = test::random_floats(size_t(22 * row), rng);
  const auto v_new = test::random_floats(k_new.size(), rng);
  const auto k_before = f.k_pool;
  kernels::cpu::append_kv(sh, f.table(), f.num_blocks, append_indptr.data(), k_new.data(),
                          v_new.data(), f.k_pool.data(), f.v_pool.data());
  // Expected dense K/V: the appended rows replace the last n rows of each sequence.
  int64_t changed = 0;
  for (size_t s = 0; s < lens.size(); ++s) {
    const int64_t n = append_indptr[s + 1] - append_indptr[s];
    std::copy_n(k_new.begin() + append_indptr[s] * row, n * row,
                f.k_dense[s].begin() + (lens[s] - n) * row);
    std::copy_n(v_new.begin() + append_indptr[s] * row, n * row,
                f.v_dense[s].begin() + (lens[s] - n) * row);
  }
  for (size_t i = 0; i < f.k_pool.size(); ++i) changed += f.k_pool[i] != k_before[i];
  CHECK(changed == 22 * row);  // exactly the appended elements (random floats never collide)
  const int64_t qrow = int64_t{sh.num_q_heads} * sh.head_dim;
  const auto q = test::random_floats(size_t(3 * qrow), rng);
  std::vector<float> out(q.size());
  kernels::cpu::decode_attention(f.kv(), q.data(), out.data(), nullptr, 0.35f);
  for (size_t s = 0; s < lens.size(); ++s) {
    std::vector<float> want(static_cast<size_t>(qrow));
    test::dense_attention(sh.num_q_heads, sh.num_kv_heads, sh.head_dim, 1, lens[s],
                          q.data() + int64_t(s) * qrow, f.k_dense[s].data(), f.v_dense[s].data(),
                          0.35, want.data(), nullptr);
    CHECK(test::excess_error(out.data() + int64_t(s) * qrow, want.data(), want.size(), 1e-6,
                             1e-5) <= 0);
  }
}
