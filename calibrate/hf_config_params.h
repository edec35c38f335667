// The parameter count of a dense decoder from its shapes (calibrate/hf_config.cpp's helper):
// config.json files give shapes, not the count that the model format's `params` holds.
//
// Contract: count_params(s) adds every weight matrix, bias and norm the family's transformers
// module holds: per layer, then the embedding, the lm_head (unless tied) and the final norm.
// `lines` spell the sum out (per-layer terms, their total, the outer terms, the grand total)
// for the YAML, wrapped to fit a comment. Exact for totals below 2^53.
//   Llama, Qwen2, Mistral: q, k, v, o; gate, up, down; two RMS norms (weight only); q/k/v
//   biases for Qwen2 and Llama with attention_bias (which adds an o bias too); Llama's
//   mlp_bias adds gate/up/down biases.
//   GPT-J: one LayerNorm (weight and bias; attention and MLP run in parallel), q, k, v, o
//   without bias, fc_in and fc_out with bias; lm_head has a bias; final LayerNorm.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace isim::calib {

enum class Family { kLlama, kQwen2, kMistral, kGptj };

struct Shapes {
  Family family = Family::kLlama;
  int64_t layers = 0, hidden = 0, heads = 0, kv_heads = 0, head_dim = 0, ffn = 0, vocab = 0;
  int64_t max_position = 0;  // 0: not given
  bool tied = false;         // tie_word_embeddings: lm_head shares the embedding
  bool attention_bias = false, mlp_bias = false;  // Llama's optional biases
};

struct ParamCount {
  double total = 0;
  std::vector<std::string> lines;
};

ParamCount count_params(const Shapes& s);

}  // namespace isim::calib
