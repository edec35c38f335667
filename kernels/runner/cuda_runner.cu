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

#include "kernels/cuda/attention.h"
#include "kernels/cuda/check.h"
#include "kernels/runner/cuda_memory.h"
#include "kernels/runner/cuda_runner.h"
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

__device__ __forceinline__ float to_f(__nv_bfloat16 v) {
  return __bfloat162float(v);
}
__device__ __forceinline__ float to_f(__half v) {
  return __half2float(v);
}
template <typename T>
__device__ __forceinline__ T from_f(float v);
template <>
__device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}
template <>
__device__ __forceinline__ __half from_f<__half>(float v) {
  return __float2half_rn(v);
}

constexpr int kThreads = 256;
constexpr float kEps = 1e-5f;

unsigned grid_for(int64_t n) {
  return static_cast<unsigned>((n + kThreads - 1) / kThreads);
}

template <typename T>
__global__ void init_weights(T* w, int64_t n, uint64_t seed, uint32_t tensor, float scale) {
  const int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (i < n) w[i] = from_f<T>(scale * weight_value(seed, tensor, static_cast<uint64_t>(i)));
}

template <typename T>
__global__ void embed(const int32_t* tokens, const T* table, T* x, int32_t hidden) {
  const int64_t r = blockIdx.x;
  for (int32_t c = threadIdx.x; c < hidden; c += blockDim.x)
    x[r * hidden + c] = table[int64_t{tokens[r]} * hidden + c];
}

// One block per row; rows of `in` are picked by `row_ids` when given (lm_head's last tokens).
template <typename T>
__global__ void rms_norm(const T* in, const int32_t* row_ids, T* out, int32_t hidden) {
  __shared__ float partial[kThreads];
  const int64_t src = row_ids ? row_ids[blockIdx.x] : blockIdx.x;
  const T* row = in + src * hidden;
  float ss = 0;
  for (int32_t c = threadIdx.x; c < hidden; c += blockDim.x) ss += to_f(row[c]) * to_f(row[c]);
  partial[threadIdx.x] = ss;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (static_cast<int>(threadIdx.x) < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  const float inv = rsqrtf(partial[0] / hidden + kEps);
  for (int32_t c = threadIdx.x; c < hidden; c += blockDim.x)
    out[int64_t{blockIdx.x} * hidden + c] = from_f<T>(to_f(row[c]) * inv);
}

// Splits a fused QKV row into dense q, k, v and applies rotate-half RoPE to q and k.
template <typename T>
__global__ void rope_split(const T* qkv, const int32_t* positions, T* q, T* k, T* v, int32_t heads,
                           int32_t kv_heads, int32_t head_dim) {
  const int64_t r = blockIdx.x;
  const int32_t half = head_dim / 2;
  const int32_t qd = heads * head_dim, kvd = kv_heads * head_dim;
  const T* row = qkv + r * (qd + 2 * kvd);
  const float pos = static_cast<float>(positions[r]);
  for (int32_t e = threadIdx.x; e < (heads + kv_heads) * half; e += blockDim.x) {
    const int32_t h = e / half, i = e % half;
    const float angle = pos * powf(10000.0f, -2.0f * i / head_dim);
    float s, c;
    sincosf(angle, &s, &c);
    const T* src = row + h * head_dim;  // q heads, then k heads right after them
    T* dst = h < heads ? q + r * qd + h * head_dim : k + r * kvd + (h - heads) * head_dim;
    const float x1 = to_f(src[i]), x2 = to_f(src[i + half]);
    dst[i] = from_f<T>(x1 * c - x2 * s);
    dst[i + half] = from_f<T>(x1 * s + x2 * c);
  }
  for (int32_t e = threadIdx.x; e < kvd; e += blockDim.x) v[r * kvd + e] = row[qd + kvd + e];
}

template <typename T>
__global__ void swiglu(const T* gate_up, T* out, int64_t rows, int32_t ffn) {
  const int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (i >= rows * ffn) return;
  const int64_t r = i / ffn, c = i % ffn;
  const float g = to_f(gate_up[r * 2 * ffn + c]);
  out[i] = from_f<T>(g / (1.0f + __expf(-g)) * to_f(gate_up[r * 2 * ffn + ffn + c]));
}

// One block per row: the lowest index of the largest logit; logits also widened to float.
template <typename T>
__global__ void argmax_rows(const T* logits, int32_t vocab, int32_t* tokens, float* wide) {
  __shared__ float best_v[kThreads];
  __shared__ int32_t best_i[kThreads];
  const T* row = logits + int64_t{blockIdx.x} * vocab;
  float bv = -INFINITY;
  int32_t bi = vocab;
  for (int32_t c = threadIdx.x; c < vocab; c += blockDim.x) {
    const float v = to_f(row[c]);
    if (wide) wide[int64_t{blockIdx.x} * vocab + c] = v;
    if (v > bv || (v == bv && c < bi)) bv = v, bi = c;
  }
  best_v[threadIdx.x] = bv;
  best_i[threadIdx.x] = bi;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (static_cast<int>(threadIdx.x) < s) {
      const float ov = best_v[threadIdx.x + s];
      const int32_t oi = best_i[threadIdx.x + s];
      if (ov > best_v[threadIdx.x] || (ov == best_v[threadIdx.x] && oi < best_i[threadIdx.x]))
        best_v[threadIdx.x] = ov, best_i[threadIdx.x] = oi;
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) tokens[blockIdx.x] = best_i[0];
}

template <typename T>
constexpr cudaDataType_t cublas_type() {
  return std::is_same_v<T, __half> ? CUDA_R_16F : CUDA_R_16BF;
}

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
