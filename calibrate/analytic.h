// Analytic (roofline) profiles: a `tables` profile computed from a GPU spec sheet and a model
// shape, for GPUs nobody here owns; and fitting the roofline's efficiency factors from a measured
// profile of another GPU.
//
// GPU spec format (calibrate/gpus/*.yaml; every key required, unknown keys are errors; every
// value carries the source it was read from):
//   name: H200-SXM-141GB
//   bf16_dense_tflops: {value: 989, source: "..."}   # dense (no sparsity) bf16/fp16 tensor core
//   hbm_gbps:          {value: 4800, source: "..."}  # memory bandwidth, GB/s (1e9 bytes/s)
//   memory_gib:        {value: 141, source: "..."}
//   pcie_gen:          {value: 5, source: "..."}
//   pcie_gbps:         {value: 64, source: "..."}    # host link, GB/s each way
//   nvlink_gbps:       {value: 450, source: "..."}   # optional: GPU-to-GPU, GB/s each way
// Bad input: InputError("FILE:LINE: key: reason").
//
// Roofline, per decoder layer on one GPU (tp = the model's tp), with P = 10^12 * tflops FLOP/s,
// B = 10^9 * hbm_gbps bytes/s, d = dtype bytes, and the efficiency factors below:
//   layer params   W = (params - 2 * vocab * hidden - X) / layers   (embedding and lm_head
//                  excluded, so gated and plain MLPs are both covered by the published parameter
//                  count; X = a MoE model's experts, moe_layers x 3 hidden (experts x expert_ffn
//                  + shared_ffn), priced apart: the profile's moe_roofline holds this GPU's
//                  peaks with e_compute and e_memory, and sim/cost_moe.h adds each MoE layer)
//   dense(t)       = max(2 t W / tp / (P e_compute),
//                        (W d / tp + t a d) / (B e_memory))
//                  a = activation elements read or written per token: 4 hidden
//                      + (2 heads + 2 kv_heads) head_dim / tp + 2 ffn / tp
//   decode_attention(s, k) = k kvb / (B e_memory) + s * attention_per_seq_us
//                  kvb = 2 kv_heads head_dim d / tp: KV bytes of one token in one layer
//   prefill_attention(c, k) = max(4 c (k + c/2) heads head_dim / tp / (P e_attention),
//                                 (k + c) kvb / (B e_memory))
//   lm_head(s)     = max(2 s vocab hidden / tp / (P e_compute),
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
// Attention FLOPs count QK^T and PV (2 FLOPs per multiply-add, 2 matmuls) over the causal mean
// context k + c/2. Tensor parallelism divides FLOPs and bytes by tp and adds the all-reduce.
// Only fp16 and bf16 models are supported (the spec gives the bf16 peak).
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
  double pcie_gbps = 0;    // each way
  double nvlink_gbps = 0;  // each way; 0 when the spec has none
  std::string path;        // the file it was loaded from
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
  // The two sides of dense(t) at efficiency 1, in us: FLOP time and byte time.
  double dense_compute_us(double tokens) const;
  double dense_memory_us(double tokens) const;
  double dense_us(double tokens) const;
  double decode_kv_us(double kv_tokens) const;  // the KV-read part of decode attention
  double decode_attention_us(double sequences, double kv_tokens) const;
  double prefill_compute_us(double chunk, double kv_tokens) const;  // at efficiency 1
  double prefill_memory_us(double chunk, double kv_tokens) const;   // at efficiency 1
  double prefill_attention_us(double chunk, double kv_tokens) const;
  double lm_head_compute_us(double sequences) const;  // at efficiency 1
  double lm_head_memory_us(double sequences) const;   // at efficiency 1
  double lm_head_us(double sequences) const;
  double pcie_gbps(double bytes) const;
  double allreduce_us(double bytes) const;  // one call; 0 at tp 1
  // Where dense turns compute-bound (fractional tokens; +inf when it never does).
  double knee_tokens() const;

 private:
  GpuSpec gpu_;
  sim::ModelShape model_;
  Efficiency eff_;
  double layer_params_ = 0;
  double flops_ = 0;  // FLOP/s
  double bw_ = 0;     // bytes/s
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
// factor). `model.shape.tp` is the deployment's tp. The knee (rounded up) is added to the dense
// grid when it lies inside it, so T(saturation_tokens) is exact.
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
