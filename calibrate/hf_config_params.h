// The parameter count of a decoder from its shapes (calibrate/hf_config.cpp's helper):
// config.json files give shapes, not the count that the model format's `params` holds.
//
// Contract: count_params(s) adds every weight matrix, bias and norm the family's transformers
// module holds: per layer, then the embedding, the lm_head (unless tied) and the final norm.
// `lines` spell the sum out (per-layer terms, their total, the outer terms, the grand total;
// for a MoE model the dense and MoE layers apart, then the active sum) for the YAML, wrapped
// to fit a comment. Exact for totals below 2^53.
//   Attention, standard (GQA): q, k, v, o; q/k/v biases (qkv_bias), an o bias (o_bias);
//   per-head q_norm and k_norm of head_dim each (qk_norm, Qwen3, GLM-4 MoE with use_qk_norm).
//   Attention, MLA (kv_lora_rank > 0): q_a (hidden x q_lora_rank), its norm, q_b (q_lora_rank x
//   heads (nope + rope)), or one q (hidden x heads (nope + rope)) when q_lora_rank is 0;
//   kv_a (hidden x (kv_lora_rank + rope)), its norm, kv_b (kv_lora_rank x heads (nope + v)),
//   o (heads v x hidden); mla_bias adds q_a, kv_a and o biases.
//   FFN: gate, up, down (hidden x ffn each; mlp_bias adds their biases) in a dense layer; in a
//   MoE layer the router (experts x hidden; router_bias adds DeepSeek-V3's per-expert
//   e_score_correction_bias), `experts` routed experts of three hidden x expert_ffn matrices,
//   the shared experts' three hidden x shared_ffn, and Qwen2-MoE's shared-expert gate (hidden).
//   Norms: two per layer (RMS: weight; LayerNorm with norm_bias: weight and bias).
//   GPT-J: one LayerNorm (weight and bias; attention and MLP run in parallel), q, k, v, o
//   without bias, fc_in and fc_out with bias; lm_head has a bias; final LayerNorm.
//   active: what one token runs through: everything but the (experts - experts_per_token)
//   routed experts it does not pick in each MoE layer (embedding and lm_head included, as
//   Mixtral's 12.9B and Qwen3-30B-A3B's 3.3B count them); equal to total for a dense model.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace isim::calib {

enum class Family {
  kLlama,
  kQwen2,
  kQwen3,
  kMistral,
  kGptj,
  kQwen2Moe,
  kQwen3Moe,
  kMixtral,
  kPhiMoe,
  kGlm4Moe,
  kDeepseekV2,
  kDeepseekV3,
  kGlmMoeDsa
};

struct Shapes {
  Family family = Family::kLlama;
  int64_t layers = 0, hidden = 0, heads = 0, kv_heads = 0, head_dim = 0, ffn = 0, vocab = 0;
  int64_t max_position = 0;  // 0: not given
  bool tied = false;         // tie_word_embeddings: lm_head shares the embedding
  bool qkv_bias = false, o_bias = false, mlp_bias = false;
  bool qk_norm = false;       // q_norm and k_norm over head_dim
  bool norm_bias = false;     // LayerNorm (weight and bias) instead of RMSNorm
  bool lm_head_bias = false;  // PhiMoE
  // Mixture of experts (experts 0: dense).
  int64_t experts = 0, experts_per_token = 0, expert_ffn = 0, shared_ffn = 0, dense_layers = 0;
  bool router_bias = false;         // e_score_correction_bias, one per expert
  bool shared_expert_gate = false;  // Qwen2-MoE: a hidden x 1 gate on the shared expert
  // Multi-head latent attention (kv_lora_rank 0: standard attention).
  int64_t q_lora_rank = 0, kv_lora_rank = 0, qk_nope_head_dim = 0, qk_rope_head_dim = 0,
          v_head_dim = 0;
  bool mla_bias = false;
};

struct ParamCount {
  double total = 0;
  double active = 0;  // per token; == total for a dense model
  std::vector<std::string> lines;
};

ParamCount count_params(const Shapes& s);

}  // namespace isim::calib
