// Reading a Hugging Face config.json into a model shape (see hf_config.h for the contract).
#include "calibrate/hf_config.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "calibrate/hf_config_keys.h"
#include "calibrate/hf_config_params.h"
#include "core/input_error.h"
#include "core/input_file.h"
#include "core/json_shown.h"
#include "core/json_unique.h"

namespace isim::calib {

namespace {

using json = nlohmann::json;

json parse(const std::string& text, const std::string& path) {
  try {
    return parse_json_unique<json>(text, path);
  } catch (const json::parse_error& e) {
    const size_t end = std::min(e.byte == 0 ? 0 : e.byte - 1, text.size());
    const size_t line = 1 + static_cast<size_t>(std::count(text.begin(), text.begin() + end, '\n'));
    const size_t nl = text.rfind('\n', end == 0 ? 0 : end - 1);
    const size_t column = end == 0 ? 1 : end - (nl == std::string::npos ? 0 : nl + 1) + 1;
    const std::string what = e.what();
    const size_t colon = what.find(": ");
    throw InputError(fmt::format("{}:{}: not valid JSON (column {}): {}", path, line, column,
                                 colon == std::string::npos ? what : what.substr(colon + 2)));
  }
}

struct Known {
  Family family;
  const char* architecture;
  const char* model_type;
};
constexpr Known kKnown[] = {{Family::kLlama, "LlamaForCausalLM", "llama"},
                            {Family::kQwen2, "Qwen2ForCausalLM", "qwen2"},
                            {Family::kQwen3, "Qwen3ForCausalLM", "qwen3"},
                            {Family::kMistral, "MistralForCausalLM", "mistral"},
                            {Family::kGptj, "GPTJForCausalLM", "gptj"},
                            {Family::kQwen2Moe, "Qwen2MoeForCausalLM", "qwen2_moe"},
                            {Family::kQwen3Moe, "Qwen3MoeForCausalLM", "qwen3_moe"},
                            {Family::kMixtral, "MixtralForCausalLM", "mixtral"},
                            {Family::kPhiMoe, "PhiMoEForCausalLM", "phimoe"},
                            {Family::kGlm4Moe, "Glm4MoeForCausalLM", "glm4_moe"},
                            {Family::kDeepseekV2, "DeepseekV2ForCausalLM", "deepseek_v2"},
                            {Family::kDeepseekV3, "DeepseekV3ForCausalLM", "deepseek_v3"},
                            {Family::kGlmMoeDsa, "GlmMoeDsaForCausalLM", "glm_moe_dsa"}};
// Other spellings of the same modules: transformers' own PhiMoE class, Kimi K2's model_type.
constexpr Known kAliases[] = {{Family::kPhiMoe, "PhimoeForCausalLM", "phimoe"},
                              {Family::kDeepseekV3, "DeepseekV3ForCausalLM", "kimi_k2"}};

std::string supported() {
  std::string s;
  for (const Known& k : kKnown)
    s += fmt::format("{}{} ({}{})", s.empty() ? "" : ", ", k.architecture,
                     s.empty() ? "model_type " : "", k.model_type);
  return s;
}

// The entry whose `field` is `name`, among the families and then their aliases.
const Known* lookup(const std::string& name, const char* Known::*field) {
  for (const Known& k : kKnown)
    if (name == k.*field) return &k;
  for (const Known& k : kAliases)
    if (name == k.*field) return &k;
  return nullptr;
}

// The family from `architectures` (first entry) or, without it, from `model_type`.
Known identify(HfKeys& c) {
  if (c.given("architectures")) {
    const auto& a = c.at("architectures");
    if (!a.is_array() || a.empty() || !a[0].is_string())
      c.fail("architectures",
             "expected a list of class names such as [\"LlamaForCausalLM\"], got " + shown(a));
    const auto name = a[0].get<std::string>();
    if (const Known* k = lookup(name, &Known::architecture))
      return c.record("architectures", name), *k;
    c.fail("architectures", "unknown architecture '" + name + "'; supported: " + supported());
  }
  const auto type = c.optional_string("model_type");
  if (!type)
    c.fail(c.prefix().empty() ? "architectures" : "model_type",
           std::string(c.prefix().empty() ? "missing, and no model_type either"
                                          : "missing (and no architectures)") +
               "; expected one of: " + supported());
  if (const Known* k = lookup(*type, &Known::model_type)) return c.record("model_type", *type), *k;
  c.fail("model_type",
         "unknown model_type '" + *type + "' (and no architectures); supported: " + supported());
}

int32_t narrow(int64_t v) {
  return static_cast<int32_t>(v);
}

std::string dtype_of(HfKeys& c, const std::string& flag, std::string* origin) {
  static const std::vector<std::pair<std::string, std::string>> kTorch = {{"bfloat16", "bf16"},
                                                                          {"float16", "fp16"},
                                                                          {"float32", "fp32"},
                                                                          {"float8_e4m3fn", "fp8"},
                                                                          {"float8_e5m2", "fp8"}};
  const char* key = c.given("torch_dtype") ? "torch_dtype" : "dtype";
  const auto torch = c.given(key) && c.at(key).is_string() ? c.optional_string(key) : std::nullopt;
  if (!flag.empty()) {
    if (flag != "fp16" && flag != "bf16" && flag != "fp32" && flag != "fp8")
      throw InputError("--dtype: expected fp16, bf16, fp32 or fp8, got '" + flag + "'");
    *origin = "--dtype" + (torch ? fmt::format(" (config.json {} {})", key, *torch) : "");
    return flag;
  }
  if (!c.given(key))
    c.fail("torch_dtype",
           "missing (and no dtype key); expected bfloat16, float16 or float32, or "
           "pass --dtype fp16|bf16|fp32|fp8");
  const auto name = c.optional_string(key);
  for (const auto& [torch_name, ours] : kTorch) {
    if (*name != torch_name) continue;
    c.record(key, *name);
    *origin = std::string(key) + " " + *name;
    return ours;
  }
  c.fail(key, "unknown '" + *name +
                  "'; expected bfloat16, float16, float32, float8_e4m3fn or "
                  "float8_e5m2, or pass --dtype fp16|bf16|fp32|fp8");
}

std::string lowercase(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

std::string model_name_of(HfKeys& c, const std::string& path, const std::string& flag,
                          std::string* origin) {
  if (!flag.empty()) return *origin = "--name", flag;
  if (auto hub = c.optional_string("_name_or_path")) {
    while (!hub->empty() && hub->back() == '/') hub->pop_back();
    const std::string last = hub->substr(hub->rfind('/') + 1);  // npos + 1 == 0
    if (!last.empty()) {
      c.record("_name_or_path", *hub);
      *origin = "_name_or_path '" + *hub + "', its last part lowercased";
      return lowercase(last);
    }
  }
  // A file named for its model (Qwen3-32B.json, moonshotai--Kimi-K2-Instruct_config.json): its
  // stem, without a hub owner's "owner--" and a "_config" suffix.
  std::string stem = std::filesystem::path(path).stem().string();
  if (stem != "config" && !stem.empty()) {
    if (const size_t dashes = stem.find("--"); dashes != std::string::npos)
      stem = stem.substr(dashes + 2);
    if (stem.size() > 7 && stem.ends_with("_config")) stem.resize(stem.size() - 7);
    if (!stem.empty()) {
      *origin = "the file name '" + std::filesystem::path(path).filename().string() +
                "' (no _name_or_path), lowercased";
      return lowercase(stem);
    }
  }
  const std::string folder =
      std::filesystem::absolute(path).lexically_normal().parent_path().filename().string();
  const bool hash = folder.size() == 40 && std::all_of(folder.begin(), folder.end(), [](char ch) {
                      return std::isxdigit(static_cast<unsigned char>(ch)) != 0;
                    });
  if (folder.empty() || hash)
    c.fail("_name_or_path", "missing, and the folder of the config ('" + folder +
                                "') is no model name; pass --name NAME");
  *origin = "the folder of config.json ('" + folder + "'), lowercased";
  return lowercase(folder);
}

// A multimodal wrapper's text model (text_config), noted; null when the config is the text model.
const json* text_model(const json& j, const std::string& path, HfImport& imp) {
  if (!j.contains("text_config") || j["text_config"].is_null()) return nullptr;
  const json& t = j["text_config"];
  if (!t.is_object())
    throw InputError(path +
                     ": text_config: expected a map (a multimodal wrapper's text model "
                     "config), got " +
                     shown(t));
  const auto& a = j.contains("architectures") ? j["architectures"] : json();
  const std::string wrapper =
      a.is_array() && !a.empty() && a[0].is_string() ? a[0].get<std::string>() : "a wrapper";
  imp.notes.push_back(wrapper +
                      ": a multimodal wrapper; the text model is read from text_config, and the "
                      "vision encoder and projector are not counted in params");
  return &t;
}

void set_shape(const Shapes& s, const ParamCount& pc, sim::ModelShape& shape) {
  shape.layers = narrow(s.layers);
  shape.hidden = narrow(s.hidden);
  shape.heads = narrow(s.heads);
  shape.kv_heads = narrow(s.kv_heads);
  shape.head_dim = narrow(s.head_dim);
  shape.ffn = narrow(s.ffn);
  shape.vocab = narrow(s.vocab);
  shape.tp = 1;
  shape.params = pc.total;
  if (s.experts > 0) {
    shape.moe = {narrow(s.experts), narrow(s.experts_per_token), narrow(s.expert_ffn),
                 narrow(s.shared_ffn), narrow(s.dense_layers)};
    shape.active_params = pc.active;
  }
  if (s.kv_lora_rank > 0) {
    shape.mla = {narrow(s.kv_lora_rank), narrow(s.qk_rope_head_dim)};
    // Written only where it differs from the default head_dim - rope (GLM-5), so the DeepSeek
    // and Kimi model files keep their bytes.
    if (s.v_head_dim != s.qk_nope_head_dim) shape.mla.v_head_dim = narrow(s.v_head_dim);
  }
}

}  // namespace

HfImport import_hf_config_text(const std::string& text, const std::string& path,
                               const HfImportOptions& options) {
  const json j = parse(text, path);
  if (!j.is_object())
    throw InputError(path + ": expected a JSON object (a Hugging Face config.json), got " +
                     shown(j));
  HfImport imp;
  imp.path = path;
  HfKeys outer(j, path);
  const json* inner = text_model(j, path, imp);
  std::optional<HfKeys> wrapped;
  if (inner != nullptr) wrapped.emplace(*inner, path, "text_config.");
  HfKeys& c = wrapped ? *wrapped : outer;
  const Known known = identify(c);
  imp.architecture = known.architecture;
  const bool mla = known.family == Family::kDeepseekV2 || known.family == Family::kDeepseekV3 ||
                   known.family == Family::kGlmMoeDsa;
  const Shapes s = known.family == Family::kGptj ? read_gptj_shapes(c, imp)
                   : mla                         ? read_mla_shapes(c, known.family, imp)
                                                 : read_gqa_shapes(c, known.family, imp);
  std::string name_origin, dtype_origin, weight_origin;
  auto& shape = imp.model.shape;
  shape.name = model_name_of(outer, path, options.name, &name_origin);
  const bool dtype_outside = outer.given("torch_dtype") || outer.given("dtype");
  shape.dtype = dtype_of(dtype_outside ? outer : c, options.dtype, &dtype_origin);
  shape.weight_dtype =
      read_weight_dtype(outer.given("quantization_config") ? outer : c, &weight_origin);
  if (!options.weight_dtype.empty()) {
    const std::string& w = options.weight_dtype;
    if (w != "fp8" && w != "int8" && w != "int4")
      throw InputError("--weight-dtype: expected fp8, int8 or int4, got '" + w + "'");
    weight_origin =
        "--weight-dtype" + (shape.weight_dtype.empty()
                                ? std::string(" (the config has no quantization_config)")
                                : " (config.json: " + weight_origin + ")");
    shape.weight_dtype = w;
  }
  imp.origin.insert(imp.origin.begin(), {"name", name_origin});
  imp.origin.emplace_back("dtype", dtype_origin);
  if (!shape.weight_dtype.empty()) imp.origin.emplace_back("weight_dtype", weight_origin);
  const ParamCount pc = count_params(s);
  set_shape(s, pc, shape);
  constexpr double kMaxKvBytesPerToken = 134217728.0;  // 2^27, as load_model checks
  if (shape.kv_bytes_per_token_unsplit() > kMaxKvBytesPerToken)
    c.fail(known.family == Family::kGptj ? "n_layer" : "num_hidden_layers",
           fmt::format("KV bytes per token {:.6g} ({} x dtype bytes); expected at most 2^27",
                       shape.kv_bytes_per_token_unsplit(),
                       mla ? "layers x (kv_lora_rank + qk_rope_head_dim)"
                           : "2 x layers x kv_heads x head_dim"));
  imp.params_sum = pc.lines;
  imp.model.max_position = s.max_position;
  std::string used;
  for (const HfKeys* k : {&outer, wrapped ? &*wrapped : nullptr})
    if (k != nullptr)
      for (const auto& u : k->used()) used += (used.empty() ? "" : ", ") + u;
  imp.model.source = fmt::format(
      "Hugging Face config {}: {}; params computed from these shapes "
      "(isim model import)",
      path, used);
  return imp;
}

HfImport import_hf_config(const std::string& path, const HfImportOptions& options) {
  return import_hf_config_text(read_input_file(path, "a config.json file"), path, options);
}

}  // namespace isim::calib
