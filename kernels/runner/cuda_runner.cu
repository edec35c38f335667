// CUDA backend of the runner: bf16/fp16 storage, cuBLAS GEMMs with float accumulation, the
// kernels/ paged attention and append launchers, small element-wise kernels here, one stream.
// UNVERIFIED: written and compiled without a GPU; it has never run.
// No fmt here: fmt 9's headers do not compile under nvcc's C++20 host pass.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "kernels/runner/cuda_runner.h"
#include "kernels/cuda/attention.h"
#include "kernels/cuda/check.h"
#include "kernels/runner/cuda_memory.h"
#include "kernels/runner/cuda_runner_kernels.cuh"
#include "kernels/runner/init.h"
#include "kernels/runner/plan.h"

#define ISIM_CUBLAS_CHECK(call)                                                         \
  do {                                                                                  \
    const cublasStatus_t isim_cublas_status_ = (call);                                  \
    if (isim_cublas_status_ != CUBLAS_STATUS_SUCCESS)                                   \
      throw std::runtime_error(std::string(__FILE__) + ":" + std::to_string(__LINE__) + \
                               ": " #call ": cuBLAS status " +                          \
                               std::to_string(static_cast<int>(isim_cublas_status_)));  \
  } while (0)

namespace isim::kernels::runner {
namespace {

using cuda::DevicePagedKv;

struct LayerWeights {
  DeviceBuffer qkv, o, gate_up, down;
};

template <typename T>
class CudaRunner final : public Runner {
 public:
  explicit CudaRunner(const RunnerConfig& c)
      : config_(c), shape_(c.dims.attention(c.block_tokens)) {
    check_dims(c.dims);
    const ModelDims& d = c.dims;
    if (!cuda::supported_head_dim(d.head_dim))
      throw std::invalid_argument("cuda runner: head_dim = " + std::to_string(d.head_dim) +
                                  ": must be 64 or 128");
    if (c.block_tokens <= 0 || c.num_blocks <= 0)
      throw std::invalid_argument("cuda runner: block_tokens = " + std::to_string(c.block_tokens) +
                                  ", num_blocks = " + std::to_string(c.num_blocks) +
                                  ": both must be > 0");
    int device = 0;
    ISIM_CUDA_CHECK(cudaGetDevice(&device));
    ISIM_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, device));
    ISIM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    ISIM_CUBLAS_CHECK(cublasCreate(&cublas_));
    ISIM_CUBLAS_CHECK(cublasSetStream(cublas_, stream_));
    const int64_t qd = int64_t{d.heads} * d.head_dim, kvd = int64_t{d.kv_heads} * d.head_dim;
    const auto scaled = [](int64_t fan_in) { return static_cast<float>(1.0 / std::sqrt(fan_in)); };
    for (int32_t l = 0; l < d.layers; ++l) {
      const uint32_t base = static_cast<uint32_t>(l) * kPerLayer;
      LayerWeights w;
      fill(w.qkv, base + kQkv, int64_t{d.hidden} * (qd + 2 * kvd), scaled(d.hidden));
      fill(w.o, base + kO, qd * d.hidden, scaled(qd));
      fill(w.gate_up, base + kGateUp, int64_t{d.hidden} * 2 * d.ffn, scaled(d.hidden));
      fill(w.down, base + kDown, int64_t{d.ffn} * d.hidden, scaled(d.ffn));
      layers_.push_back(std::move(w));
    }
    fill(embedding_, kEmbedding, int64_t{d.vocab} * d.hidden, 1.0f);
    fill(lm_head_, kLmHead, int64_t{d.hidden} * d.vocab, scaled(d.hidden));
    pool_.reserve(2 * d.layers * c.num_blocks * shape_.block_elems() * int64_t{sizeof(T)});
    ISIM_CUDA_CHECK(cudaMemsetAsync(pool_.data(), 0, pool_.bytes(), stream_));
    ISIM_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }
  ~CudaRunner() override {
    for (cudaEvent_t e : events_) cudaEventDestroy(e);
    if (cublas_) cublasDestroy(cublas_);
    if (stream_) cudaStreamDestroy(stream_);
  }

  StepResult step(const std::vector<Step>& batch, const StepOptions& options) override {
    marks_.clear();
    mark(options, -1);  // host planning and the upload count as overhead
    const BatchPlan plan = plan_batch(batch, config_);
    const ModelDims& d = config_.dims;
    const int64_t rows = plan.rows, nd = plan.decode_rows;
    const int64_t qd = int64_t{d.heads} * d.head_dim, kvd = int64_t{d.kv_heads} * d.head_dim;
    const auto n_logits = static_cast<int64_t>(plan.logit_rows.size());
    upload(plan);
    x_.reserve(rows * d.hidden * int64_t{sizeof(T)});
    h_.reserve(rows * d.hidden * int64_t{sizeof(T)});
    qkv_.reserve(rows * (qd + 2 * kvd) * int64_t{sizeof(T)});
    q_.reserve(rows * qd * int64_t{sizeof(T)});
    k_.reserve(rows * kvd * int64_t{sizeof(T)});
    v_.reserve(rows * kvd * int64_t{sizeof(T)});
    attn_.reserve(rows * qd * int64_t{sizeof(T)});
    gu_.reserve(rows * 2 * int64_t{d.ffn} * int64_t{sizeof(T)});
    g_.reserve(rows * int64_t{d.ffn} * int64_t{sizeof(T)});
    T* x = x_.as<T>();
    T* h = h_.as<T>();
    embed<T><<<static_cast<unsigned>(rows), kThreads, 0, stream_>>>(
        ids(kTokens), embedding_.as<T>(), x, d.hidden);
    ISIM_CUDA_CHECK(cudaGetLastError());  // a bad launch fails here, not later
    mark(options, kOther);
    const float sm_scale = static_cast<float>(1.0 / std::sqrt(double(d.head_dim)));
    DecodeChunkPlan chunks;
    if (plan.decode.batch() > 0) {
      chunks = cuda::decode_plan(shape_, plan.decode.indptr.data(), plan.decode.batch(), sm_count_);
      workspace_.reserve(static_cast<int64_t>(cuda::decode_workspace_bytes(shape_, chunks)));
    }
    for (int32_t l = 0; l < d.layers; ++l) {
      const LayerWeights& w = layers_[static_cast<size_t>(l)];
      T* k_pool = plane(l, 0);
      T* v_pool = plane(l, 1);
      rms_norm<T><<<static_cast<unsigned>(rows), kThreads, 0, stream_>>>(x, nullptr, h, d.hidden);
    ISIM_CUDA_CHECK(cudaGetLastError());
      gemm(h, w.qkv.as<T>(), qkv_.as<T>(), rows, d.hidden, qd + 2 * kvd, 0.0f);
      rope_split<T><<<static_cast<unsigned>(rows), kThreads, 0, stream_>>>(
          qkv_.as<T>(), ids(kPositions), q_.as<T>(), k_.as<T>(), v_.as<T>(), d.heads, d.kv_heads,
          d.head_dim);
      ISIM_CUDA_CHECK(cudaGetLastError());
      append(plan.decode, kDecode, 0, k_pool, v_pool);
      append(plan.prefill, kPrefill, nd, k_pool, v_pool);
      mark(options, kDense);
      if (plan.decode.batch() > 0) {
        ISIM_CUDA_CHECK(cuda::launch_decode_attention(
            paged(kDecode, plan.decode.batch(), k_pool, v_pool), q_.as<T>(), attn_.as<T>(), nullptr,
            sm_scale, chunks, workspace_.data(), static_cast<size_t>(workspace_.bytes()), stream_));
        mark(options, kDecodeAttention);
      }
      if (plan.prefill.batch() > 0) {
        ISIM_CUDA_CHECK(cuda::launch_prefill_attention(
            paged(kPrefill, plan.prefill.batch(), k_pool, v_pool), ids(kPrefill + kQo),
            plan.prefill.max_q_len, q_.as<T>() + nd * qd, attn_.as<T>() + nd * qd, nullptr,
            sm_scale, stream_));
        mark(options, kPrefillAttention);
      }
      gemm(attn_.as<T>(), w.o.as<T>(), x, rows, qd, d.hidden, 1.0f);
      rms_norm<T><<<static_cast<unsigned>(rows), kThreads, 0, stream_>>>(x, nullptr, h, d.hidden);
      ISIM_CUDA_CHECK(cudaGetLastError());
      gemm(h, w.gate_up.as<T>(), gu_.as<T>(), rows, d.hidden, 2 * int64_t{d.ffn}, 0.0f);
      swiglu<T>
          <<<grid_for(rows * d.ffn), kThreads, 0, stream_>>>(gu_.as<T>(), g_.as<T>(), rows, d.ffn);
      ISIM_CUDA_CHECK(cudaGetLastError());
      gemm(g_.as<T>(), w.down.as<T>(), x, rows, d.ffn, d.hidden, 1.0f);
      mark(options, kDense);
    }
    StepResult result;
    if (n_logits > 0) {
      logits_.reserve(n_logits * d.vocab * int64_t{sizeof(T)});
      wide_.reserve(options.keep_logits ? n_logits * d.vocab * int64_t{sizeof(float)} : 0);
      tokens_.reserve(n_logits * int64_t{sizeof(int32_t)});
      rms_norm<T><<<static_cast<unsigned>(n_logits), kThreads, 0, stream_>>>(x, ids(kLogitRows), h,
                                                                             d.hidden);
      ISIM_CUDA_CHECK(cudaGetLastError());
      gemm(h, lm_head_.as<T>(), logits_.as<T>(), n_logits, d.hidden, d.vocab, 0.0f);
      argmax_rows<T><<<static_cast<unsigned>(n_logits), kThreads, 0, stream_>>>(
          logits_.as<T>(), d.vocab, tokens_.as<int32_t>(),
          options.keep_logits ? wide_.as<float>() : nullptr);
      ISIM_CUDA_CHECK(cudaGetLastError());
      mark(options, kLmHead);
      result.tokens.resize(static_cast<size_t>(n_logits));
      ISIM_CUDA_CHECK(cudaMemcpyAsync(result.tokens.data(), tokens_.data(),
                                      result.tokens.size() * sizeof(int32_t),
                                      cudaMemcpyDeviceToHost, stream_));
      if (options.keep_logits) {
        result.logits.resize(static_cast<size_t>(n_logits * d.vocab));
        ISIM_CUDA_CHECK(cudaMemcpyAsync(result.logits.data(), wide_.data(),
                                        result.logits.size() * sizeof(float),
                                        cudaMemcpyDeviceToHost, stream_));
      }
    }
    mark(options, kOther);
    ISIM_CUDA_CHECK(cudaStreamSynchronize(stream_));
    if (options.time_phases) result.times = collect();
    return result;
  }

  BlockPool kv_pool() override {
    return {pool_.data(), 2 * int64_t{config_.dims.layers}, config_.num_blocks,
            shape_.block_elems() * int64_t{sizeof(T)}};
  }
  const RunnerConfig& config() const override { return config_; }
  std::string backend() const override { return "cuda"; }

 private:
  // Offsets of the page-table arrays in the one uploaded int32 buffer.
  static constexpr int kTokens = 0, kPositions = 1, kLogitRows = 2, kDecode = 3, kPrefill = 7;
  static constexpr int kIndptr = 0, kIndices = 1, kLast = 2, kQo = 3;  // within a group
  enum Phase { kDense, kDecodeAttention, kPrefillAttention, kLmHead, kOther };

  void fill(DeviceBuffer& b, uint32_t tensor, int64_t n, float scale) {
    b.reserve(n * int64_t{sizeof(T)});
    init_weights<T>
        <<<grid_for(n), kThreads, 0, stream_>>>(b.as<T>(), n, config_.seed, tensor, scale);
    ISIM_CUDA_CHECK(cudaGetLastError());
  }

  void gemm(const T* a, const T* w, T* c, int64_t rows, int64_t in, int64_t out, float beta) {
    // Row-major c[rows][out] = a[rows][in] * w[in][out] is column-major c^T = w^T a^T.
    const float alpha = 1.0f;
    ISIM_CUBLAS_CHECK(cublasGemmEx(cublas_, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(out),
                                   static_cast<int>(rows), static_cast<int>(in), &alpha, w,
                                   cublas_type<T>(), static_cast<int>(out), a, cublas_type<T>(),
                                   static_cast<int>(in), &beta, c, cublas_type<T>(),
                                   static_cast<int>(out), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }

  void upload(const BatchPlan& plan) {
    std::vector<int32_t> logit_rows(plan.logit_rows.begin(), plan.logit_rows.end());
    const std::vector<int32_t>* parts[] = {&plan.token_ids,
                                           &plan.positions,
                                           &logit_rows,
                                           &plan.decode.indptr,
                                           &plan.decode.indices,
                                           &plan.decode.last_page_len,
                                           &plan.decode.qo_indptr,
                                           &plan.prefill.indptr,
                                           &plan.prefill.indices,
                                           &plan.prefill.last_page_len,
                                           &plan.prefill.qo_indptr};
    int64_t total = 0;
    for (size_t i = 0; i < std::size(parts); ++i) {
      offsets_[i] = total;
      total += (static_cast<int64_t>(parts[i]->size()) + 3) / 4 * 4;  // 16-byte aligned parts
    }
    staging_.reserve(total * int64_t{sizeof(int32_t)});
    table_.reserve(total * int64_t{sizeof(int32_t)});
    for (size_t i = 0; i < std::size(parts); ++i)
      std::copy(parts[i]->begin(), parts[i]->end(), staging_.as<int32_t>() + offsets_[i]);
    ISIM_CUDA_CHECK(cudaMemcpyAsync(table_.data(), staging_.data(),
                                    static_cast<size_t>(total) * sizeof(int32_t),
                                    cudaMemcpyHostToDevice, stream_));
  }
  int32_t* ids(int slot) { return table_.as<int32_t>() + offsets_[static_cast<size_t>(slot)]; }

  DevicePagedKv paged(int group, int32_t batch, T* k_pool, T* v_pool) {
    return {shape_,
            PageTable{ids(group + kIndptr), ids(group + kIndices), ids(group + kLast), batch},
            k_pool, v_pool, config_.dims.dtype};
  }
  void append(const TableArrays& t, int group, int64_t first_row, T* k_pool, T* v_pool) {
    if (t.batch() == 0) return;
    const int64_t kvd = int64_t{config_.dims.kv_heads} * config_.dims.head_dim;
    const PageTable table{ids(group + kIndptr), ids(group + kIndices), ids(group + kLast),
                          t.batch()};
    ISIM_CUDA_CHECK(cuda::launch_append_kv(
        shape_, table, ids(group + kQo), t.qo_indptr.back(), k_.as<T>() + first_row * kvd,
        v_.as<T>() + first_row * kvd, k_pool, v_pool, config_.dims.dtype, stream_));
  }
  T* plane(int32_t layer, int kv) {
    return pool_.as<T>() + (2 * int64_t{layer} + kv) * config_.num_blocks * shape_.block_elems();
  }

  // Phase marks: an event after each phase; the time since the previous mark is charged to it.
  void mark(const StepOptions& options, int phase) {
    if (!options.time_phases) return;
    if (marks_.size() >= events_.size()) {
      cudaEvent_t e;
      ISIM_CUDA_CHECK(cudaEventCreate(&e));
      events_.push_back(e);
    }
    ISIM_CUDA_CHECK(cudaEventRecord(events_[marks_.size()], stream_));
    marks_.push_back(phase);
  }
  PhaseTimes collect() {
    PhaseTimes t;
    for (size_t i = 1; i < marks_.size(); ++i) {
      float ms = 0;
      ISIM_CUDA_CHECK(cudaEventElapsedTime(&ms, events_[i - 1], events_[i]));
      const double us = 1e3 * ms;
      switch (marks_[i]) {
        case kDense:
          t.dense_us += us;
          break;
        case kDecodeAttention:
          t.decode_attention_us += us;
          break;
        case kPrefillAttention:
          t.prefill_attention_us += us;
          break;
        case kLmHead:
          t.lm_head_us += us;
          break;
        default:
          break;
      }
      t.total_us += us;
    }
    return t;
  }

  RunnerConfig config_;
  AttentionShape shape_;
  int sm_count_ = 0;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  std::vector<LayerWeights> layers_;
  DeviceBuffer embedding_, lm_head_, pool_;
  DeviceBuffer x_, h_, qkv_, q_, k_, v_, attn_, gu_, g_, logits_, wide_, tokens_, workspace_;
  DeviceBuffer table_;
  PinnedBuffer staging_;
  int64_t offsets_[11] = {};
  std::vector<cudaEvent_t> events_;
  std::vector<int> marks_;
};

}  // namespace

CudaDeviceInfo cuda_device_info() {
  CudaDeviceInfo info;
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    info.why =
        std::string("cudaGetDeviceCount: ") + cudaGetErrorName(e) + ": " + cudaGetErrorString(e);
    cudaGetLastError();
    return info;
  }
  if (count == 0) {
    info.why = "no CUDA device";
    return info;
  }
  int device = 0, version = 0;
  cudaDeviceProp prop{};
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
    info.why = "cudaGetDeviceProperties failed";
    return info;
  }
  info.available = true;
  info.name = prop.name;
  info.sm_count = prop.multiProcessorCount;
  info.memory_gib = static_cast<double>(prop.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0);
  if (cudaDriverGetVersion(&version) == cudaSuccess)
    info.driver = std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
  if (cudaRuntimeGetVersion(&version) == cudaSuccess)
    info.runtime = std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
  int sm_khz = 0, mem_khz = 0;
  if (cudaDeviceGetAttribute(&sm_khz, cudaDevAttrClockRate, device) == cudaSuccess &&
      cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, device) == cudaSuccess)
    info.clocks = "sm peak " + std::to_string(sm_khz / 1000) + " MHz, memory peak " +
                  std::to_string(mem_khz / 1000) + " MHz";
  cudaGetLastError();
  return info;
}

std::unique_ptr<Runner> make_cuda_runner(const RunnerConfig& config) {
  switch (config.dims.dtype) {
    case Dtype::kBF16:
      return std::make_unique<CudaRunner<__nv_bfloat16>>(config);
    case Dtype::kF16:
      return std::make_unique<CudaRunner<__half>>(config);
    default:
      throw std::invalid_argument("cuda runner: dtype " +
                                  std::string(dtype_name(config.dims.dtype)) +
                                  ": must be bf16 or f16");
  }
}

}  // namespace isim::kernels::runner
