// The paged CPU reference against naive dense attention on contiguous copies of the same K/V.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

#include "kernels/cpu/attention.h"
#include "tests/kernels/dense_attention.h"
#include "tests/kernels/paged_fixture.h"

using namespace isim;
using kernels::AttentionShape;

namespace {

constexpr double kAtol = 1e-6;
constexpr double kRtol = 1e-5;
const std::vector<int64_t> kContexts = {1, 3, 7, 19, 733, 4099};

// Ragged chunks: (kv_len, q_len) per sequence, q_len <= kv_len, one empty chunk.
const std::vector<std::pair<int64_t, int64_t>> kChunks = {{1, 1},    {3, 2},  {7, 7},    {19, 5},
                                                          {733, 64}, {40, 0}, {4099, 19}};

double scale_of(const AttentionShape& s) {
  return 1.0 / std::sqrt(double(s.head_dim));
}

// Runs decode on a fixture and compares every sequence with dense attention.
void check_decode(const test::PagedFixture& f, std::mt19937_64& rng) {
  const AttentionShape& sh = f.shape;
  const auto batch = static_cast<int64_t>(f.kv_lens.size());
  const int64_t row = int64_t{sh.num_q_heads} * sh.head_dim;
  const auto q = test::random_floats(static_cast<size_t>(batch * row), rng);
  std::vector<float> out(q.size(), NAN), lse(static_cast<size_t>(batch * sh.num_q_heads), NAN);
  kernels::cpu::decode_attention(f.kv(), q.data(), out.data(), lse.data(),
                                 static_cast<float>(scale_of(sh)));
  for (int64_t s = 0; s < batch; ++s) {
    std::vector<float> want(static_cast<size_t>(row)),
        want_lse(static_cast<size_t>(sh.num_q_heads));
    test::dense_attention(sh.num_q_heads, sh.num_kv_heads, sh.head_dim, 1, f.kv_lens[size_t(s)],
                          q.data() + s * row, f.k_dense[size_t(s)].data(),
                          f.v_dense[size_t(s)].data(), scale_of(sh), want.data(), want_lse.data());
    CHECK(test::excess_error(out.data() + s * row, want.data(), want.size(), kAtol, kRtol) <= 0);
    CHECK(test::excess_error(lse.data() + s * sh.num_q_heads, want_lse.data(), want_lse.size(),
                             kAtol, kRtol) <= 0);
  }
}

}  // namespace

TEST_CASE("decode attention on a hand-computed case") {
  // One head, head_dim 2, block_tokens 2: both tokens in block 1 of a two-block pool. Scores 0 and
  // ln 3, so the weights are 1/4 and 3/4: out = (4, 0)/4 + (0, 8)*3/4 = (1, 6), lse = ln 4.
  const AttentionShape sh{1, 1, 2, 2};
  std::vector<float> k(8, 99.f), v(8, 99.f);
  const float ln3 = std::log(3.0f);
  k[4] = 0, k[5] = 0, k[6] = ln3, k[7] = 0;
  v[4] = 4, v[5] = 0, v[6] = 0, v[7] = 8;
  const int32_t indptr[] = {0, 1}, indices[] = {1}, last[] = {2};
  const kernels::cpu::PagedKv kv{sh, {indptr, indices, last, 1}, k.data(), v.data(), 2};
  const float q[] = {1, 0};
  float out[2], lse;
  kernels::cpu::decode_attention(kv, q, out, &lse, 1.0f);
  CHECK(out[0] == doctest::Approx(1.0).epsilon(1e-6));
  CHECK(out[1] == doctest::Approx(6.0).epsilon(1e-6));
  CHECK(lse == doctest::Approx(std::log(4.0)).epsilon(1e-6));
}

TEST_CASE("paged decode matches dense attention: contexts x block sizes x GQA ratios") {
  std::mt19937_64 rng(20240401);
  for (int32_t bt : {8, 16, 32}) {
    for (int32_t group : {1, 4, 8}) {
      CAPTURE(bt);
      CAPTURE(group);
      const AttentionShape sh{2 * group, 2, 16, bt};
      check_decode(test::make_paged(sh, kContexts, rng), rng);
    }
  }
}

TEST_CASE("paged decode handles odd head_dim and a single kv head") {
  std::mt19937_64 rng(7);
  check_decode(test::make_paged(AttentionShape{3, 1, 5, 8}, {1, 9, 17}, rng), rng);
}

TEST_CASE("paged multi-token attention matches dense causal attention on ragged chunks") {
  std::mt19937_64 rng(31337);
  for (int32_t bt : {8, 16, 32}) {
    for (int32_t group : {1, 4, 8}) {
      CAPTURE(bt);
      CAPTURE(group);
      const AttentionShape sh{2 * group, 2, 8, bt};
      std::vector<int64_t> lens;
      std::vector<int32_t> qo_indptr = {0};
      for (auto [kv_len, q_len] : kChunks) {
        lens.push_back(kv_len);
        qo_indptr.push_back(qo_indptr.back() + static_cast<int32_t>(q_len));
      }
      const auto f = test::make_paged(sh, lens, rng);
      const int64_t row = int64_t{sh.num_q_heads} * sh.head_dim;
      const auto q = test::random_floats(static_cast<size_t>(qo_indptr.back() * row), rng);
      std::vector<float> out(q.size(), NAN),
          lse(size_t(qo_indptr.back()) * size_t(sh.num_q_heads), NAN);
      kernels::cpu::prefill_attention(f.kv(), qo_indptr.data(), q.data(), out.data(), lse.data(),
                                      static_cast<float>(scale_of(sh)));
      for (size_t s = 0; s < lens.size(); ++s) {
        const int64_t q_len = qo_indptr[s + 1] - qo_indptr[s];
        std::vector<float> want(size_t(q_len * row)), want_lse(size_t(q_len * sh.num_q_heads));
        test::dense_attention(sh.num_q_heads, sh.num_kv_heads, sh.head_dim, q_len, lens[s],
                              q.data() + qo_indptr[s] * row, f.k_dense[s].data(),
                              f.v_dense[s].data(), scale_of(sh), want.data(), want_lse.data());
        CAPTURE(s);
        CHECK(test::excess_error(out.data() + qo_indptr[s] * row, want.data(), want.size(), kAtol,
                                 kRtol) <= 0);
        CHECK(test::excess_error(lse.data() + qo_indptr[s] * sh.num_q_heads, want_lse.data(),
                                 want_lse.size(), kAtol, kRtol) <= 0);
      }
    }
  }
}

TEST_CASE("chunked recompute gives the same outputs as one whole-prompt pass") {
  // A 300-token prompt computed at once, and as chunks of 100, 37 and 163 over a growing cache:
  // each query sees the same prefix, so the outputs are bit-identical.
  std::mt19937_64 rng(99);
  const AttentionShape sh{8, 2, 16, 16};
  const auto f = test::make_paged(sh, {300}, rng);
  const int64_t row = int64_t{sh.num_q_heads} * sh.head_dim;
  const auto q = test::random_floats(size_t(300 * row), rng);
  const float scale = static_cast<float>(scale_of(sh));
  std::vector<float> whole(q.size()), chunked(q.size());
  const int32_t qo_all[] = {0, 300};
  kernels::cpu::prefill_attention(f.kv(), qo_all, q.data(), whole.data(), nullptr, scale);
  int32_t done = 0;
  for (int32_t chunk : {100, 37, 163}) {
    const int32_t end = done + chunk;
    const int32_t blocks = (end + sh.block_tokens - 1) / sh.block_tokens;
    const int32_t indptr[] = {0, blocks}, last[] = {end - (blocks - 1) * sh.block_tokens};
    const kernels::cpu::PagedKv kv{
        sh, {indptr, f.indices.data(), last, 1}, f.k_pool.data(), f.v_pool.data(), f.num_blocks};
    const int32_t qo[] = {0, chunk};
    kernels::cpu::prefill_attention(kv, qo, q.data() + done * row, chunked.data() + done * row,
                                    nullptr, scale);
    done = end;
  }
  CHECK(std::memcmp(whole.data(), chunked.data(), whole.size() * sizeof(float)) == 0);
}

TEST_CASE("results are bit-identical for any thread count, and prefill with q_len 1 is decode") {
  std::mt19937_64 rng(5);
  const AttentionShape sh{8, 2, 32, 16};
  const std::vector<int64_t> lens = {5, 700, 33, 1, 260, 129, 64};
  const auto f = test::make_paged(sh, lens, rng);
  const int64_t row = int64_t{sh.num_q_heads} * sh.head_dim;
  const auto q = test::random_floats(lens.size() * size_t(row), rng);
  std::vector<int32_t> qo(lens.size() + 1);
  for (size_t i = 0; i < qo.size(); ++i) qo[i] = static_cast<int32_t>(i);
  std::vector<float> first;
  for (int threads : {1, 2, 3, 0}) {
    std::vector<float> dec(q.size()), pre(q.size());
    kernels::cpu::decode_attention(f.kv(), q.data(), dec.data(), nullptr, 0.2f, threads);
    kernels::cpu::prefill_attention(f.kv(), qo.data(), q.data(), pre.data(), nullptr, 0.2f,
                                    threads);
    CAPTURE(threads);
    CHECK(std::memcmp(dec.data(), pre.data(), dec.size() * sizeof(float)) == 0);
    if (first.empty()) first = dec;
    CHECK(std::memcmp(first.data(), dec.data(), dec.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("bad shapes and page tables are rejected with the field named") {
  std::mt19937_64 rng(1);
  const AttentionShape sh{4, 2, 8, 8};
  auto f = test::make_paged(sh, {10, 3}, rng);
  std::vector<float> q(2 * 4 * 8), out(q.size());
  auto decode = [&](const kernels::cpu::PagedKv& kv) {
    kernels::cpu::decode_attention(kv, q.data(), out.data(), nullptr, 1.f);
  };
  auto kv = f.kv();
  kv.shape.num_q_heads = 3;
  CHECK_THROWS_WITH_AS(
      decode(kv), "decode_attention: num_q_heads = 3: must be a multiple of num_kv_heads = 2 (GQA)",
      std::invalid_argument);
  f.last_page_len[1] = 9;
  CHECK_THROWS_WITH_AS(decode(f.kv()), "decode_attention: last_page_len[1] = 9: must be in 1..8",
                       std::invalid_argument);
  f.last_page_len[1] = 3;
  f.indices[0] = static_cast<int32_t>(f.num_blocks);
  CHECK_THROWS_WITH_AS(decode(f.kv()),
                       doctest::Contains("indices[0] = 8: block id out of range 0..7"),
                       std::invalid_argument);
  f.indices[0] = 0;
  const int32_t qo[] = {0, 2, 6};  // the second sequence holds 3 tokens, not 4
  CHECK_THROWS_WITH_AS(
      kernels::cpu::prefill_attention(f.kv(), qo, q.data(), out.data(), nullptr, 1.f),
      "prefill_attention: qo_indptr[1..2] = 2..6: q_len 4 must be in 0..kv_len = 3",
      std::invalid_argument);
}
