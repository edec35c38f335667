// A Hugging Face `config.json` read as a model shape (`isim model import`): the dense decoder
// families whose shapes the simulator's cost models cover, written out as a model YAML in the
// calibrate/models/ format (calibrate/model.h).
//
// Contract:
// - import_hf_config(path, options) reads the config at PATH; import_hf_config_text does the
//   same on its text (PATH only names it in messages).
// - The family is read from `architectures` (its first entry) or, when that key is absent, from
//   `model_type`: LlamaForCausalLM/llama, Qwen2ForCausalLM/qwen2, MistralForCausalLM/mistral,
//   GPTJForCausalLM/gptj. Every shape key the family needs is required (a positive integer);
//   the optional ones take the default transformers gives them (num_key_value_heads: the heads;
//   head_dim: hidden / heads; n_inner null: 4 x n_embd; tie_word_embeddings: false).
// - params is not in a config: it is computed from the shapes (every weight matrix, bias and
//   norm of each layer, the embedding, the lm_head unless tied), and the YAML shows the sum.
// - name: options.name, else the last part of `_name_or_path`, else the config's folder name
//   (both lowercased). dtype: options.dtype, else `torch_dtype` (or `dtype`). Each YAML value
//   carries a comment saying where it came from; what the format cannot hold (sliding window,
//   rope scaling, partial rotary) is listed in `notes` and in the YAML header.
// - Errors are InputError (exit 2) naming the file and the key: "PATH: KEY: reason; expected
//   WHAT". A mixture-of-experts config (num_local_experts, num_experts, n_routed_experts, or a
//   Mixtral/Qwen-MoE/DeepSeek type) is refused as not supported yet; an unknown family lists
//   the supported ones; malformed JSON is "PATH:LINE: not valid JSON (column C): reason".
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
