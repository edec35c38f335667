// Importer for aiconfigurator kernel tables (ai-dynamo/aiconfigurator @ 095f58a5, Apache-2.0;
// measured on an H200 under vLLM 0.24): gemm_perf.csv, context_attention_perf.csv,
// generation_attention_perf.csv (latency in ms) and a system spec <system>.yaml, composed for any
// model shape into a `tables` profile.
//
// Contract (every rule below is also written into the profile's provenance):
// - GEMM time t(m, n, k) comes from the rows of the model's dtype (bf16 -> bfloat16): exact at
//   table points, bilinear in (n, k) between the table's axis values, piecewise linear in m. A
//   GEMM wider than the table's largest n (or deeper than its largest k) is split into
//   ceil(n / n_max) equal column (or reduction) blocks whose times add.
// - dense_us(tokens), per decoder layer, at every m of the table: t(tokens, (heads + 2 kv_heads)
//   head_dim, hidden) [QKV] + t(tokens, hidden, heads head_dim) [O] + t(tokens, 2 ffn, hidden)
//   [gate+up] + t(tokens, hidden, ffn) [down]. Element-wise ops (norms, RoPE, SiLU) are not in
//   the tables and are not counted.
// - lm_head_us(sequences) = t(sequences, vocab, hidden), for every m up to the largest decode
//   batch.
// - Attention rows must match the model's heads, kv_heads, head_dim, the kernel (default
//   vllm_flash_attn_fa3), kv dtype and window_size 0; otherwise InputError lists the configs
//   that exist.
// - decode_attention_us: generation rows (batch, KV per sequence = isl + step) through
//   `decode_grid` (import_common.h) over (sequences, total KV tokens).
// - prefill_attention_us(chunk c, cached kv p), from the batch-1 context rows T_ctx(isl) (step 0,
//   no cached prefix) and the batch-1 generation curve T_gen(kv):
//   p = 0: T_ctx(c); otherwise max(T_ctx(c), T_ctx(c + p) - T_ctx(p), T_gen(c + p)), i.e. the
//   work of the last c query rows of a causal prefill of c + p tokens, never below the chunk
//   alone nor below one read of the whole KV. Axes: isl values up to half the largest isl (and
//   kv 0), so c + p stays inside the measured isl range.
// - overhead_us = 0 (no CPU measurement); block_tokens 16 (vLLM's default; no source value).
// - Device memory = gpu.mem_capacity of <system>.yaml; swap: node.pcie_bw is nominal PCIe 5.0,
//   the curve assumes ~55 GB/s each way (data README), duplex 0.8, 3 us per copy.
// - saturation_tokens = knee_tokens(dense_us).
// - tp = N > 1 (`opt.tp`): every GEMM and attention shape is one rank's shard, as vLLM splits
//   them: heads / N and max(1, kv_heads / N) attention heads (rows for that config must exist),
//   QKV n = (heads + 2 kv_heads) head_dim / N with replicated KV heads counted once per rank,
//   O k = heads head_dim / N, gate+up n = 2 ffn / N, down k = ffn / N, lm_head n = vocab / N.
//   heads and ffn must divide by N. allreduce_us comes from `aiconfigurator_allreduce`.
#pragma once

#include <string>

#include "calibrate/model.h"
#include "sim/interp.h"
#include "sim/profile.h"

namespace isim::calib {

struct AiconfiguratorOptions {
  int tp = 1;
  std::string system = "h200_sxm";  // <dir>/<system>.yaml
  std::string kernel = "vllm_flash_attn_fa3";
  double pcie_gbps = 55;
  std::string allreduce = "vllm_graph";  // vllm_graph | vllm_eager | nccl (tp > 1 only)
};

// allreduce_us for tp > 1: the all_reduce rows of `num_gpus` = tp, by bytes per call.
// backend vllm_graph / vllm_eager: custom_allreduce_perf.csv rows with that `backend` and
// allreduce_dtype bfloat16 (float16 for fp16); nccl: the one nccl_perf*.csv, nccl_dtype half.
// message_size counts elements (2 bytes each). Fewer than two rows: InputError naming the file
// and the num_gpus values present.
struct AllreduceCurve {
  sim::Curve1D us;   // x: bytes per call
  std::string rule;  // for provenance
};
AllreduceCurve aiconfigurator_allreduce(const std::string& dir, int tp, const std::string& dtype,
                                        const std::string& backend);

// The one nccl_perf*.csv in dir; InputError("DIR: expected one nccl_perf*.csv for PURPOSE,
// found ...") otherwise.
std::string aiconfigurator_nccl_file(const std::string& dir, const std::string& purpose);

// The prefill rule above for one cell: ctx = T_ctx by isl, gen = batch-1 T_gen by KV tokens.
double composed_prefill_us(const sim::Curve1D& ctx, const sim::Curve1D& gen, double chunk,
                           double kv);

sim::Profile import_aiconfigurator(const std::string& dir, const ModelSpec& model,
                                   const AiconfiguratorOptions& opt = {});

}  // namespace isim::calib
