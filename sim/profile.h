// Profile: the cost model's data (schema `isim-profile/1`), read from and written to YAML.
//
// Contract:
// - `load_profile` validates everything: the schema tag, every required key, types, positive
//   values, strictly increasing grid axes, table shapes. Unknown keys are errors (a typo must
//   never be silently ignored) except under `provenance`, which is free-form text.
//   Errors are InputError("FILE: key.path: reason").
// - `validation` is optional: a list of {batch, predicted_ms, measured_ms} (isim-calibrate).
// - `model` may hold active_params, weight_dtype, ep, moe {...} and mla {...} (ModelShape
//   below); they are written only when given (ep only when > 1), so a dense model's profile
//   keeps its bytes. ep must be in [1, moe.experts] and is refused on a dense model.
// - `write_profile` emits YAML that `load_profile` reads back to an equal Profile.
// - Units are in the key names: *_ms, *_us, *_gib, *_gbps (GB/s = 1e9 bytes/s), bytes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

#include "sim/interp.h"

namespace isim::sim {

// Mixture of experts (all zero: a dense model). Layers from `dense_layers` on replace the dense
// FFN (`ffn` wide) by `experts` routed experts, each `expert_ffn` wide, of which each token
// activates `experts_per_token`, plus always-active shared experts `shared_ffn` wide in all.
struct MoeShape {
  int experts = 0;
  int experts_per_token = 0;
  int expert_ffn = 0;
  int shared_ffn = 0;    // 0: no shared expert
  int dense_layers = 0;  // leading layers with a dense FFN (DeepSeek's first_k_dense_replace)
  bool given() const { return experts > 0; }
  int moe_layers(int layers) const { return given() ? layers - dense_layers : 0; }
  bool operator==(const MoeShape&) const = default;
};

// Multi-head latent attention (DeepSeek-V2/V3, Kimi K2, GLM-5; all zero: standard attention).
// The KV cache holds one latent vector of kv_lora_rank + qk_rope_head_dim values per token and
// layer, shared by every head and replicated on every tensor-parallel rank (vLLM's MLA backends).
// The query/key head is the model's head_dim (qk_nope_head_dim + qk_rope_head_dim); the value
// head is v_head_dim (optional: 0 means head_dim - qk_rope_head_dim, as in DeepSeek-V3 and Kimi
// K2; GLM-5's differs).
struct MlaShape {
  int kv_lora_rank = 0;
  int qk_rope_head_dim = 0;
  int v_head_dim = 0;  // 0: head_dim - qk_rope_head_dim
  bool given() const { return kv_lora_rank > 0; }
  int value_head_dim(int head_dim) const {
    return v_head_dim > 0 ? v_head_dim : head_dim - qk_rope_head_dim;
  }
  bool operator==(const MlaShape&) const = default;
};

struct ModelShape {
  std::string name;
  int layers = 0;
  int hidden = 0;
  int heads = 0;
  int kv_heads = 0;
  int head_dim = 0;
  int ffn = 0;
  int vocab = 0;
  std::string dtype = "fp16";  // fp16 | bf16 | fp32 | fp8
  double params = 0;           // parameter count
  int tp = 1;                  // tensor-parallel degree
  // Expert-parallel ranks the routed experts are spread over (MoE only). 1: every GPU holds all
  // the experts, split by tp; > 1: each GPU holds experts / ep whole experts, and everything
  // else (attention, dense FFN, shared experts, embedding) stays split by tp.
  int ep = 1;
  MoeShape moe;
  MlaShape mla;
  double active_params = 0;  // parameters each token uses (MoE); 0: all of `params`
  // Dtype of the quantized linear weights ("" : `dtype`): fp8, int8, int4 (w4a16). Embedding,
  // lm_head and norms stay in `dtype`; activations and the KV cache are in `dtype`.
  std::string weight_dtype;

  int dtype_bytes() const;
  // KV bytes per token on one GPU: 2 (K and V) x layers x kv_heads_per_gpu x head_dim x dtype;
  // with MLA, layers x (kv_lora_rank + qk_rope_head_dim) x dtype, not split by tp.
  int64_t kv_bytes_per_token() const;
  // KV heads one GPU holds: kv_heads / tp, at least 1 (vLLM replicates a KV head over the ranks
  // when tp exceeds kv_heads: get_num_kv_heads in vllm/config/model.py).
  int kv_heads_per_gpu() const { return std::max(1, kv_heads / std::max(1, tp)); }
  // The same in double before the division by tp, so that no product can overflow: what the
  // readers range-check (calibrate/model.cpp, sim/profile.cpp) before kv_bytes_per_token is used.
  double kv_bytes_per_token_unsplit() const;
  // Bytes of one quantized linear weight: fp8 and int8 1, int4 0.5 (group scales not counted:
  // 2/128 B more per weight at group size 128); dtype_bytes() when weight_dtype is "".
  double weight_dtype_bytes() const;
  // Weight bytes on one GPU: params x dtype / tp; with a weight_dtype, the embedding and lm_head
  // (2 x vocab x hidden, a tied model's one table counted twice) at dtype and every other
  // parameter at weight_dtype_bytes(), over tp. With ep > 1 the routed experts' parameters
  // (routed_expert_params()) are divided by ep instead of tp.
  double weight_bytes_per_gpu() const;
  // moe_layers x experts x 3 x hidden x expert_ffn (gate, up and down of every routed expert);
  // 0 for a dense model.
  double routed_expert_params() const;
  // Parameters a token runs through: active_params, or params when that is 0.
  double params_per_token() const { return active_params > 0 ? active_params : params; }
  bool operator==(const ModelShape&) const = default;
};

struct DeviceSpec {
  std::string name;
  double memory_gib = 0;  // per GPU
  bool operator==(const DeviceSpec&) const = default;
};

struct LinearForward {
  double base_ms = 0;  // T(x) = base + slope * x
  double slope_ms_per_token = 0;
  bool operator==(const LinearForward&) const = default;
};

// The analytic MoE layer (sim/cost_moe.h): spec-sheet peaks and the fractions of them reached.
struct MoeRoofline {
  double peak_tflops = 0;  // dense bf16/fp16 tensor-core peak, 10^12 FLOP/s
  double hbm_gbps = 0;     // memory bandwidth, GB/s
  double compute_efficiency = 0;
  double memory_efficiency = 0;
  bool given() const { return peak_tflops > 0; }
  bool operator==(const MoeRoofline&) const = default;
};

// Decode attention over a ragged batch (LLMServingSim's skew fit): t = t_mean + alpha (t_max -
// t_mean), alpha by bucket of (prefill chunk pc, decodes n, skew rate, largest decode KV, the
// chunk's cached KV kp). Bins are (edge[i], edge[i+1]]; a value past the last edge falls in the
// last bin. A cell names each binned axis by its bin's upper edge; pc is a raw chunk size.
struct DecodeSkew {
  double alpha_default = 0;  // when no cell matches
  std::vector<double> n_bins, skew_rate_bins, kv_big_bins, kp_bins;
  struct Cell {
    double pc = 0, n = 0, skew_rate = 0, kv_big = 0, kp = 0;  // upper edges (pc: raw)
    double alpha = 0;
    bool operator==(const Cell&) const = default;
  };
  std::vector<Cell> cells;
  bool given() const { return !n_bins.empty(); }
  bool operator==(const DecodeSkew&) const = default;
};

// Every attention/dense time is for ONE decoder layer; the cost model multiplies by layers.
// For a MoE model, dense_us is a layer's time outside attention and the MoE block (the leading
// dense layers' FFN spread over all layers, as importers spread the embedding); its MoE layers
// add moe_us or moe_roofline.
struct TablesForward {
  Curve1D dense_us;             // x: batched tokens
  Grid2D decode_attention_us;   // x: decode sequences, y: their total KV tokens
  Grid2D prefill_attention_us;  // x: chunk tokens, y: KV tokens already cached (per sequence)
  Curve1D lm_head_us;           // x: sequences producing logits
  double overhead_us = 0;       // CPU overhead per iteration
  // How prefill_attention_us is interpolated: "time" (bilinear in the times, the default) or
  // "per_pair" (bilinear in time per attended (query, key) pair, chunk x kv + chunk(chunk+1)/2,
  // then scaled back: exact where attention cost is proportional to the pairs, so a sparse chunk
  // axis neither overestimates between points nor underestimates beyond the last one).
  std::string prefill_interpolation = "time";
  // Optional: attention of ONE prefill chunk and n decodes run together in one varlen kernel,
  // axes (chunk tokens, chunk's cached KV tokens, decode sequences, KV tokens PER decode).
  // Empty: a mixed batch costs prefill + decode attention, as measured apart.
  Grid4D mixed_attention_us;
  // Optional, only when model.tp > 1: one all-reduce of the activations (x: bytes per call,
  // tokens x hidden x dtype bytes); a decoder layer runs two (after o_proj and down_proj).
  Curve1D allreduce_us;
  // Optional, MoE models only (sim/cost_moe.h prices their MoE layers from one of the two):
  // measured time of ONE MoE layer (router and routed experts), x: batched tokens, y: distinct
  // experts the batch activates;
  Grid2D moe_us;
  // or, when moe_us is empty, the grouped-GEMM roofline over the device's peaks.
  MoeRoofline moe_roofline;
  // Optional: decode attention over a ragged batch (sim/cost_moe.h); absent: priced at the mean.
  DecodeSkew decode_skew;
  bool operator==(const TablesForward&) const = default;
};

// One copy is one gather (or scatter) of a session's blocks in one direction: a single call
// whose bytes are the x of the curves (sim/swap_budget.h says how the engine issues them).
struct SwapSpec {
  Curve1D h2d_gbps;  // x: bytes per copy, y: GB/s
  Curve1D d2h_gbps;
  double duplex_factor = 1.0;       // bandwidth multiplier when both directions run at once
  double per_copy_overhead_us = 0;  // fixed cost of each copy call
  // Optional (0 when absent): the forward pass takes (1 + compute_slowdown) x as long while
  // copies run beside it. Written only when nonzero.
  double compute_slowdown = 0;
  bool operator==(const SwapSpec&) const = default;
};

// Per-step CPU time around the forward pass (scheduling, input preparation, sampling,
// detokenisation): fixed + per scheduled sequence + per scheduled token. Optional section
// `step_overhead:`; all zero when absent. The engine adds it to the step, or overlaps it with
// the forward pass under engine.async_scheduling.
struct StepOverhead {
  double fixed_us = 0;
  double per_sequence_us = 0;
  double per_token_us = 0;
  bool given() const { return fixed_us != 0 || per_sequence_us != 0 || per_token_us != 0; }
  bool operator==(const StepOverhead&) const = default;
};

// What vLLM subtracts from GPU memory before the KV cache (optional section `memory:`; the
// `vllm` KV capacity rule needs it):
//   KV bytes = usable x utilisation - (weights + weights_extra) - activation peak
//              - non_torch - cuda_graph,
//   activation peak = max(activation_bytes_per_token x max_num_batched_tokens,
//                         sampler_bytes_per_sequence x min(max_num_seqs, max_num_batched_tokens))
// (the profiling run's dummy forward and its dummy sampler run). Every term's origin is stated
// in provenance `memory_rule`.
struct MemorySpec {
  bool given = false;
  double usable_gib = 0;           // what the device lets CUDA allocate (not nominal)
  double weights_extra_bytes = 0;  // buffers loaded with the weights (e.g. rotary cache)
  double activation_bytes_per_token = 0;
  double sampler_bytes_per_sequence = 0;
  // Held through the dummy sampler per batched token (the dummy forward's output hidden states);
  // optional in YAML (absent: 0, as profiles written before it).
  double sampler_bytes_per_token = 0;
  double non_torch_gib = 0;   // CUDA memory outside torch's allocator (cuBLAS, ...)
  double cuda_graph_gib = 0;  // CUDA-graph pool, where the server subtracts it
  bool operator==(const MemorySpec&) const = default;
};

enum class ForwardForm { kLinear, kTables };

// One whole batch measured after calibration, against what the profile predicts for it.
struct ValidationPoint {
  std::string batch;        // e.g. "decode 16x256 + chunk 32@256"
  double predicted_ms = 0;  // from the profile's tables, through CostModel
  double measured_ms = 0;   // > 0
  double error() const { return (predicted_ms - measured_ms) / measured_ms; }
  bool operator==(const ValidationPoint&) const = default;
};

struct Profile {
  // Free-form provenance, in file order: source, device, driver, cuda, date, tool_version,
  // git_sha, ... Required key: `source`.
  std::vector<std::pair<std::string, std::string>> provenance;
  DeviceSpec device;
  ModelShape model;
  int block_tokens = 16;
  int64_t saturation_tokens = 0;
  ForwardForm form = ForwardForm::kLinear;
  LinearForward linear;
  TablesForward tables;
  SwapSpec swap;
  StepOverhead step_overhead;
  MemorySpec memory;
  // Optional `validation:` list (isim-calibrate writes it): predicted against measured batches.
  std::vector<ValidationPoint> validation;
  double validation_mean_abs_error() const;  // mean |error| as a fraction; 0 when empty

  std::string path;  // where it was loaded from ("" if built in memory); not serialised

  std::string provenance_value(const std::string& key) const;  // "" when absent
  bool operator==(const Profile& o) const;                     // ignores `path`
};

Profile load_profile(const std::string& path);
// Parses YAML text; `origin` names the source in error messages.
Profile parse_profile(const std::string& yaml_text, const std::string& origin);
void write_profile(std::ostream& os, const Profile& p);
void write_profile_file(const std::string& path, const Profile& p);
// Human-readable summary for `isim profile show`.
std::string describe_profile(const Profile& p);
// What the swap curves measured: "host memcpy" for a profile of the CPU backend (provenance
// backend: cpu ...), "PCIe" otherwise.
std::string copy_path_name(const Profile& p);

}  // namespace isim::sim
