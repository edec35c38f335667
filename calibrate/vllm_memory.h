// vLLM's memory accounting before its KV cache, modelled from a model's shapes: the terms of
// sim::MemorySpec that no kernel measurement gives, each with the public fact it rests on.
//
// Contract:
// - `vllm_memory(model, usable_bytes, tp)` fills every MemorySpec term and returns the rule as
//   one provenance line (`memory_rule`). Terms, per GPU:
//   - weights_extra: the rotary cos/sin cache, max_position x head_dim x dtype (0 when the
//     model file gives no max_position);
//   - activation per token: the dummy forward's live set, dtype x (3 ffn/tp (gate_up output
//     and its activation) + (heads + 2 kv_heads)/tp x head_dim (qkv) + 2 hidden (hidden states
//     and residual));
//   - sampler per sequence: vocab x (dtype + 12): the logits in the model's dtype, their fp32
//     copy, the probabilities and the exponential noise of random sampling;
//   - non_torch 0.25 GiB and CUDA graphs 0 (see the provenance text for the sources).
// - The usable memory is the device's, as CUDA reports its total (not the nominal size).
#pragma once

#include <cstdint>
#include <string>

#include "calibrate/model.h"
#include "sim/profile.h"

namespace isim::calib {

sim::MemorySpec vllm_memory(const ModelSpec& model, double usable_bytes, int tp, std::string* rule);

}  // namespace isim::calib
