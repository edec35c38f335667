// The config keys of mixture-of-experts models and of multi-head latent attention (see
// hf_config_keys.h): which experts, how wide, which layers stay dense, and MLA's latent KV.
#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "calibrate/hf_config_keys.h"
#include "core/json_shown.h"

namespace isim::calib {

namespace {

bool deepseek_style(Family f) {
  return f == Family::kGlm4Moe || f == Family::kDeepseekV2 || f == Family::kDeepseekV3 ||
         f == Family::kGlmMoeDsa;
}

// Qwen2/3-MoE: layer l is dense when it is in mlp_only_layers or (l + 1) % decoder_sparse_step
// is not 0 (transformers' Qwen3MoeDecoderLayer).
int64_t qwen_dense_layers(HfKeys& c, int64_t layers, std::string* origin) {
  const int64_t step = c.optional_count("decoder_sparse_step").value_or(1);
  std::vector<int64_t> only;
  if (c.given("mlp_only_layers")) {
    const auto& v = c.at("mlp_only_layers");
    if (!v.is_array())
      c.fail("mlp_only_layers", "expected a list of layer indices, got " + shown(v));
    for (const auto& e : v) {
      if (!e.is_number_integer() || e.get<int64_t>() < 0 || e.get<int64_t>() >= layers)
        c.fail("mlp_only_layers",
               fmt::format("expected layer indices 0..{}, got {}", layers - 1, shown(e)));
      only.push_back(e.get<int64_t>());
    }
    c.record("mlp_only_layers", v.dump());
  }
  int64_t dense = 0;
  for (int64_t l = 0; l < layers; ++l)
    if (std::find(only.begin(), only.end(), l) != only.end() || (l + 1) % step != 0) ++dense;
  *origin = fmt::format(
      "{} {} and {} {}: the layers l in it or with (l + 1) % step != 0 (a count; "
      "their positions do not change a cost)",
      c.name("mlp_only_layers"),
      c.given("mlp_only_layers") ? c.at("mlp_only_layers").dump() : "absent",
      c.name("decoder_sparse_step"), step);
  return dense;
}

// DeepSeek and GLM: layer l is dense when l < first_k_dense_replace or l % moe_layer_freq != 0.
int64_t deepseek_dense_layers(HfKeys& c, int64_t layers, std::string* origin) {
  const int64_t first = c.non_negative("first_k_dense_replace");
  const int64_t freq = c.optional_count("moe_layer_freq").value_or(1);
  int64_t dense = 0;
  for (int64_t l = 0; l < layers; ++l)
    if (l < first || l % freq != 0) ++dense;
  *origin = freq == 1 ? c.name("first_k_dense_replace") + " (the leading dense layers)"
                      : fmt::format("{} {} and {} {}: the layers l < first or with l % freq != 0",
                                    c.name("first_k_dense_replace"), first,
                                    c.name("moe_layer_freq"), freq);
  return dense;
}

}  // namespace

void read_experts(HfKeys& c, Family f, Shapes& s, HfImport& imp) {
  const bool mixtral_like = f == Family::kMixtral || f == Family::kPhiMoe;
  const char* experts_key = mixtral_like        ? "num_local_experts"
                            : deepseek_style(f) ? "n_routed_experts"
                                                : "num_experts";
  s.experts = c.count(experts_key);
  s.experts_per_token = c.count("num_experts_per_tok");
  if (s.experts_per_token > s.experts)
    c.fail("num_experts_per_tok", fmt::format("{} is more than the {} experts ({}); expected at "
                                              "most that",
                                              s.experts_per_token, s.experts, experts_key));
  auto& o = imp.origin;
  o.emplace_back("moe.experts", c.name(experts_key));
  o.emplace_back("moe.experts_per_token", c.name("num_experts_per_tok"));
  if (mixtral_like) {
    s.expert_ffn = s.ffn;
    o.emplace_back("moe.expert_ffn", c.name("intermediate_size"));
  } else {
    s.expert_ffn = c.count("moe_intermediate_size");
    o.emplace_back("moe.expert_ffn", c.name("moe_intermediate_size"));
  }
  if (f == Family::kQwen2Moe) {
    s.shared_ffn = c.count("shared_expert_intermediate_size");
    s.shared_expert_gate = true;
    o.emplace_back("moe.shared_ffn", c.name("shared_expert_intermediate_size") +
                                         " (one shared expert with a sigmoid gate)");
  } else if (deepseek_style(f)) {
    const int64_t n = c.non_negative("n_shared_experts", 64);
    s.shared_ffn = n * s.expert_ffn;
    if (s.shared_ffn > HfKeys::kIntMax)
      c.fail("n_shared_experts", "n_shared_experts x moe_intermediate_size exceeds 2^31 - 1");
    o.emplace_back("moe.shared_ffn", fmt::format("{} {} x {}", c.name("n_shared_experts"), n,
                                                 c.name("moe_intermediate_size")));
  } else {
    o.emplace_back(
        "moe.shared_ffn",
        "no shared expert in " + std::string(mixtral_like ? "Mixtral/PhiMoE" : "Qwen3-MoE"));
  }
  std::string dense_origin;
  s.dense_layers = deepseek_style(f) ? deepseek_dense_layers(c, s.layers, &dense_origin)
                   : mixtral_like    ? 0
                                     : qwen_dense_layers(c, s.layers, &dense_origin);
  if (mixtral_like) dense_origin = "every layer is MoE";
  if (s.dense_layers >= s.layers)
    c.fail(deepseek_style(f) ? "first_k_dense_replace" : "mlp_only_layers",
           fmt::format("every one of the {} layers is dense; expected at least one MoE layer "
                       "(else import it as a dense model)",
                       s.layers));
  o.emplace_back("moe.dense_layers", dense_origin);
  // DeepSeek-V3's noaux_tc routing (GLM's too) keeps a per-expert bias beside the gate; V2's
  // greedy routing does not. topk_method, where given, says which.
  s.router_bias = f == Family::kDeepseekV3 || f == Family::kGlm4Moe || f == Family::kGlmMoeDsa;
  if (deepseek_style(f))
    if (const auto method = c.optional_string("topk_method")) {
      c.record("topk_method", *method);
      s.router_bias = *method == "noaux_tc";
    }
  if (const auto mtp = c.optional_count("num_nextn_predict_layers"))
    imp.notes.push_back(fmt::format(
        "num_nextn_predict_layers {}: the multi-token-prediction layers are not counted (params "
        "and layers are the model's {} decoder layers; vLLM loads MTP only for speculative "
        "decoding)",
        *mtp, s.layers));
}

Shapes read_mla_shapes(HfKeys& c, Family f, HfImport& imp) {
  Shapes s;
  s.family = f;
  s.layers = c.count("num_hidden_layers");
  s.hidden = c.count("hidden_size");
  s.heads = c.count("num_attention_heads");
  auto& o = imp.origin;
  o.insert(o.end(), {{"layers", c.name("num_hidden_layers")},
                     {"hidden", c.name("hidden_size")},
                     {"heads", c.name("num_attention_heads")}});
  s.kv_heads = c.optional_count("num_key_value_heads").value_or(s.heads);
  o.emplace_back("kv_heads", c.given("num_key_value_heads")
                                 ? c.name("num_key_value_heads") +
                                       " (MLA: the cache holds one latent per token, see mla)"
                                 : c.name("num_attention_heads") + " (no num_key_value_heads)");
  if (s.heads % s.kv_heads != 0)
    c.fail("num_key_value_heads", fmt::format("{} does not divide num_attention_heads {}; expected "
                                              "a divisor of it",
                                              s.kv_heads, s.heads));
  s.q_lora_rank = c.given("q_lora_rank") ? c.count("q_lora_rank") : 0;  // null: one q_proj
  s.kv_lora_rank = c.count("kv_lora_rank");
  s.qk_nope_head_dim = c.count("qk_nope_head_dim");
  s.qk_rope_head_dim = c.count("qk_rope_head_dim");
  s.v_head_dim = c.count("v_head_dim");
  s.head_dim = s.qk_nope_head_dim + s.qk_rope_head_dim;
  o.emplace_back("head_dim", c.name("qk_nope_head_dim") + " + qk_rope_head_dim (the q/k head; " +
                                 "v_head_dim " + std::to_string(s.v_head_dim) + ")");
  if (c.given("head_dim")) c.optional_count("head_dim");  // recorded, not used: MLA has its own
  s.ffn = c.count("intermediate_size");
  s.vocab = c.count("vocab_size");
  o.insert(o.end(), {{"ffn", c.name("intermediate_size") + " (the dense layers')"},
                     {"vocab", c.name("vocab_size")}});
  s.max_position =
      c.optional_count("max_position_embeddings", std::numeric_limits<int64_t>::max()).value_or(0);
  if (s.max_position > 0) o.emplace_back("max_position", c.name("max_position_embeddings"));
  s.tied = c.flag("tie_word_embeddings", false);
  s.mla_bias = c.flag("attention_bias", false);
  if (s.mla_bias && s.q_lora_rank == 0)
    c.fail("attention_bias",
           "true with q_lora_rank null: not modelled (DeepSeek's q_proj has no "
           "bias); expected false");
  o.emplace_back("mla.kv_lora_rank", c.name("kv_lora_rank"));
  o.emplace_back("mla.qk_rope_head_dim", c.name("qk_rope_head_dim"));
  o.emplace_back("mla.v_head_dim", c.name("v_head_dim") + " (differs from qk_nope_head_dim)");
  if (c.given("rope_theta") && c.at("rope_theta").is_number())
    c.record("rope_theta", c.at("rope_theta").dump());
  read_experts(c, f, s, imp);  // every MLA family here is MoE
  if (f == Family::kGlmMoeDsa)
    imp.notes.push_back(
        "GlmMoeDsaForCausalLM: DeepSeek sparse attention (an indexer picks the top tokens each "
        "query attends to) is costed as dense attention over the whole MLA cache, an upper bound "
        "on attention time; the indexer's weights and its small key cache are not counted");
  return s;
}

}  // namespace isim::calib
