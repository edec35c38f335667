// Model shapes for calibration, importers and analytic profiles: one YAML file per model under
// calibrate/models/, each with the published config it was read from.
//
// Format (every key required unless said optional, unknown keys are errors):
//   name: llama-3.1-8b
//   source: "meta-llama/Llama-3.1-8B config.json: ..."   # where the numbers come from
//   layers: 32          hidden: 4096     heads: 32     kv_heads: 8    head_dim: 128
//   ffn: 14336          vocab: 128256    dtype: bf16   params: 8030261248
// Optional (mixture-of-experts, MLA and quantized models; sim::ModelShape says what each means):
//   active_params: 3353032704    weight_dtype: fp8 | int8 | int4
//   moe: {experts: 128, experts_per_token: 8, expert_ffn: 768, shared_ffn: 0, dense_layers: 0}
//   mla: {kv_lora_rank: 512, qk_rope_head_dim: 64, v_head_dim: 128}   # v_head_dim optional
//                                                  # (default head_dim - qk_rope_head_dim)
// `tp` and `ep` are not part of a model: they are chosen per deployment (isim-calibrate --tp,
// isim profile analytic --tp/--ep, profiles).
// Contract: load_model validates types and ranges (positive sizes, kv_heads at most heads and
// dividing them: sim/profile_consistency.h, a known dtype) and throws
// InputError("FILE:LINE: key: reason"). check_tp(m, tp, flag, path) throws
// InputError("FLAG: reason (model PATH: heads H, kv_heads K)") unless the tensor-parallel degree
// tp splits m's heads and KV heads (sim::heads_problem), before any work is done with it.
#pragma once

#include <cstdint>
#include <string>

#include "sim/profile.h"

namespace isim::calib {

struct ModelSpec {
  sim::ModelShape shape;  // tp = 1
  std::string source;
  int64_t max_position = 0;  // max_position_embeddings (rotary cache rows); 0: not given
};

ModelSpec load_model(const std::string& path);

void check_tp(const ModelSpec& m, int tp, const std::string& flag, const std::string& path);

}  // namespace isim::calib
