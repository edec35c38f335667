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

#include "calibrate/hf_config_params.h"
#include "traces/input_error.h"
#include "traces/json_shown.h"

namespace isim::calib {

namespace {

using json = nlohmann::json;
constexpr int64_t kIntMax = std::numeric_limits<int32_t>::max();

const char* kSupported =
    "LlamaForCausalLM (model_type llama), Qwen2ForCausalLM (qwen2), MistralForCausalLM (mistral), "
    "GPTJForCausalLM (gptj)";

// The config's keys, read with checks; errors name the file and the key. Every key read is
// recorded (with its value) for the model's `source`.
class Config {
 public:
  Config(const json& j, std::string path) : j_(j), path_(std::move(path)) {}

  [[noreturn]] void fail(const std::string& key, const std::string& why) const {
    throw InputError(fmt::format("{}: {}: {}", path_, key, why));
  }
  bool given(const std::string& key) const {
    const auto it = j_.find(key);
    return it != j_.end() && !it->is_null();
  }
  const json& at(const std::string& key) const { return j_.at(key); }

  // A required positive integer no larger than `max`.
  int64_t count(const std::string& key, int64_t max = kIntMax) {
    if (!j_.contains(key)) fail(key, "missing; expected a positive integer");
    return checked_count(key, max);
  }
  std::optional<int64_t> optional_count(const std::string& key, int64_t max = kIntMax) {
    if (!given(key)) return std::nullopt;
    return checked_count(key, max);
  }
  bool flag(const std::string& key, bool def) {
    if (!given(key)) return def;
    if (!at(key).is_boolean()) fail(key, "expected true or false, got " + trace::shown(at(key)));
    record(key, at(key).dump());
    return at(key).get<bool>();
  }
  std::optional<std::string> optional_string(const std::string& key) const {
    if (!given(key)) return std::nullopt;
    if (!at(key).is_string()) fail(key, "expected a string, got " + trace::shown(at(key)));
    return at(key).get<std::string>();
  }
  void record(const std::string& key, const std::string& value) {
    used_.push_back(key + " " + value);
  }
  const std::vector<std::string>& used() const { return used_; }

 private:
  int64_t checked_count(const std::string& key, int64_t max) {
    const json& v = at(key);
    if (!v.is_number_integer()) fail(key, "expected a positive integer, got " + trace::shown(v));
    const bool in_range = v.is_number_unsigned() ? v.get<uint64_t>() <= static_cast<uint64_t>(max)
                                                 : v.get<int64_t>() > 0 && v.get<int64_t>() <= max;
    if (!in_range || v.get<int64_t>() == 0)
      fail(key, fmt::format("expected a positive integer up to {}, got {}", max, v.dump()));
    record(key, v.dump());
    return v.get<int64_t>();
  }

  const json& j_;
  std::string path_;
  std::vector<std::string> used_;
};

json parse(const std::string& text, const std::string& path) {
  try {
    return json::parse(text);
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

// Mixture-of-experts configs are refused until the cost models have expert routing.
void refuse_moe(const Config& c) {
  const std::string why =
      "a mixture-of-experts model; MoE is not supported yet (supported: dense " +
      std::string(kSupported) + ")";
  for (const char* key : {"num_local_experts", "num_experts", "n_routed_experts"}) {
    if (!c.given(key)) continue;
    const json& v = c.at(key);
    if (v.is_number() && v.get<double>() == 0) continue;  // 0 experts: a dense model
    c.fail(key, trace::shown(v) + " experts: " + why);
  }
  static const std::vector<std::string> kMoeTypes = {"mixtral",  "qwen2_moe",   "qwen3_moe",
                                                     "deepseek", "deepseek_v2", "deepseek_v3"};
  if (c.given("model_type") && c.at("model_type").is_string()) {
    const auto type = c.at("model_type").get<std::string>();
    if (std::find(kMoeTypes.begin(), kMoeTypes.end(), type) != kMoeTypes.end())
      c.fail("model_type", "'" + type + "' is " + why);
  }
  static const std::vector<std::string> kMoeArchitectures = {
      "MixtralForCausalLM", "Qwen2MoeForCausalLM", "Qwen3MoeForCausalLM", "DeepseekV2ForCausalLM",
      "DeepseekV3ForCausalLM"};
  const auto a = c.given("architectures") ? c.at("architectures") : json();
  if (a.is_array() && !a.empty() && a[0].is_string() &&
      std::find(kMoeArchitectures.begin(), kMoeArchitectures.end(), a[0].get<std::string>()) !=
          kMoeArchitectures.end())
    c.fail("architectures", "'" + a[0].get<std::string>() + "' is " + why);
}

struct Known {
  Family family;
  const char* architecture;
  const char* model_type;
};
constexpr Known kKnown[] = {{Family::kLlama, "LlamaForCausalLM", "llama"},
                            {Family::kQwen2, "Qwen2ForCausalLM", "qwen2"},
                            {Family::kMistral, "MistralForCausalLM", "mistral"},
                            {Family::kGptj, "GPTJForCausalLM", "gptj"}};

// The family from `architectures` (first entry) or, without it, from `model_type`.
Known identify(Config& c) {
  if (c.given("architectures")) {
    const json& a = c.at("architectures");
    if (!a.is_array() || a.empty() || !a[0].is_string())
      c.fail(
          "architectures",
          "expected a list of class names such as [\"LlamaForCausalLM\"], got " + trace::shown(a));
    const auto name = a[0].get<std::string>();
    for (const Known& k : kKnown)
      if (name == k.architecture) return c.record("architectures", name), k;
    c.fail("architectures", "unknown architecture '" + name + "'; supported: " + kSupported);
  }
  const auto type = c.optional_string("model_type");
  if (!type)
    c.fail("architectures",
           std::string("missing, and no model_type either; expected one of: ") + kSupported);
  for (const Known& k : kKnown)
    if (*type == k.model_type) return c.record("model_type", *type), k;
  c.fail("model_type",
         "unknown model_type '" + *type + "' (and no architectures); supported: " + kSupported);
}

// rope_theta and rope_scaling do not change a shape; they are kept in `source`.
void record_rope(Config& c) {
  if (c.given("rope_theta")) {
    if (!c.at("rope_theta").is_number())
      c.fail("rope_theta", "expected a number, got " + trace::shown(c.at("rope_theta")));
    c.record("rope_theta", c.at("rope_theta").dump());
  }
  if (!c.given("rope_scaling")) return;
  const json& r = c.at("rope_scaling");
  if (!r.is_object())
    c.fail("rope_scaling",
           "expected a map such as {\"rope_type\": \"llama3\", \"factor\": 8.0} "
           "or null, got " +
               trace::shown(r));
  std::string parts;
  for (const auto& [k, v] : r.items())
    parts +=
        (parts.empty() ? "" : ", ") + k + ": " + (v.is_string() ? v.get<std::string>() : v.dump());
  c.record("rope_scaling", "{" + parts + "}");
}

int32_t narrow(int64_t v) {
  return static_cast<int32_t>(v);
}

// Llama, Qwen2 and Mistral share their key names.
Shapes llama_like(Config& c, Family f, HfImport& imp) {
  Shapes s;
  s.family = f;
  s.layers = c.count("num_hidden_layers");
  s.hidden = c.count("hidden_size");
  s.heads = c.count("num_attention_heads");
  auto& origin = imp.origin;
  origin = {
      {"layers", "num_hidden_layers"}, {"hidden", "hidden_size"}, {"heads", "num_attention_heads"}};
  if (const auto kv = c.optional_count("num_key_value_heads")) {
    s.kv_heads = *kv;
    origin.emplace_back("kv_heads", "num_key_value_heads");
  } else {
    s.kv_heads = s.heads;
    origin.emplace_back("kv_heads", "num_attention_heads (no num_key_value_heads: multi-head)");
  }
  if (s.heads % s.kv_heads != 0)
    c.fail("num_key_value_heads", fmt::format("{} does not divide num_attention_heads {}; expected "
                                              "a divisor of it",
                                              s.kv_heads, s.heads));
  if (const auto hd = c.optional_count("head_dim")) {
    s.head_dim = *hd;
    origin.emplace_back("head_dim", "head_dim");
  } else {
    if (s.hidden % s.heads != 0)
      c.fail("hidden_size", fmt::format("{} is not a multiple of num_attention_heads {}, and there "
                                        "is no head_dim key; expected one or the other",
                                        s.hidden, s.heads));
    s.head_dim = s.hidden / s.heads;
    origin.emplace_back("head_dim", "hidden_size / num_attention_heads (no head_dim key)");
  }
  s.ffn = c.count("intermediate_size");
  s.vocab = c.count("vocab_size");
  origin.insert(origin.end(), {{"ffn", "intermediate_size"}, {"vocab", "vocab_size"}});
  s.max_position =
      c.optional_count("max_position_embeddings", std::numeric_limits<int64_t>::max()).value_or(0);
  if (s.max_position > 0) origin.emplace_back("max_position", "max_position_embeddings");
  s.tied = c.flag("tie_word_embeddings", false);
  if (f == Family::kLlama) {
    s.attention_bias = c.flag("attention_bias", false);
    s.mlp_bias = c.flag("mlp_bias", false);
  }
  record_rope(c);
  std::optional<int64_t> window;
  if (f == Family::kMistral)
    window = c.optional_count("sliding_window", std::numeric_limits<int64_t>::max());
  if (f == Family::kQwen2 && c.flag("use_sliding_window", false))
    window = c.optional_count("sliding_window", std::numeric_limits<int64_t>::max());
  if (window)
    imp.notes.push_back(fmt::format(
        "sliding_window {}: the simulator keeps every token's KV (full attention), an upper "
        "bound on this model's KV beyond {} tokens",
        *window, *window));
  return s;
}

Shapes gptj(Config& c, HfImport& imp) {
  Shapes s;
  s.family = Family::kGptj;
  s.layers = c.count("n_layer");
  s.hidden = c.count("n_embd");
  s.heads = c.count("n_head");
  s.kv_heads = s.heads;
  if (s.hidden % s.heads != 0)
    c.fail("n_embd", fmt::format("{} is not a multiple of n_head {}; expected a multiple", s.hidden,
                                 s.heads));
  s.head_dim = s.hidden / s.heads;
  imp.origin = {{"layers", "n_layer"},
                {"hidden", "n_embd"},
                {"heads", "n_head"},
                {"kv_heads", "n_head (GPT-J is multi-head)"},
                {"head_dim", "n_embd / n_head"}};
  if (const auto inner = c.optional_count("n_inner")) {
    s.ffn = *inner;
    imp.origin.emplace_back("ffn", "n_inner");
  } else {
    if (s.hidden > kIntMax / 4) c.fail("n_embd", "4 x n_embd (n_inner null) exceeds 2^31 - 1");
    s.ffn = 4 * s.hidden;
    imp.origin.emplace_back("ffn", "4 x n_embd (n_inner null)");
  }
  s.vocab = c.count("vocab_size");
  imp.origin.emplace_back("vocab", "vocab_size");
  s.max_position = c.optional_count("n_positions", std::numeric_limits<int64_t>::max()).value_or(0);
  if (s.max_position > 0) imp.origin.emplace_back("max_position", "n_positions");
  c.optional_count("rotary_dim");  // partial rotary: no shape of its own; kept in source
  s.tied = c.flag("tie_word_embeddings", false);
  return s;
}

std::string dtype_of(Config& c, const std::string& flag, std::string* origin) {
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

std::string name_of(Config& c, const std::string& path, const std::string& flag,
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

}  // namespace

HfImport import_hf_config_text(const std::string& text, const std::string& path,
                               const HfImportOptions& options) {
  const json j = parse(text, path);
  if (!j.is_object())
    throw InputError(path + ": expected a JSON object (a Hugging Face config.json), got " +
                     trace::shown(j));
  Config c(j, path);
  refuse_moe(c);
  const Known known = identify(c);
  HfImport imp;
  imp.path = path;
  imp.architecture = known.architecture;
  const Shapes s = known.family == Family::kGptj ? gptj(c, imp) : llama_like(c, known.family, imp);
  std::string name_origin, dtype_origin;
  auto& shape = imp.model.shape;
  shape.name = name_of(c, path, options.name, &name_origin);
  shape.dtype = dtype_of(c, options.dtype, &dtype_origin);
  imp.origin.insert(imp.origin.begin(), {"name", name_origin});
  imp.origin.emplace_back("dtype", dtype_origin);
  shape.layers = narrow(s.layers);
  shape.hidden = narrow(s.hidden);
  shape.heads = narrow(s.heads);
  shape.kv_heads = narrow(s.kv_heads);
  shape.head_dim = narrow(s.head_dim);
  shape.ffn = narrow(s.ffn);
  shape.vocab = narrow(s.vocab);
  shape.tp = 1;
  constexpr double kMaxKvBytesPerToken = 134217728.0;  // 2^27, as load_model checks
  if (shape.kv_bytes_per_token_unsplit() > kMaxKvBytesPerToken)
    c.fail(imp.origin[1].second /* the layers key */,
           fmt::format("KV bytes per token {:.6g} (2 x layers x kv_heads x "
                       "head_dim x dtype bytes); expected at most 2^27",
                       shape.kv_bytes_per_token_unsplit()));
  const ParamCount pc = count_params(s);
  shape.params = pc.total;
  imp.params_sum = pc.lines;
  imp.model.max_position = s.max_position;
  std::string used;
  for (const auto& u : c.used()) used += (used.empty() ? "" : ", ") + u;
  imp.model.source = fmt::format(
      "Hugging Face config {}: {}; params computed from these shapes "
      "(isim model import)",
      path, used);
  return imp;
}

HfImport import_hf_config(const std::string& path, const HfImportOptions& options) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw InputError(path + ": is a folder; expected a config.json file");
  std::ifstream f(path, std::ios::binary);
  if (!f) throw InputError(path + ": cannot open");
  std::ostringstream text;
  text << f.rdbuf();
  return import_hf_config_text(text.str(), path, options);
}

}  // namespace isim::calib
