// vLLM's memory accounting before its KV cache, modelled from a model's shapes: the terms of
// sim::MemorySpec that no kernel measurement gives, each with the fact it rests on. The rule
// that combines them is sim/vllm_kv_rule.h (one for `isim run` and `isim validate --kv-logs`).
//
// Contract:
// - `vllm_memory(model, usable_bytes, tp, rule, pp)` fills every MemorySpec term for one GPU of
//   a tp x pp deployment and returns the rule as one provenance line (`memory_rule`). Terms:
//   - weights_extra: the rotary cos/sin cache, max_position x head_dim x dtype (0 when the
//     model file gives no max_position);
//   - activation per token: the dummy forward's live set, dtype x (3 ffn/tp (gate_up output
//     and its activation) + (heads + 2 kv_heads)/tp x head_dim (qkv) + 2 hidden (hidden states
//     and residual));
//   - sampler per sequence: vocab x (dtype + 13): the logits in the model's dtype, their fp32
//     copy, the probabilities, the exponential noise of random sampling (4 B each) and 1 B per
//     logit derived from the startup logs (below);
//   - sampler per token: hidden x dtype, the dummy forward's output held through the sampler;
//     with MoE also vLLM's fused-MoE workspace, which stays allocated: dtype x (topk x
//     (max(2 expert_ffn / tp, hidden) + expert_ffn / tp) + hidden);
//   - non_torch: 0.25 GiB for one in-process GPU (tp = pp = 1); 0.07 GiB for a worker process
//     (tp x pp > 1), plus 2.0 GiB with tp > 1 (NCCL communicators and custom all-reduce
//     buffers); CUDA graphs 0 (vLLM 0.19 estimates them but does not subtract them).
//   Derived from the 74 vLLM 0.19.0 H100 startup logs (../shared/data/vllm-startup-logs) as
//   rules checked on all of them (`isim validate --kv-logs`): the sampler's 13th byte, the MoE
//   workspace held through the sampler and the non-torch figures; the provenance line says so.
// - The usable memory is the device's, as CUDA reports its total (not the nominal size).
#pragma once

#include <cstdint>
#include <string>

#include "calibrate/model.h"
#include "sim/profile.h"

namespace isim::calib {

sim::MemorySpec vllm_memory(const ModelSpec& model, double usable_bytes, int tp, std::string* rule,
                            int pp = 1);

}  // namespace isim::calib
