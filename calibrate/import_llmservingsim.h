// Importer for LLMServingSim perf directories (casys-kaist/LLMServingSim @ 5daddb21, MIT):
// <dir>/{attention.csv, dense.csv, per_sequence.csv, meta.yaml} and, when present, moe.csv and
// skew_fit.csv; all times in microseconds, measured by vLLM with a one-decoder-layer model. The
// result is a `tables` profile.
//
// Contract (every rule below is also written into the profile's provenance):
// - DIR is the folder measured at --tp (`tp`), which meta.yaml's tp_degrees must list; the
//   model's heads, kv_heads, ffn and vocab must divide by it. What the tables are: LLMServingSim
//   runs ONE GPU (engine_effective.tensor_parallel_size 1; another value is refused) with
//   hf_overrides giving one rank's shapes, so a tp-N folder is one rank's shard of a decoder
//   layer and NO table holds an all-reduce. meta.yaml is shared by a model's TP folders (its
//   hf_overrides show the last profiled degree's shapes, also in the tp 1 folder), so it cannot
//   tell them apart; the TP check reads the CSVs instead: lm_head at one sequence streams
//   vocab x hidden x dtype / tp bytes of weights, and that over its time must be 0.6 to 1 of the
//   GPU's memory bandwidth (0.80-0.95 on all seven shared folders at their own tp; the wrong tp
//   gives about 0.41 or 1.65). Skipped, said so, when the GPU's figures are unknown.
// - dense_us(tokens), per decoder layer = 2 x layernorm (input and post-attention RMSNorm)
//   + qkv_proj + rotary_emb + o_proj [+ qk_norm, Qwen3's q and k norms as one op]
//   + gate_up_proj + act_fn + down_proj (a MoE model: x dense_layers / layers, none when every
//   layer is MoE) + (embedding + final_layernorm) / layers (once-per-iteration token ops,
//   spread over layers because the cost model multiplies dense by layers). Every op must list
//   the same tokens.
// - lm_head_us(sequences) = lm_head + sampler (sampler when present).
// - decode_attention_us: attention.csv rows with prefill_chunk = 0 (kv_decode is per sequence)
//   become a grid over (sequences, total KV = n_decode x kv_decode) with `decode_grid`.
// - prefill_attention_us: rows with n_decode = 0, over (prefill_chunk, kv_prefill); the axes are
//   the union of measured values and a chunk row missing a kv point is interpolated along kv.
// - mixed_attention_us, when the file has rows with both prefill_chunk > 0 and n_decode > 0:
//   those rows over (prefill_chunk, kv_prefill, n_decode, kv_decode per sequence) through
//   `fill_grid4` (import_common.h), which fills the cells no row measured.
// - allreduce_us (tp > 1): from `allreduce_dir` (an aiconfigurator table, import_aiconfigurator.h)
//   or the analytic ring all-reduce of calibrate/analytic.h over the GPU's link (--link-gbps,
//   else the spec's NVLink, else its PCIe: neither known card has NVLink), tabulated at the dense
//   grid's tokens x hidden x dtype bytes; 2 per layer (sim/cost_model.h). An assumption: nothing
//   here measured it.
// - MoE model (model.moe given): moe.csv (tokens, activated_experts, time_us of one MoE layer)
//   becomes moe_us; cells the profiler skips (more experts than the tokens can activate) take the
//   same experts' time at the nearest measured token count above. Without moe.csv (LLMServingSim
//   measured it at tp 1 only), moe_roofline: the grouped-GEMM roofline (sim/cost_moe.h) over the
//   GPU's peak and bandwidth at calibrate/analytic.h's default efficiencies. moe.csv with a dense
//   model is refused.
// - decode_skew, when skew_fit.csv exists: its cells (pc, n_label, skew_rate_label,
//   kv_big_label, kp_label, alpha) with meta.yaml skew_fit.bucket_axes (labels -> the upper edge
//   of their bin) and skew_fit.per_tp.<tp>.alpha_default.
// - overhead_us = 0: the directory has no per-iteration CPU measurement.
// - saturation_tokens = knee_tokens(dense_us) (see import_common.h).
// - block_tokens from meta.yaml engine_effective.block_size; device name from meta.yaml `gpu`;
//   memory, PCIe, peak FLOPs and memory bandwidth from the options, else from a small table of
//   known `hardware` values (RTX4090: 24 GiB, PCIe Gen4 ~25 GB/s; RTXPRO6000: 96 GiB, Gen5
//   ~55 GB/s; peaks as calibrate/gpus/RTX-4090.yaml and RTX-PRO-6000.yaml), all assumptions.
// Bad or missing input throws InputError naming the file, line or column.
#pragma once

#include <string>

#include "calibrate/model.h"
#include "sim/profile.h"

namespace isim::calib {

struct LlmServingSimOptions {
  int tp = 1;             // the degree DIR was measured at
  double memory_gib = 0;  // 0: from the known-hardware table
  double pcie_gbps = 0;   // 0: from the known-hardware table
  // calibrate/gpus/*.yaml: peak FLOPs, memory bandwidth and GPU link ("": the known-hardware
  // table's figures of the same sheet, when meta.yaml's `hardware` is known).
  std::string gpu_spec;
  double link_gbps = 0;              // all-reduce link each way; 0: the spec's NVLink, else PCIe
  double allreduce_latency_us = -1;  // per call; < 0: calibrate/analytic.h's Efficiency default
  // An aiconfigurator folder whose all-reduce table (`allreduce`: nccl, vllm_graph, vllm_eager)
  // replaces the link model; "": the link model.
  std::string allreduce_dir;
  std::string allreduce = "nccl";
};

sim::Profile import_llmservingsim(const std::string& dir, const ModelSpec& model,
                                  const LlmServingSimOptions& opt = {});

}  // namespace isim::calib
