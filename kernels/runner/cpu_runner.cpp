// CPU backend of the runner: float32 throughout, Eigen products (row-major activations times
// [in x out] weights), the CPU reference attention and append. Deterministic and batch
// invariant: every token row is computed by the same code in the same order whatever batch it
// is in (products run one row at a time, norms per row, attention per query), so a token's KV
// and logits are bit-identical in a decode step, a prefill chunk or a recompute.
#include <fmt/format.h>
#include <Eigen/Core>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>

#include "kernels/cpu/attention.h"
#include "kernels/cpu/block_copy.h"
#include "kernels/cpu/parallel.h"
#include "kernels/runner/init.h"
#include "kernels/runner/plan.h"
#include "kernels/runner/runner.h"

namespace isim::kernels::runner {
namespace {

using Mat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MatMap = Eigen::Map<Mat, Eigen::Aligned16>;
using Clock = std::chrono::steady_clock;

constexpr float kEps = 1e-5f;
constexpr double kRopeTheta = 10000.0;

Mat random_matrix(uint64_t seed, uint32_t tensor, int64_t rows, int64_t cols, float scale) {
  Mat m(rows, cols);
  float* p = m.data();
  for (int64_t i = 0; i < rows * cols; ++i) p[i] = scale * weight_value(seed, tensor, uint64_t(i));
  return m;
}

// Unit gains, so RMSNorm is x / rms(x); accumulated in double for row-count independence.
template <typename In, typename Out>
void rms_norm(const In& in, Out& out) {
  for (Eigen::Index r = 0; r < in.rows(); ++r) {
    double ss = 0;
    for (Eigen::Index c = 0; c < in.cols(); ++c) ss += double(in(r, c)) * in(r, c);
    const auto inv = static_cast<float>(1.0 / std::sqrt(ss / double(in.cols()) + kEps));
    out.row(r) = in.row(r) * inv;
  }
}

// Rotate-half RoPE on `heads` heads starting at column `col` of each row; inv_freq[i] =
// theta^(-2i / head_dim).
void rope(MatMap& m, Eigen::Index col, int32_t heads, int32_t head_dim,
          const std::vector<int32_t>& positions, const std::vector<double>& inv_freq) {
  const int32_t half = head_dim / 2;
  for (Eigen::Index r = 0; r < m.rows(); ++r) {
    const double pos = positions[size_t(r)];
    for (int32_t i = 0; i < half; ++i) {
      const double angle = pos * inv_freq[size_t(i)];
      const auto c = static_cast<float>(std::cos(angle));
      const auto s = static_cast<float>(std::sin(angle));
      for (int32_t h = 0; h < heads; ++h) {
        float* x = &m(r, col + Eigen::Index{h} * head_dim);
        const float x1 = x[i], x2 = x[i + half];
        x[i] = x1 * c - x2 * s;
        x[i + half] = x1 * s + x2 * c;
      }
    }
  }
}

// Rows at or above this count are split across threads (fixed partition, so the thread count
// never changes a result).
constexpr Eigen::Index kParallelRows = 32;

// out = in * w (or out += in * w), one row at a time: a row-vector product's summation order
// depends only on the shapes, never on how many rows the batch has.
template <bool Accumulate>
void rows_times(const MatMap& in, const Mat& w, MatMap& out, int threads) {
  const auto work = [&](int64_t begin, int64_t end) {
    for (auto r = static_cast<Eigen::Index>(begin); r < end; ++r) {
      if constexpr (Accumulate)
        out.row(r).noalias() += in.row(r) * w;
      else
        out.row(r).noalias() = in.row(r) * w;
    }
  };
  if (in.rows() < kParallelRows)
    work(0, in.rows());
  else
    cpu::parallel_for(in.rows(), threads, work);
}

double us_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

struct LayerWeights {
  Mat qkv, o, gate_up, down;
};

class CpuRunner final : public Runner {
 public:
  explicit CpuRunner(const RunnerConfig& c) : config_(c) {
    check_dims(c.dims);
    const ModelDims& d = c.dims;
    if (c.block_tokens <= 0 || c.num_blocks <= 0)
      throw std::invalid_argument(
          fmt::format("runner: block_tokens = {}, num_blocks = {}: both must be > 0",
                      c.block_tokens, c.num_blocks));
    const int64_t qd = int64_t{d.heads} * d.head_dim, kvd = int64_t{d.kv_heads} * d.head_dim;
    const auto scaled = [](int64_t fan_in) { return static_cast<float>(1.0 / std::sqrt(fan_in)); };
    for (int32_t l = 0; l < d.layers; ++l) {
      const uint32_t base = uint32_t(l) * kPerLayer;
      layers_.push_back(
          {random_matrix(c.seed, base + kQkv, d.hidden, qd + 2 * kvd, scaled(d.hidden)),
           random_matrix(c.seed, base + kO, qd, d.hidden, scaled(qd)),
           random_matrix(c.seed, base + kGateUp, d.hidden, 2 * int64_t{d.ffn}, scaled(d.hidden)),
           random_matrix(c.seed, base + kDown, d.ffn, d.hidden, scaled(d.ffn))});
    }
    embedding_ = random_matrix(c.seed, kEmbedding, d.vocab, d.hidden, 1.0f);
    lm_head_ = random_matrix(c.seed, kLmHead, d.hidden, d.vocab, scaled(d.hidden));
    shape_ = d.attention(c.block_tokens);
    for (int32_t i = 0; i < d.head_dim / 2; ++i)
      inv_freq_.push_back(std::pow(kRopeTheta, -2.0 * i / d.head_dim));
    pool_.assign(size_t(2 * d.layers * c.num_blocks * shape_.block_elems()), 0.0f);
  }

  StepResult step(const std::vector<Step>& batch, const StepOptions& options) override {
    const auto t_call = Clock::now();
    const BatchPlan plan = plan_batch(batch, config_);
    const ModelDims& d = config_.dims;
    const int64_t qd = int64_t{d.heads} * d.head_dim, kvd = int64_t{d.kv_heads} * d.head_dim;
    const auto rows = static_cast<Eigen::Index>(plan.rows);
    const auto nd = static_cast<Eigen::Index>(plan.decode_rows);
    const float sm_scale = static_cast<float>(1.0 / std::sqrt(double(d.head_dim)));
    StepResult result;
    PhaseTimes& times = result.times;
    const auto timed = [&](double& acc, auto&& fn) {
      const auto t0 = Clock::now();
      fn();
      if (options.time_phases) acc += us_since(t0);
    };

    // Activations live in buffers kept across calls: fresh large allocations each step would
    // charge page faults to whichever phase touched them first.
    MatMap x = scratch(kX, rows, d.hidden), h = scratch(kH, rows, d.hidden);
    MatMap qkv = scratch(kQkvOut, rows, qd + 2 * kvd), q = scratch(kQ, rows, qd);
    MatMap k = scratch(kK, rows, kvd), v = scratch(kV, rows, kvd);
    MatMap attn = scratch(kAttn, rows, qd), gu = scratch(kGu, rows, 2 * int64_t{d.ffn});
    MatMap g = scratch(kG, rows, d.ffn);
    for (Eigen::Index r = 0; r < rows; ++r) x.row(r) = embedding_.row(plan.token_ids[size_t(r)]);
    for (int32_t l = 0; l < d.layers; ++l) {
      const LayerWeights& w = layers_[size_t(l)];
      float* k_pool = layer_plane(l, 0);
      float* v_pool = layer_plane(l, 1);
      timed(times.dense_us, [&] {
        rms_norm(x, h);
        rows_times<false>(h, w.qkv, qkv, config_.threads);
        rope(qkv, 0, d.heads, d.head_dim, plan.positions, inv_freq_);
        rope(qkv, qd, d.kv_heads, d.head_dim, plan.positions, inv_freq_);
        q = qkv.leftCols(qd);
        k = qkv.middleCols(qd, kvd);
        v = qkv.rightCols(kvd);
        append(plan.decode, 0, k.data(), v.data(), k_pool, v_pool);
        append(plan.prefill, nd, k.data(), v.data(), k_pool, v_pool);
      });
      if (plan.decode.batch() > 0)
        timed(times.decode_attention_us, [&] {
          cpu::decode_attention(paged(plan.decode, k_pool, v_pool), q.data(), attn.data(), nullptr,
                                sm_scale, config_.threads);
        });
      if (plan.prefill.batch() > 0)
        timed(times.prefill_attention_us, [&] {
          cpu::prefill_attention(paged(plan.prefill, k_pool, v_pool), plan.prefill.qo_indptr.data(),
                                 q.data() + nd * qd, attn.data() + nd * qd, nullptr, sm_scale,
                                 config_.threads);
        });
      timed(times.dense_us, [&] {
        rows_times<true>(attn, w.o, x, config_.threads);
        rms_norm(x, h);
        rows_times<false>(h, w.gate_up, gu, config_.threads);
        for (Eigen::Index r = 0; r < rows; ++r)
          for (Eigen::Index c = 0; c < d.ffn; ++c) {
            const float a = gu(r, c);
            g(r, c) = a / (1.0f + std::exp(-a)) * gu(r, d.ffn + c);
          }
        rows_times<true>(g, w.down, x, config_.threads);
      });
    }
    const auto n = static_cast<Eigen::Index>(plan.logit_rows.size());
    if (n > 0)
      timed(times.lm_head_us, [&] {
        MatMap last = scratch(kLast, n, d.hidden), normed = scratch(kNormed, n, d.hidden);
        MatMap logits = scratch(kLogits, n, d.vocab);
        for (Eigen::Index i = 0; i < n; ++i) last.row(i) = x.row(plan.logit_rows[size_t(i)]);
        rms_norm(last, normed);
        rows_times<false>(normed, lm_head_, logits, config_.threads);
        for (Eigen::Index i = 0; i < n; ++i) {
          const float* row = &logits(i, 0);
          result.tokens.push_back(int32_t(std::max_element(row, row + d.vocab) - row));
        }
        if (options.keep_logits) result.logits.assign(logits.data(), logits.data() + logits.size());
      });
    if (options.time_phases) times.total_us = us_since(t_call);
    return result;
  }

  BlockPool kv_pool() override {
    return {pool_.data(), 2 * int64_t{config_.dims.layers}, config_.num_blocks,
            shape_.block_elems() * int64_t{sizeof(float)}};
  }
  const RunnerConfig& config() const override { return config_; }
  std::string backend() const override { return "cpu"; }

 private:
  float* layer_plane(int32_t layer, int kv) {
    return pool_.data() + (2 * int64_t{layer} + kv) * config_.num_blocks * shape_.block_elems();
  }
  cpu::PagedKv paged(const TableArrays& t, const float* k_pool, const float* v_pool) const {
    return {shape_, t.view(), k_pool, v_pool, config_.num_blocks};
  }
  // Appends the rows [first_row, first_row + t.qo_indptr.back()) of k and v.
  void append(const TableArrays& t, Eigen::Index first_row, const float* k, const float* v,
              float* k_pool, float* v_pool) const {
    if (t.batch() == 0) return;
    const int64_t kvd = int64_t{config_.dims.kv_heads} * config_.dims.head_dim;
    cpu::append_kv(shape_, t.view(), config_.num_blocks, t.qo_indptr.data(), k + first_row * kvd,
                   v + first_row * kvd, k_pool, v_pool);
  }
  enum Buffer { kX, kH, kQkvOut, kQ, kK, kV, kAttn, kGu, kG, kLast, kNormed, kLogits, kBuffers };
  // A rows x cols view of buffer `b`, grown (never shrunk) as needed.
  MatMap scratch(Buffer b, int64_t rows, int64_t cols) {
    std::vector<float>& buf = scratch_[b];
    if (static_cast<int64_t>(buf.size()) < rows * cols)
      buf.resize(static_cast<size_t>(rows * cols));
    return MatMap(buf.data(), rows, cols);
  }

  RunnerConfig config_;
  AttentionShape shape_;
  std::vector<LayerWeights> layers_;
  Mat embedding_, lm_head_;
  std::vector<float> pool_;
  std::vector<double> inv_freq_;
  std::vector<float> scratch_[kBuffers];
};

}  // namespace

std::unique_ptr<Runner> make_cpu_runner(const RunnerConfig& config) {
  return std::make_unique<CpuRunner>(config);
}

}  // namespace isim::kernels::runner
