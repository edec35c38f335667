// Compute cells: the peak (a cuBLAS 8192^3 GEMM), then prefill attention (fresh causal chunks
// over paged KV) and the models' dense GEMMs through cuBLAS, each in TFLOP/s against that peak.
// UNVERIFIED: written and compiled without a GPU; it has never run.
#include <cublas_v2.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "kernels/bench/bench.h"
#include "kernels/cuda/attention.h"
#include "kernels/cuda/check.h"
#include "kernels/dtype.h"

namespace isim::kernels::bench {
namespace {

void cublas_check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(fmt::format("{}: cuBLAS status {}", what, static_cast<int>(s)));
}

// C[m x n] = A[m x k] B[k x n], row-major, in `dtype` with float accumulation: the runner's GEMM.
struct Gemm {
  cublasHandle_t handle = nullptr;
  cudaStream_t stream = nullptr;
  Gemm() {
    ISIM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    cublas_check(cublasCreate(&handle), "cublasCreate");
    cublas_check(cublasSetStream(handle, stream), "cublasSetStream");
  }
  ~Gemm() {
    cublasDestroy(handle);
    cudaStreamDestroy(stream);
  }
  Gemm(const Gemm&) = delete;
  Gemm& operator=(const Gemm&) = delete;
  // Median ms of m x k times k x n; a, b, c must hold that many elements of 2 bytes.
  double time(const Options& opt, int64_t m, int64_t n, int64_t k, Dtype dtype, const void* a,
              const void* b, void* c) {
    const cudaDataType_t t = dtype == Dtype::kBF16 ? CUDA_R_16BF : CUDA_R_16F;
    const float one = 1.f, zero = 0.f;
    return median_ms(stream, opt.warmup, opt.reps, [&](int) {
      // Row-major C = A B is column-major C^T = B^T A^T.
      cublas_check(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, int(n), int(m), int(k), &one, b,
                                t, int(n), a, t, int(k), &zero, c, t, int(n), CUBLAS_COMPUTE_32F,
                                CUBLAS_GEMM_DEFAULT),
                   "cublasGemmEx");
    });
  }
};

// A compute cell of `m` in `dtype`, compared with the cuBLAS peak.
Row compute_row(const char* section, const char* path, const ModelShape& m, Dtype dtype,
                const Ceilings& c) {
  Row r;
  r.section = section;
  r.path = path;
  r.model = m.model;
  r.dtype = std::string(dtype_name(dtype));
  r.ceiling = "cublas peak";
  r.ceiling_tflops = c.gemm_tflops;
  return r;
}

double tflops(double flops, double ms) {
  return ms > 0 ? flops / (ms * 1e9) : 0;
}

void peak(const Options& opt, Gemm& g, Ceilings& c, std::vector<Row>& rows) {
  constexpr int64_t n = 8192;
  DeviceMemory a(size_t(n * n * 2)), b(a.size()), out(a.size());
  fill_random_bf16(a.get(), a.size(), 11);
  fill_random_bf16(b.get(), b.size(), 12);
  Row r;
  r.section = "ceiling";
  r.cell = "cuBLAS bf16 GEMM 8192 x 8192 x 8192";
  r.path = "cublasGemmEx";
  r.dtype = "bf16";
  r.median_ms = g.time(opt, n, n, n, Dtype::kBF16, a.get(), b.get(), out.get());
  r.tflops = tflops(2.0 * n * n * n, r.median_ms);
  c.gemm_tflops = r.tflops;
  rows.push_back(r);
}

// Fresh prefills: `batch` sequences of q_len tokens each, whose K/V (already appended) are the
// chunk itself, causal. FLOPs count QK^T and PV over the causal half: 2 x 2 x q_len^2 / 2 x dim.
void prefill_cell(const Options& opt, const Ceilings& c, const ModelShape& m, Dtype dtype,
                  int64_t batch, int64_t q_len, cudaStream_t stream, std::vector<Row>& rows) {
  constexpr int32_t bt = 16;
  const AttentionShape shape{m.q_heads, m.kv_heads, m.head_dim, bt};
  const int64_t pages = (q_len + bt - 1) / bt;
  const int64_t tokens = batch * q_len;
  const size_t plane = size_t(batch * pages * shape.block_elems() * 2);
  DeviceMemory k(plane), v(plane), q(size_t(tokens * m.q_heads * m.head_dim * 2)), out(q.size());
  fill_random_bf16(k.get(), k.size(), 21);
  fill_random_bf16(v.get(), v.size(), 22);
  fill_random_bf16(q.get(), q.size(), 23);
  std::vector<int32_t> indptr(size_t(batch + 1)), qo(size_t(batch + 1)),
      last(size_t(batch), int32_t(q_len - (pages - 1) * bt)), indices(size_t(batch * pages));
  for (int64_t s = 0; s <= batch; ++s) {
    indptr[size_t(s)] = int32_t(s * pages);
    qo[size_t(s)] = int32_t(s * q_len);
  }
  std::iota(indices.begin(), indices.end(), 0);
  DeviceMemory d_indptr(indptr.size() * 4), d_qo(qo.size() * 4), d_last(last.size() * 4),
      d_indices(indices.size() * 4);
  for (auto [dst, src] : {std::pair{&d_indptr, &indptr}, std::pair{&d_qo, &qo},
                          std::pair{&d_last, &last}, std::pair{&d_indices, &indices}})
    ISIM_CUDA_CHECK(cudaMemcpy(dst->get(), src->data(), dst->size(), cudaMemcpyHostToDevice));
  const cuda::DevicePagedKv kv{shape,
                               {static_cast<const int32_t*>(d_indptr.get()),
                                static_cast<const int32_t*>(d_indices.get()),
                                static_cast<const int32_t*>(d_last.get()), int32_t(batch)},
                               k.get(),
                               v.get(),
                               dtype};
  const float scale = 1.0f / std::sqrt(float(m.head_dim));
  Row r = compute_row("prefill", "paged-prefill", m, dtype, c);
  r.batch = batch;
  r.context = q_len;
  r.block_tokens = bt;
  r.cell = fmt::format("{} {} batch {} x q_len {}", m.model, r.dtype, batch, q_len);
  r.median_ms = median_ms(stream, std::max(1, opt.warmup / 2), std::max(3, opt.reps / 2), [&](int) {
    ISIM_CUDA_CHECK(cuda::launch_prefill_attention(kv, static_cast<const int32_t*>(d_qo.get()),
                                                   int32_t(q_len), q.get(), out.get(), nullptr,
                                                   scale, stream));
  });
  r.tflops = tflops(4.0 * batch * m.q_heads * double(q_len) * double(q_len) * m.head_dim / 2,
                    r.median_ms);
  rows.push_back(r);
}

// The four GEMMs of a dense layer on `tokens` rows: qkv, o, gate_up, down.
void gemm_cells(const Options& opt, const Ceilings& c, Gemm& g, const ModelShape& m, Dtype dtype,
                int64_t tokens, std::vector<Row>& rows) {
  const int64_t qd = int64_t{m.q_heads} * m.head_dim, kvd = int64_t{m.kv_heads} * m.head_dim;
  const struct {
    const char* name;
    int64_t n, k;
  } layers[] = {{"qkv", qd + 2 * kvd, m.hidden},
                {"o", m.hidden, qd},
                {"gate_up", 2 * m.ffn, m.hidden},
                {"down", m.hidden, m.ffn}};
  int64_t most = 0;
  for (const auto& l : layers) most = std::max(most, l.n * l.k);
  DeviceMemory a(size_t(tokens * std::max(m.hidden, m.ffn) * 2)), w(size_t(most * 2)),
      out(size_t(tokens * 2 * m.ffn * 2));
  fill_random_bf16(a.get(), a.size(), 31);
  fill_random_bf16(w.get(), w.size(), 32);
  for (const auto& l : layers) {
    Row r = compute_row("gemm", "cublasGemmEx", m, dtype, c);
    r.batch = tokens;
    r.cell = fmt::format("{} {} {} {} x {} x {}", m.model, r.dtype, l.name, tokens, l.n, l.k);
    r.median_ms = g.time(opt, tokens, l.n, l.k, dtype, a.get(), w.get(), out.get());
    r.tflops = tflops(2.0 * tokens * l.n * l.k, r.median_ms);
    rows.push_back(r);
  }
}

}  // namespace

void bench_compute(const Options& opt, const Device&, Ceilings& c, std::vector<Row>& rows) {
  Gemm g;
  peak(opt, g, c, rows);
  const std::vector<std::pair<int64_t, int64_t>> prefills =
      opt.quick ? std::vector<std::pair<int64_t, int64_t>>{{1, 4096}, {4, 2048}}
                : std::vector<std::pair<int64_t, int64_t>>{{1, 2048}, {1, 8192}, {4, 2048},
                                                           {16, 512}};
  for (const ModelShape& m : bench_models()) {
    for (Dtype dtype : {Dtype::kBF16, Dtype::kF16}) {
      if (opt.wants("prefill"))
        for (auto [batch, q_len] : prefills)
          prefill_cell(opt, c, m, dtype, batch, q_len, g.stream, rows);
      if (opt.wants("gemm")) gemm_cells(opt, c, g, m, dtype, opt.quick ? 4096 : 8192, rows);
    }
  }
}

}  // namespace isim::kernels::bench
