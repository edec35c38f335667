// The config keys of the standard-attention families (see hf_config_keys.h): Llama, Qwen2/3,
// Mistral, their MoE kin (Qwen2/3-MoE, Mixtral, PhiMoE, GLM-4 MoE) and GPT-J; and HfKeys.
#include <fmt/format.h>

#include "calibrate/hf_config_keys.h"
#include "core/input_error.h"
#include "core/json_shown.h"

namespace isim::calib {

void HfKeys::fail(const std::string& key, const std::string& why) const {
  throw InputError(fmt::format("{}: {}: {}", path_, name(key), why));
}

int64_t HfKeys::checked(const std::string& key, int64_t min, int64_t max, const char* what) {
  const json& v = at(key);
  if (!v.is_number_integer())
    fail(key, std::string("expected ") + what + ", got " + shown(v));
  const bool in_range = v.is_number_unsigned() ? v.get<uint64_t>() <= static_cast<uint64_t>(max) &&
                                                     v.get<uint64_t>() >= static_cast<uint64_t>(min)
                                               : v.get<int64_t>() >= min && v.get<int64_t>() <= max;
  if (!in_range) {
    if (min == 1)
      fail(key, fmt::format("expected a positive integer up to {}, got {}", max, v.dump()));
    fail(key, fmt::format("expected an integer from {} to {}, got {}", min, max, v.dump()));
  }
  record(key, v.dump());
  return v.get<int64_t>();
}

int64_t HfKeys::count(const std::string& key, int64_t max) {
  if (!j_.contains(key)) fail(key, "missing; expected a positive integer");
  return checked(key, 1, max, "a positive integer");
}

std::optional<int64_t> HfKeys::optional_count(const std::string& key, int64_t max) {
  if (!given(key)) return std::nullopt;
  return checked(key, 1, max, "a positive integer");
}

int64_t HfKeys::non_negative(const std::string& key, int64_t max) {
  if (!j_.contains(key)) fail(key, "missing; expected an integer >= 0");
  return checked(key, 0, max, "an integer >= 0");
}

bool HfKeys::flag(const std::string& key, bool def) {
  if (!given(key)) return def;
  if (!at(key).is_boolean()) fail(key, "expected true or false, got " + shown(at(key)));
  record(key, at(key).dump());
  return at(key).get<bool>();
}

std::optional<std::string> HfKeys::optional_string(const std::string& key) {
  if (!given(key)) return std::nullopt;
  if (!at(key).is_string()) fail(key, "expected a string, got " + shown(at(key)));
  return at(key).get<std::string>();
}

namespace {

// rope_theta and rope_scaling do not change a shape; they are kept in `source`.
void record_rope(HfKeys& c) {
  if (c.given("rope_theta")) {
    if (!c.at("rope_theta").is_number())
      c.fail("rope_theta", "expected a number, got " + shown(c.at("rope_theta")));
    c.record("rope_theta", c.at("rope_theta").dump());
  }
  if (!c.given("rope_scaling")) return;
  const auto& r = c.at("rope_scaling");
  if (!r.is_object())
    c.fail("rope_scaling",
           "expected a map such as {\"rope_type\": \"llama3\", \"factor\": 8.0} "
           "or null, got " +
               shown(r));
  std::string parts;
  for (const auto& [k, v] : r.items())
    parts +=
        (parts.empty() ? "" : ", ") + k + ": " + (v.is_string() ? v.get<std::string>() : v.dump());
  c.record("rope_scaling", "{" + parts + "}");
}

bool is_moe(Family f) {
  return f == Family::kQwen2Moe || f == Family::kQwen3Moe || f == Family::kMixtral ||
         f == Family::kPhiMoe || f == Family::kGlm4Moe;
}

// Biases and norms, as each family's transformers module has them.
void read_attention_options(HfKeys& c, Family f, Shapes& s) {
  switch (f) {
    case Family::kLlama:
    case Family::kQwen3:
    case Family::kQwen3Moe:
    case Family::kPhiMoe:  // q, k, v and o all take attention_bias
      s.qkv_bias = s.o_bias = c.flag("attention_bias", false);
      break;
    case Family::kQwen2:
    case Family::kQwen2Moe:
      s.qkv_bias = true;
      break;
    case Family::kGlm4Moe:  // q, k, v only
      s.qkv_bias = c.flag("attention_bias", false);
      s.qk_norm = c.flag("use_qk_norm", false);
      break;
    default:
      break;
  }
  if (f == Family::kLlama) s.mlp_bias = c.flag("mlp_bias", false);
  if (f == Family::kQwen3 || f == Family::kQwen3Moe) s.qk_norm = true;
  if (f == Family::kPhiMoe) {
    s.norm_bias = true;  // LayerNorm, weight and bias
    s.lm_head_bias = c.flag("lm_head_bias", false);
  }
}

void note_window(HfKeys& c, Family f, HfImport& imp) {
  std::optional<int64_t> window;
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  if (f == Family::kMistral || f == Family::kMixtral || f == Family::kPhiMoe)
    window = c.optional_count("sliding_window", kMax);
  if ((f == Family::kQwen2 || f == Family::kQwen3 || f == Family::kQwen2Moe ||
       f == Family::kQwen3Moe) &&
      c.flag("use_sliding_window", false))
    window = c.optional_count("sliding_window", kMax);
  if (window)
    imp.notes.push_back(fmt::format(
        "sliding_window {}: the simulator keeps every token's KV (full attention), an upper "
        "bound on this model's KV beyond {} tokens",
        *window, *window));
}

}  // namespace

Shapes read_gqa_shapes(HfKeys& c, Family f, HfImport& imp) {
  Shapes s;
  s.family = f;
  s.layers = c.count("num_hidden_layers");
  s.hidden = c.count("hidden_size");
  s.heads = c.count("num_attention_heads");
  auto& origin = imp.origin;
  origin.insert(origin.end(), {{"layers", c.name("num_hidden_layers")},
                               {"hidden", c.name("hidden_size")},
                               {"heads", c.name("num_attention_heads")}});
  if (const auto kv = c.optional_count("num_key_value_heads")) {
    s.kv_heads = *kv;
    origin.emplace_back("kv_heads", c.name("num_key_value_heads"));
  } else {
    s.kv_heads = s.heads;
    origin.emplace_back("kv_heads",
                        c.name("num_attention_heads") + " (no num_key_value_heads: multi-head)");
  }
  if (s.heads % s.kv_heads != 0)
    c.fail("num_key_value_heads", fmt::format("{} does not divide num_attention_heads {}; expected "
                                              "a divisor of it",
                                              s.kv_heads, s.heads));
  if (const auto hd = c.optional_count("head_dim")) {
    s.head_dim = *hd;
    origin.emplace_back("head_dim", c.name("head_dim"));
  } else {
    if (s.hidden % s.heads != 0)
      c.fail("hidden_size", fmt::format("{} is not a multiple of num_attention_heads {}, and there "
                                        "is no head_dim key; expected one or the other",
                                        s.hidden, s.heads));
    s.head_dim = s.hidden / s.heads;
    origin.emplace_back("head_dim",
                        c.name("hidden_size") + " / num_attention_heads (no head_dim key)");
  }
  s.ffn = c.count("intermediate_size");
  s.vocab = c.count("vocab_size");
  const bool expert_wide = f == Family::kMixtral || f == Family::kPhiMoe;
  origin.insert(origin.end(), {{"ffn", c.name("intermediate_size") +
                                           (expert_wide ? " (each expert's; every layer is MoE)"
                                            : is_moe(f) ? " (a dense layer's)"
                                                        : "")},
                               {"vocab", c.name("vocab_size")}});
  s.max_position =
      c.optional_count("max_position_embeddings", std::numeric_limits<int64_t>::max()).value_or(0);
  if (s.max_position > 0) origin.emplace_back("max_position", c.name("max_position_embeddings"));
  s.tied = c.flag("tie_word_embeddings", false);
  read_attention_options(c, f, s);
  record_rope(c);
  note_window(c, f, imp);
  if (is_moe(f)) {
    read_experts(c, f, s, imp);
    return s;
  }
  // A dense class with experts is a config this reader would misread: refuse it.
  for (const char* key : {"num_local_experts", "num_experts", "n_routed_experts"}) {
    if (!c.given(key)) continue;
    const auto& v = c.at(key);
    if (v.is_number() && v.get<double>() == 0) continue;  // 0 experts: a dense model
    c.fail(key, shown(v) + " experts in a config of the dense " + imp.architecture +
                    "; expected a mixture-of-experts architecture (MixtralForCausalLM, "
                    "Qwen3MoeForCausalLM, DeepseekV3ForCausalLM, ...)");
  }
  return s;
}

Shapes read_gptj_shapes(HfKeys& c, HfImport& imp) {
  Shapes s;
  s.family = Family::kGptj;
  s.layers = c.count("n_layer");
  s.hidden = c.count("n_embd");
  s.heads = c.count("n_head");
  s.kv_heads = s.heads;
  if (s.hidden % s.heads != 0)
    c.fail("n_embd", fmt::format("{} is not a multiple of n_head {}; expected a multiple of n_head "
                                 "(head_dim is n_embd / n_head)",
                                 s.hidden, s.heads));
  s.head_dim = s.hidden / s.heads;
  imp.origin.insert(imp.origin.end(), {{"layers", c.name("n_layer")},
                                       {"hidden", c.name("n_embd")},
                                       {"heads", c.name("n_head")},
                                       {"kv_heads", c.name("n_head") + " (GPT-J is multi-head)"},
                                       {"head_dim", c.name("n_embd") + " / n_head"}});
  if (const auto inner = c.optional_count("n_inner")) {
    s.ffn = *inner;
    imp.origin.emplace_back("ffn", c.name("n_inner"));
  } else {
    if (s.hidden > HfKeys::kIntMax / 4)
      c.fail("n_embd", "4 x n_embd (n_inner null) exceeds 2^31 - 1");
    s.ffn = 4 * s.hidden;
    imp.origin.emplace_back("ffn", "4 x " + c.name("n_embd") + " (n_inner null)");
  }
  s.vocab = c.count("vocab_size");
  imp.origin.emplace_back("vocab", c.name("vocab_size"));
  s.max_position = c.optional_count("n_positions", std::numeric_limits<int64_t>::max()).value_or(0);
  if (s.max_position > 0) imp.origin.emplace_back("max_position", c.name("n_positions"));
  c.optional_count("rotary_dim");  // partial rotary: no shape of its own; kept in source
  s.tied = c.flag("tie_word_embeddings", false);
  return s;
}

}  // namespace isim::calib
