// Analytic (roofline) profiles: a `tables` profile computed from a GPU spec sheet and a model
// shape, for GPUs nobody here owns; and fitting the roofline's efficiency factors from a measured
// profile of another GPU. calibrate/crosscheck.h compares the roofline with measured tables.
//
// GPU spec format (calibrate/gpus/*.yaml; unknown keys are errors; every value carries the
// source it was read from):
//   name: H200-SXM-141GB
//   bf16_dense_tflops: {value: 989, source: "..."}   # dense (no sparsity) bf16/fp16 tensor core
//   hbm_gbps:          {value: 4800, source: "..."}  # memory bandwidth, GB/s (1e9 bytes/s)
//   memory_gib:        {value: 141, source: "..."}
//   pcie_gen:          {value: 5, source: "..."}
//   pcie_gbps:         {value: 64, source: "..."}    # host link, GB/s each way
// Optional:
//   nvlink_gbps:        {value: 450, source: "..."}  # GPU-to-GPU, GB/s each way
//   fp8_dense_tflops:   {value: 1979, source: "..."} # dense FP8 tensor core (needed by fp8
//   weights) network_gbps:       {value: 50, source: "..."}   # scale-out NIC per GPU, GB/s each
//   way nvlink_domain_gpus: {value: 8, source: "..."}    # GPUs one NVLink domain joins (needs
//   nvlink)
// Bad input: InputError("FILE:LINE: key: reason").
//
// Roofline, per decoder layer on one GPU (tp = the model's tp), with P = 10^12 * tflops FLOP/s,
// B = 10^9 * hbm_gbps bytes/s, d = dtype bytes, and the efficiency factors below. P_gemm is the
// GEMMs' peak: fp8_dense_tflops when weight_dtype is fp8 (W8A8 block-fp8, as vLLM runs
// DeepSeek-V3 and Kimi K2; a spec without it is an InputError naming the spec file), else
// bf16_dense_tflops; P_bf16 (attention, lm_head) is always bf16_dense_tflops.
//   layer params   W = (params - 2 * vocab * hidden - X) / layers   (embedding and lm_head
//                  excluded, so gated and plain MLPs are both covered by the published parameter
//                  count; X = a MoE model's experts, moe_layers x 3 hidden (experts x expert_ffn
//                  + shared_ffn), priced apart: the profile's moe_roofline holds this GPU's
//                  P_gemm and HBM with e_compute and e_memory, and sim/cost_moe.h adds each MoE
//                  layer)
//   dense(t)       = max(2 t W / tp / (P_gemm e_compute),
//                        (W w / tp + t a d) / (B e_memory))
//                  w = bytes of one weight: d, or the quantized weight_dtype's (fp8 1, int4 0.5)
//                  a = activation elements read or written per token: 4 hidden
//                      + (2 heads + 2 kv_heads) head_dim / tp + 2 ffn / tp
//   Attention (calibrate/analytic_attention.cpp), per (query, key) pair and per KV token read:
//   kvb = KV bytes of one token in one layer on this GPU: 2 kv_heads head_dim d / tp, or with
//   MLA (kv_lora_rank + qk_rope_head_dim) d, the same on every rank.
//   decode_attention(s, k) = k kvb / (B e_memory) + s * attention_per_seq_us
//                  MLA (weight-absorbed: every head attends over the shared latent):
//                  max(2 (heads / tp) (2 kv_lora_rank + qk_rope_head_dim) k / (P_bf16 e_attention),
//                      k kvb / (B e_memory)) + s * attention_per_seq_us
//   prefill_attention(c, k) = max(2 c (k + c/2) (heads / tp) (qk + v) / (P_bf16 e_attention),
//                                 (k + c) kvb / (B e_memory))
//                  qk = v = head_dim; MLA (K and V expanded per head from the latent):
//                  qk = head_dim (nope + rope), v = v_head_dim (default head_dim - rope)
//   lm_head(s)     = max(2 s vocab hidden / tp / (P_bf16 e_compute),
//                        (vocab hidden d / tp + s (hidden + vocab) d) / (B e_memory))
//   overhead       = overhead_us
//   h2d/d2h(n)     = n / (pcie_latency_us + n / (10^9 pcie_gbps e_pcie))  in GB/s, for a copy of
//                  n bytes; the latency gives the usual small-copy falloff. per_copy_overhead_us
//                  is 0 (the curve already holds the per-copy cost); duplex_factor is `duplex`.
//   saturation_tokens = the knee of dense(t): the smallest integer t at or beyond which the
//                  compute term is at least the memory term (the grid's last point when the
//                  layer never turns compute-bound inside it).
//   allreduce(b)   (tp > 1 only) = allreduce_latency_us + 2 (tp - 1) / tp * b / (L e_link), the
//                  ring all-reduce of b bytes per call; L = 10^9 * nvlink_gbps bytes/s, or
//                  pcie_gbps for a GPU whose spec has no NVLink. Tabulated at the dense grid's
//                  token counts x hidden x d bytes.
//   alltoall(b, R) = allreduce_latency_us + (R - 1) / R * b / (L e_link): b bytes per rank, each
//                  rank keeping 1/R of them (not tabulated; the cross-check and DP/EP use it).
// Attention FLOPs count QK^T and PV (2 FLOPs per multiply-add) over the causal mean context
// k + c/2. Tensor parallelism divides FLOPs and bytes by tp and adds the all-reduce.
// Expert parallelism (model.ep > 1) changes only the weights one GPU holds
// (ModelShape::weight_bytes_per_gpu); the MoE layer's time stays sim/cost_moe.h's.
// Activations and the KV cache must be fp16 or bf16 (model.dtype); weights may be fp8 (above),
// int8 or int4 (computed at P_bf16, as vLLM's weight-only kernels dequantize).
#pragma once

#include <string>
#include <vector>

#include "calibrate/model.h"
#include "sim/profile.h"

namespace isim::calib {

struct GpuSpec {
  std::string name;
  double bf16_dense_tflops = 0;
  double hbm_gbps = 0;
  double memory_gib = 0;
  int pcie_gen = 0;
  double pcie_gbps = 0;         // each way
  double nvlink_gbps = 0;       // each way; 0 when the spec has none
  double fp8_dense_tflops = 0;  // 0 when the spec has none
  double network_gbps = 0;      // scale-out NIC per GPU, each way; 0 when the spec has none
  int nvlink_domain_gpus = 0;   // GPUs one NVLink domain joins; 0 when the spec has none
  std::string path;             // the file it was loaded from
};

GpuSpec load_gpu_spec(const std::string& path);

// Efficiency factors (fractions of the spec's peak) and fixed costs, with their defaults.
struct Efficiency {
  double compute = 0.7;               // GEMMs in the compute-bound region
  double memory = 0.8;                // streaming weights and KV
  double attention = 0.5;             // prefill attention FLOPs
  double pcie = 0.8;                  // large host copies (Gen4: ~25 of 32 GB/s)
  double overhead_us = 30;            // CPU overhead per iteration
  double attention_per_seq_us = 0.1;  // decode attention, per sequence per layer
  double pcie_latency_us = 4;         // per copy (cudaMemcpyAsync ~2-4 us)
  double duplex = 0.8;                // both directions at once
  // All-reduce (tp > 1). aiconfigurator's H200 vLLM custom all-reduce (custom_allreduce_perf.csv,
  // vllm_graph) takes 4.4-4.8 us for small messages at 2-8 GPUs and reaches 0.73 (tp 2) to 1.0
  // (tp 8, ring-equivalent) of the 450 GB/s NVLink figure on 1 GiB.
  double link = 0.75;
  double allreduce_latency_us = 5;

  bool operator==(const Efficiency&) const = default;
};

// The roofline terms above for one GPU and one model shape (with its tp). Times in us.
class Roofline {
 public:
  Roofline(const GpuSpec& gpu, const sim::ModelShape& model, const Efficiency& eff);

  double layer_params() const { return layer_params_; }
  double gemm_peak_tflops() const { return gemm_flops_ / 1e12; }  // P_gemm above
  // The two sides of dense(t) at efficiency 1, in us: FLOP time and byte time.
  double dense_compute_us(double tokens) const;
  double dense_memory_us(double tokens) const;
  double dense_us(double tokens) const;
  double decode_kv_us(double kv_tokens) const;       // the KV-read part of decode attention
  double decode_compute_us(double kv_tokens) const;  // MLA's FLOP side at efficiency 1 (else 0)
  double decode_attention_us(double sequences, double kv_tokens) const;
  double prefill_compute_us(double chunk, double kv_tokens) const;  // at efficiency 1
  double prefill_memory_us(double chunk, double kv_tokens) const;   // at efficiency 1
  double prefill_attention_us(double chunk, double kv_tokens) const;
  double lm_head_compute_us(double sequences) const;  // at efficiency 1
  double lm_head_memory_us(double sequences) const;   // at efficiency 1
  double lm_head_us(double sequences) const;
  double pcie_gbps(double bytes) const;
  double allreduce_us(double bytes) const;            // one call; 0 at tp 1
  double alltoall_us(double bytes, int ranks) const;  // one call of `bytes` per rank
  // One bf16 GEMM (m x k by k x n) on its own: max(2 m n k / (P_bf16 e_compute),
  // (n k + m k + m n) 2 / (B e_memory)); the shapes the cross-check compares. *compute_side
  // (when given) says whether the FLOP side is the larger.
  double gemm_bf16_us(double m, double n, double k, bool* compute_side = nullptr) const;
  // Where dense turns compute-bound (fractional tokens; +inf when it never does).
  double knee_tokens() const;

 private:
  GpuSpec gpu_;
  sim::ModelShape model_;
  Efficiency eff_;
  double layer_params_ = 0;
  double gemm_flops_ = 0;  // P_gemm, FLOP/s
  double bf16_flops_ = 0;  // P_bf16, FLOP/s
  double bw_ = 0;          // bytes/s
};

// The grids an analytic profile is tabulated on.
struct AnalyticGrid {
  std::vector<double> dense_tokens = {1,    2,    4,    8,    16,   24,   32,  48,
                                      64,   96,   128,  192,  256,  384,  512, 768,
                                      1024, 1536, 2048, 3072, 4096, 6144, 8192};
  std::vector<double> decode_sequences = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512};
  std::vector<double> decode_kv_tokens = {0, 1024, 4096, 16384, 65536, 262144, 1048576};
  std::vector<double> prefill_chunk = {1, 16, 64, 128, 256, 512, 1024, 2048, 4096, 8192};
  std::vector<double> prefill_kv_tokens = {0, 512, 1024, 2048, 4096, 8192, 16384, 32768};
  std::vector<double> lm_head_sequences = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024};
  std::vector<double> copy_bytes = {4096,    16384,    65536,    262144,    1048576,
                                    4194304, 16777216, 67108864, 268435456, 1073741824};
};

// The analytic profile (source: analytic; provenance names the spec and model files and every
// factor). `model.shape.tp` and `.ep` are the deployment's. The knee (rounded up) is added to the
// dense grid when it lies inside it, so T(saturation_tokens) is exact. Weights that do not fit
// the GPU's memory are an InputError, except a MoE model at ep 1 whose weights fit at some
// ep <= experts: the profile is written with provenance `min_ep` (the smallest such ep), for a
// DP/EP group that sets ep from its size.
sim::Profile analytic_profile(const GpuSpec& gpu, const ModelSpec& model,
                              const std::string& model_path, const Efficiency& eff,
                              const AnalyticGrid& grid = {});

// Efficiency factors fitted from a measured `tables` profile of the GPU `measured_gpu`:
// - compute and memory: least squares of the measured dense times against the roofline's two
//   sides, each on the points where that side is the larger under the current factors, iterated
//   until the split stops changing;
// - attention: the same on prefill attention points where the FLOP side is the larger;
// - attention_per_seq_us: least squares of decode attention minus its KV-read time against
//   sequences;
// - pcie and pcie_latency_us: a line through copy time (bytes / gbps) against bytes, over both
//   directions' curves;
// - overhead_us and duplex: copied.
// A factor with no usable point keeps its value in `start` and is listed in `kept`.
struct FitResult {
  Efficiency eff;
  std::vector<std::string> kept;   // factors left at their starting value, with why
  std::vector<std::string> notes;  // points used per factor
};
FitResult fit_efficiency(const sim::Profile& measured, const GpuSpec& measured_gpu,
                         const Efficiency& start = {});

}  // namespace isim::calib
