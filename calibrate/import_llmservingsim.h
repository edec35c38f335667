// Importer for LLMServingSim perf directories (casys-kaist/LLMServingSim @ 5daddb21, MIT):
// <dir>/{attention.csv, dense.csv, per_sequence.csv, meta.yaml}, all times in microseconds,
// measured by vLLM with a one-decoder-layer model. The result is a `tables` profile.
//
// Contract (every rule below is also written into the profile's provenance):
// - dense_us(tokens), per decoder layer = 2 x layernorm (input and post-attention RMSNorm)
//   + qkv_proj + rotary_emb + o_proj + gate_up_proj + act_fn + down_proj
//   + (embedding + final_layernorm) / layers (once-per-iteration token ops, spread over layers
//   because the cost model multiplies dense by layers). Every op must list the same tokens.
// - lm_head_us(sequences) = lm_head + sampler (sampler when present).
// - decode_attention_us: attention.csv rows with prefill_chunk = 0 (kv_decode is per sequence)
//   become a grid over (sequences, total KV = n_decode x kv_decode) with `decode_grid`.
// - prefill_attention_us: rows with n_decode = 0, over (prefill_chunk, kv_prefill); the axes are
//   the union of measured values and a chunk row missing a kv point is interpolated along kv.
// - mixed_attention_us, when the file has rows with both prefill_chunk > 0 and n_decode > 0:
//   those rows over (prefill_chunk, kv_prefill, n_decode, kv_decode per sequence) through
//   `fill_grid4` (import_common.h), which fills the cells no row measured.
// - overhead_us = 0: the directory has no per-iteration CPU measurement.
// - saturation_tokens = knee_tokens(dense_us) (see import_common.h).
// - block_tokens from meta.yaml engine_effective.block_size; device name from meta.yaml `gpu`;
//   memory and PCIe from the options, else from a small table of known `hardware` values
//   (RTX4090: 24 GiB, PCIe Gen4 ~25 GB/s; RTXPRO6000: 96 GiB, Gen5 ~55 GB/s), both assumptions.
// - Only tp = 1: the top-level CSVs are the TP1 measurements.
// Bad or missing input throws InputError naming the file, line or column.
#pragma once

#include <string>

#include "calibrate/model.h"
#include "sim/profile.h"

namespace isim::calib {

struct LlmServingSimOptions {
  int tp = 1;
  double memory_gib = 0;  // 0: from the known-hardware table
  double pcie_gbps = 0;   // 0: from the known-hardware table
};

sim::Profile import_llmservingsim(const std::string& dir, const ModelSpec& model,
                                  const LlmServingSimOptions& opt = {});

}  // namespace isim::calib
