// A Hugging Face `config.json` read as a model shape (`isim model import`): the decoder
// families whose shapes the simulator's cost models cover, written out as a model YAML in the
// calibrate/models/ format (calibrate/model.h).
//
// Contract:
// - import_hf_config(path, options) reads the config at PATH; import_hf_config_text does the
//   same on its text (PATH only names it in messages).
// - The family is read from `architectures` (its first entry) or, when that key is absent, from
//   `model_type`. Dense: LlamaForCausalLM/llama, Qwen2ForCausalLM/qwen2, Qwen3ForCausalLM/qwen3
//   (per-head q/k norms), MistralForCausalLM/mistral, GPTJForCausalLM/gptj. Mixture of experts:
//   Qwen2MoeForCausalLM, Qwen3MoeForCausalLM, MixtralForCausalLM, PhiMoEForCausalLM,
//   Glm4MoeForCausalLM; with multi-head latent attention: DeepseekV2ForCausalLM,
//   DeepseekV3ForCausalLM (also Kimi K2's model_type kimi_k2), GlmMoeDsaForCausalLM (GLM-5:
//   its DeepSeek sparse attention is costed as dense attention over the MLA cache, said in
//   notes). Every shape key the family needs is required (a positive integer; num_experts_per_tok
//   and the expert count included); the optional ones take the default transformers gives them
//   (num_key_value_heads: the heads; head_dim: hidden / heads; n_inner null: 4 x n_embd;
//   tie_word_embeddings, attention_bias: false; decoder_sparse_step, moe_layer_freq: 1).
// - MoE: moe.experts, experts_per_token, expert_ffn (moe_intermediate_size, or Mixtral's
//   intermediate_size), shared_ffn (n_shared_experts x moe_intermediate_size, or
//   shared_expert_intermediate_size), dense_layers (how many layers keep a dense FFN:
//   first_k_dense_replace and moe_layer_freq, or mlp_only_layers and decoder_sparse_step; a
//   count, not positions). MLA: mla.kv_lora_rank and qk_rope_head_dim (the KV cache), head_dim
//   = qk_nope_head_dim + qk_rope_head_dim. Multi-token-prediction layers
//   (num_nextn_predict_layers) are not counted, said in notes.
// - A multimodal wrapper (a `text_config` map) is read from its text model; keys are then named
//   text_config.KEY, and the notes say the vision side is not counted. `quantization_config`
//   gives weight_dtype: fp8 (quant_method fp8, fbgemm_fp8, compressed-tensors 8-bit float),
//   int8 (compressed-tensors 8-bit int, gptq/awq bits 8), int4 (compressed-tensors 4-bit int,
//   gptq/awq bits 4); any other is refused naming the key.
// - params is not in a config: it is computed from the shapes (every weight matrix, bias and
//   norm of each layer, the embedding, the lm_head unless tied; hf_config_params.h), and the
//   YAML shows the sum; active_params (MoE only) likewise.
// - name: options.name, else the last part of `_name_or_path`, else the file's stem when the
//   file is not config.json (an "owner--" prefix and "_config" suffix dropped), else the
//   config's folder name (all lowercased). dtype: options.dtype, else `torch_dtype` (or
//   `dtype`). Each YAML value carries a comment saying where it came from; what the format
//   cannot hold (sliding window, rope scaling, partial rotary, sparse attention) is listed in
//   `notes` and in the YAML header.
// - Errors are InputError (exit 2) naming the file and the key: "PATH: KEY: reason; expected
//   WHAT". An unknown family lists the supported ones; malformed JSON is "PATH:LINE: not valid
//   JSON (column C): reason".
// - hf_model_yaml(imp) is deterministic: the same config and options give the same bytes, and
//   load_model reads it back to imp.model.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "calibrate/model.h"

namespace isim::calib {

struct HfImportOptions {
  std::string name;   // empty: derived (see above)
  std::string dtype;  // empty: from torch_dtype; else fp16, bf16, fp32 or fp8
  // empty: from quantization_config; else fp8, int8 or int4 (e.g. vLLM's --quantization fp8
  // of a bf16 checkpoint), overriding it
  std::string weight_dtype;
};

struct HfImport {
  ModelSpec model;
  std::string path;          // the config.json, as given
  std::string architecture;  // e.g. LlamaForCausalLM
  // "KEY: where from" comments for each YAML key, and the params sum, for the YAML.
  std::vector<std::pair<std::string, std::string>> origin;
  std::vector<std::string> params_sum;  // lines of the params computation
  std::vector<std::string> notes;       // what the model format does not hold
};

HfImport import_hf_config(const std::string& path, const HfImportOptions& options);
HfImport import_hf_config_text(const std::string& text, const std::string& path,
                               const HfImportOptions& options);

std::string hf_model_yaml(const HfImport& imp);

}  // namespace isim::calib
