// vLLM 0.19's KV budget on one GPU, term by term: what `isim run` (engine.kv_capacity vllm,
// sim/capacity.cpp) and `isim validate --kv-logs` (calibrate/kv_logs.h) share, so that the rule
// checked against real servers' startup logs is the rule the simulator runs.
//
// Contract:
// - vllm_kv_terms(model, memory, settings): for the GPU of pipeline stage `settings.stage`
//   (model.tp is the tensor-parallel degree), the bytes vLLM's determine_available_memory
//   subtracts and the KV bytes left:
//     kv = usable x gpu_memory_utilization - weights - max(forward, sampler) - non_torch
//          - cuda_graph
//   - weights: vllm_weight_bytes + memory.weights_extra_bytes (buffers every rank holds);
//   - forward: memory.activation_bytes_per_token x max_num_batched_tokens;
//   - sampler (last stage only, where the logits are): sampler_bytes_per_sequence x
//     min(max_num_seqs, max_num_batched_tokens) + sampler_bytes_per_token x tokens;
//   - non_torch and cuda_graph: the MemorySpec's GiB, as given.
//   kv_bytes_per_token is this GPU's: its stage's layers, its kv_heads / tp (MLA: the latent,
//   every rank), at settings.kv_dtype_bytes (0: the model's dtype).
// - vllm_weight_bytes(model, pp, stage): one GPU's weights as PyTorch's caching allocator
//   counts them: the parameters' bytes plus the allocator's excess over each dense tensor of
//   10 MiB or more (its 2 MiB segment is not split when at most 1 MiB is left: up to 1 MiB per
//   tensor; vLLM's fused qkv, o, gate_up, down, embedding and lm_head; none for MoE/MLA).
//   Unquantized at pp 1 the bytes are params x dtype / tp. Otherwise the parameters split
//   into the embedding and lm_head (vocab x hidden each; one when tied at pp 1, detected from
//   params against the dense layer shapes; MoE and MLA models are taken as untied) and the
//   rest. The decoder layers' linear weights (q, k, v, o, the gated FFN or its experts, from
//   the shapes; all of the rest for MLA) are in weight_dtype (fp8, int8: 1 B; int4: 0.5 B + a
//   2 B scale per group of 128); norms, biases, a vision tower, the embedding and lm_head stay
//   in dtype. With pp > 1 a stage holds its layers' share of the rest, the first stage the
//   embedding and the last the lm_head (vLLM's get_pp_indices split, below).
// - pp_stage_layers(layers, pp, stage): vLLM's get_pp_indices: layers / pp each, the remainder
//   one each to the stages just before the last.
// - InputError for pp < 1, a stage outside [0, pp), or more stages than layers.
#pragma once

#include <cstdint>

#include "sim/profile.h"

namespace isim::sim {

struct VllmKvSettings {
  int64_t max_num_batched_tokens = 8192;
  int64_t max_num_seqs = 1024;
  double gpu_memory_utilization = 0.9;
  int pp = 1;
  int stage = 0;
  int kv_dtype_bytes = 0;  // 0: model.dtype_bytes()
};

struct VllmKvTerms {
  int stage_layers = 0;
  double requested = 0;  // usable x utilization
  double weights = 0;    // incl. weights_extra_bytes
  double forward = 0;
  double sampler = 0;  // 0 off the last stage
  double peak = 0;     // max(forward, sampler)
  double non_torch = 0;
  double cuda_graph = 0;
  double kv_bytes = 0;  // what is left for the KV cache (may be < 0)
  double kv_bytes_per_token = 0;
  int64_t seqs = 0;  // sequences of the dummy sampler
};

int pp_stage_layers(int layers, int pp, int stage);
double vllm_weight_bytes(const ModelShape& m, int pp, int stage);
VllmKvTerms vllm_kv_terms(const ModelShape& m, const MemorySpec& s, const VllmKvSettings& k);

}  // namespace isim::sim
