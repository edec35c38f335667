// Hugging Face config.json -> model shape (calibrate/hf_config.h), on configs written here from
// the public model cards' numbers. Every expected value is computed by hand in the test.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "calibrate/hf_config.h"
#include "calibrate/model.h"
#include "tests/cli_helpers.h"
#include "tests/input_error_text.h"

namespace fs = std::filesystem;
using isim::calib::HfImport;
using isim::calib::HfImportOptions;
using isim::calib::import_hf_config;
using isim::calib::import_hf_config_text;

namespace {

// A config as (key, raw JSON value) pairs, so that a test can drop or change one key.
using Fields = std::vector<std::pair<std::string, std::string>>;

std::string json_of(const Fields& f) {
  std::string s = "{\n";
  for (size_t i = 0; i < f.size(); ++i)
    s += "  \"" + f[i].first + "\": " + f[i].second + (i + 1 < f.size() ? ",\n" : "\n");
  return s + "}\n";
}

Fields with(Fields f, const std::string& key, const std::string& value) {
  for (auto& [k, v] : f)
    if (k == key) return v = value, f;
  f.emplace_back(key, value);
  return f;
}

Fields without(Fields f, const std::string& key) {
  std::erase_if(f, [&](const auto& kv) { return kv.first == key; });
  return f;
}

// meta-llama/Llama-3.1-8B's config.json (model card numbers).
const Fields kLlama31_8b = {
    {"architectures", "[\"LlamaForCausalLM\"]"},
    {"model_type", "\"llama\""},
    {"hidden_size", "4096"},
    {"num_hidden_layers", "32"},
    {"num_attention_heads", "32"},
    {"num_key_value_heads", "8"},
    {"intermediate_size", "14336"},
    {"vocab_size", "128256"},
    {"max_position_embeddings", "131072"},
    {"rope_theta", "500000.0"},
    {"rope_scaling",
     "{\"factor\": 8.0, \"low_freq_factor\": 1.0, \"high_freq_factor\": 4.0, "
     "\"original_max_position_embeddings\": 8192, \"rope_type\": \"llama3\"}"},
    {"attention_bias", "false"},
    {"mlp_bias", "false"},
    {"tie_word_embeddings", "false"},
    {"torch_dtype", "\"bfloat16\""}};

// Qwen/Qwen2.5-7B (base): q, k, v projections carry a bias.
const Fields kQwen25_7b = {{"architectures", "[\"Qwen2ForCausalLM\"]"},
                           {"model_type", "\"qwen2\""},
                           {"hidden_size", "3584"},
                           {"num_hidden_layers", "28"},
                           {"num_attention_heads", "28"},
                           {"num_key_value_heads", "4"},
                           {"intermediate_size", "18944"},
                           {"vocab_size", "152064"},
                           {"max_position_embeddings", "131072"},
                           {"rope_theta", "1000000.0"},
                           {"sliding_window", "131072"},
                           {"use_sliding_window", "false"},
                           {"tie_word_embeddings", "false"},
                           {"torch_dtype", "\"bfloat16\""}};

// mistralai/Mistral-7B-v0.1.
const Fields kMistral7b = {{"architectures", "[\"MistralForCausalLM\"]"},
                           {"model_type", "\"mistral\""},
                           {"hidden_size", "4096"},
                           {"num_hidden_layers", "32"},
                           {"num_attention_heads", "32"},
                           {"num_key_value_heads", "8"},
                           {"intermediate_size", "14336"},
                           {"vocab_size", "32000"},
                           {"max_position_embeddings", "32768"},
                           {"rope_theta", "10000.0"},
                           {"sliding_window", "4096"},
                           {"tie_word_embeddings", "false"},
                           {"torch_dtype", "\"bfloat16\""}};

// EleutherAI/gpt-j-6b: its own key names, n_inner null (4 x n_embd), no torch_dtype.
const Fields kGptj6b = {{"architectures", "[\"GPTJForCausalLM\"]"},
                        {"model_type", "\"gptj\""},
                        {"n_embd", "4096"},
                        {"n_layer", "28"},
                        {"n_head", "16"},
                        {"n_inner", "null"},
                        {"rotary_dim", "64"},
                        {"vocab_size", "50400"},
                        {"n_positions", "2048"},
                        {"tie_word_embeddings", "false"}};

HfImport import(const Fields& f, const HfImportOptions& o = {}) {
  return import_hf_config_text(json_of(f), "cfg/config.json", o);
}

std::string error_of(const Fields& f, const HfImportOptions& o = {}) {
  return isim::test::error_of_call([&] { import(f, o); });
}

std::string error_of_text(const std::string& text) {
  return isim::test::error_of_call([&] { import_hf_config_text(text, "cfg/config.json", {}); });
}

// Writes the YAML and reads it back with the project's model loader.
isim::calib::ModelSpec round_trip(const HfImport& imp, const std::string& tag) {
  const auto dir = isim::test::scratch("hf-config-" + tag);
  return isim::calib::load_model(isim::test::write_file(dir / "m.yaml", hf_model_yaml(imp)));
}

}  // namespace

TEST_CASE("HF import: Llama-3.1-8B, every field by hand and equal to the committed model") {
  const auto dir = isim::test::scratch("hf-llama") / "llama-3.1-8b";
  fs::create_directories(dir);
  const auto path = isim::test::write_file(dir / "config.json", json_of(kLlama31_8b));
  const HfImport imp = import_hf_config(path, {});
  const auto& s = imp.model.shape;
  CHECK(imp.architecture == "LlamaForCausalLM");
  CHECK(s.name == "llama-3.1-8b");  // the folder's name
  CHECK(s.layers == 32);
  CHECK(s.hidden == 4096);
  CHECK(s.heads == 32);
  CHECK(s.kv_heads == 8);
  CHECK(s.head_dim == 4096 / 32);
  CHECK(s.ffn == 14336);
  CHECK(s.vocab == 128256);
  CHECK(s.dtype == "bf16");
  CHECK(s.tp == 1);
  CHECK(imp.model.max_position == 131072);
  // Per layer: q 4096x4096, k and v 4096x1024 each, o 4096x4096, gate/up/down 3 x 4096x14336,
  // two RMS norms; then embedding and lm_head 128256x4096 each and the final norm.
  const double layer =
      4096.0 * 4096 + 2.0 * 4096 * 1024 + 4096.0 * 4096 + 3.0 * 4096 * 14336 + 2.0 * 4096;
  CHECK(layer == 218112000.0);
  CHECK(s.params == 32 * layer + 2.0 * 128256 * 4096 + 4096);
  CHECK(s.kv_bytes_per_token() == 2 * 32 * 8 * 128 * 2);  // K and V, bf16: 131072
  CHECK(imp.notes.empty());
  // The committed model file was written by hand from the same card: same shapes, params, name.
  const auto committed =
      isim::calib::load_model(std::string(ISIM_SOURCE_DIR) + "/calibrate/models/llama-3.1-8b.yaml");
  CHECK(s == committed.shape);
  CHECK(imp.model.max_position == committed.max_position);
  const auto back = round_trip(imp, "llama");
  CHECK(back.shape == s);
  CHECK(back.max_position == 131072);
  CHECK(back.source.find("rope_scaling {factor: 8.0") != std::string::npos);
  CHECK(back.source.find("torch_dtype bfloat16") != std::string::npos);
}

TEST_CASE("HF import: the YAML says where each value came from, and is deterministic") {
  const HfImport imp = import(kLlama31_8b, {"my-llama", "", ""});
  const std::string y = hf_model_yaml(imp);
  CHECK(y == hf_model_yaml(import(kLlama31_8b, {"my-llama", "", ""})));
  CHECK(y.find("name: my-llama  # --name\n") != std::string::npos);
  CHECK(y.find("layers: 32  # num_hidden_layers\n") != std::string::npos);
  CHECK(y.find("head_dim: 128  # hidden_size / num_attention_heads (no head_dim key)\n") !=
        std::string::npos);
  CHECK(y.find("dtype: bf16  # torch_dtype bfloat16\n") != std::string::npos);
  CHECK(y.find("params: 8030261248\n") != std::string::npos);
  CHECK(y.find("max_position: 131072  # max_position_embeddings\n") != std::string::npos);
  // A name from _name_or_path: its last part, lowercased.
  const auto hub = import(with(kLlama31_8b, "_name_or_path", "\"meta-llama/Llama-3.1-8B\""));
  CHECK(hub.model.shape.name == "llama-3.1-8b");
  // --dtype wins over torch_dtype, and the YAML says both.
  const auto fp16 = import(kLlama31_8b, {"", "fp16", ""});
  CHECK(fp16.model.shape.dtype == "fp16");
  CHECK(hf_model_yaml(fp16).find("dtype: fp16  # --dtype (config.json torch_dtype bfloat16)") !=
        std::string::npos);
  CHECK(fp16.model.shape.kv_bytes_per_token() == 2 * 32 * 8 * 128 * 2);
}

TEST_CASE("HF import: Qwen2.5-7B counts its q, k, v biases") {
  const HfImport imp = import(kQwen25_7b, {"qwen2.5-7b", "", ""});
  const auto& s = imp.model.shape;
  CHECK(imp.architecture == "Qwen2ForCausalLM");
  CHECK(s.layers == 28);
  CHECK(s.hidden == 3584);
  CHECK(s.heads == 28);
  CHECK(s.kv_heads == 4);
  CHECK(s.head_dim == 128);  // 3584 / 28
  CHECK(s.ffn == 18944);
  CHECK(s.vocab == 152064);
  CHECK(s.dtype == "bf16");
  CHECK(imp.model.max_position == 131072);
  // k, v project to 4 x 128 = 512; q, k, v have biases (3584 + 2 x 512), o has none.
  const double layer = 3584.0 * 3584 + 2.0 * 3584 * 512 + 3584.0 * 3584 + 3.0 * 3584 * 18944 +
                       2.0 * 3584 + (3584 + 2 * 512);
  CHECK(s.params == 28 * layer + 2.0 * 152064 * 3584 + 3584);
  CHECK(s.params == 7615616512.0);  // "7.61B" on the card
  CHECK(s.kv_bytes_per_token() == 2 * 28 * 4 * 128 * 2);
  CHECK(imp.notes.empty());  // use_sliding_window false
  CHECK(round_trip(imp, "qwen").shape == s);
  // With the window on, it is noted as not modelled.
  const auto windowed = import(with(kQwen25_7b, "use_sliding_window", "true"), {"q", "", ""});
  REQUIRE(windowed.notes.size() == 1);
  CHECK(windowed.notes[0].rfind("sliding_window 131072:", 0) == 0);
}

TEST_CASE("HF import: Mistral-7B-v0.1, its sliding window noted as not modelled") {
  const HfImport imp = import(kMistral7b, {"mistral-7b-v0.1", "", ""});
  const auto& s = imp.model.shape;
  CHECK(imp.architecture == "MistralForCausalLM");
  CHECK(s.layers == 32);
  CHECK(s.hidden == 4096);
  CHECK(s.heads == 32);
  CHECK(s.kv_heads == 8);
  CHECK(s.head_dim == 128);
  CHECK(s.ffn == 14336);
  CHECK(s.vocab == 32000);
  CHECK(s.dtype == "bf16");
  CHECK(imp.model.max_position == 32768);
  const double layer = 2.0 * 4096 * 4096 + 2.0 * 4096 * 1024 + 3.0 * 4096 * 14336 + 2.0 * 4096;
  CHECK(s.params == 32 * layer + 2.0 * 32000 * 4096 + 4096);
  CHECK(s.params == 7241732096.0);  // "7.24B" on the card
  CHECK(s.kv_bytes_per_token() == 131072);
  REQUIRE(imp.notes.size() == 1);
  CHECK(imp.notes[0].rfind("sliding_window 4096:", 0) == 0);
  const std::string y = hf_model_yaml(imp);
  CHECK(y.find("# Not modelled: sliding_window 4096:") != std::string::npos);
  CHECK(round_trip(imp, "mistral").shape == s);
}

TEST_CASE("HF import: GPT-J-6B, its own keys, n_inner null, no GQA") {
  const HfImport imp = import(kGptj6b, {"gpt-j-6b", "fp16", ""});
  const auto& s = imp.model.shape;
  CHECK(imp.architecture == "GPTJForCausalLM");
  CHECK(s.layers == 28);
  CHECK(s.hidden == 4096);
  CHECK(s.heads == 16);
  CHECK(s.kv_heads == 16);
  CHECK(s.head_dim == 256);  // 4096 / 16; rotary_dim 64 rotates a quarter of it
  CHECK(s.ffn == 4 * 4096);
  CHECK(s.vocab == 50400);
  CHECK(s.dtype == "fp16");
  CHECK(imp.model.max_position == 2048);
  // Per layer: ln_1 weight and bias, q k v o without bias, fc_in and fc_out with bias; then
  // wte, lm_head with bias, ln_f.
  const double layer =
      2.0 * 4096 + 4.0 * 4096 * 4096 + (4096.0 * 16384 + 16384) + (16384.0 * 4096 + 4096);
  CHECK(s.params == 28 * layer + 50400.0 * 4096 + (50400.0 * 4096 + 50400) + 2.0 * 4096);
  CHECK(s.params == 6050882784.0);
  CHECK(s.kv_bytes_per_token() == 2 * 28 * 16 * 256 * 2);  // 458752
  CHECK(imp.model.source.find("rotary_dim 64") != std::string::npos);
  // The committed file's shapes agree; its params is the card's figure, not a count of weights.
  auto committed =
      isim::calib::load_model(std::string(ISIM_SOURCE_DIR) + "/calibrate/models/gpt-j-6b.yaml")
          .shape;
  committed.params = s.params;
  CHECK(s == committed);
  CHECK(round_trip(imp, "gptj").shape == s);
  // An explicit n_inner is used as given.
  CHECK(import(with(kGptj6b, "n_inner", "8192"), {"g", "fp16", ""}).model.shape.ffn == 8192);
}

TEST_CASE("HF import: experts in a dense family's config are refused, naming the key") {
  const std::string dense = "experts in a config of the dense ";
  CHECK(error_of(with(kMistral7b, "num_local_experts", "8")) ==
        "cfg/config.json: num_local_experts: 8 experts in a config of the dense "
        "MistralForCausalLM; expected a mixture-of-experts architecture (MixtralForCausalLM, "
        "Qwen3MoeForCausalLM, DeepseekV3ForCausalLM, ...)");
  CHECK(error_of(with(kQwen25_7b, "num_experts", "60"))
            .rfind("cfg/config.json: num_experts: 60 " + dense + "Qwen2ForCausalLM", 0) == 0);
  CHECK(error_of(with(kLlama31_8b, "n_routed_experts", "64")).find(dense) != std::string::npos);
  // num_experts 0 is a dense model.
  CHECK(import(with(kLlama31_8b, "num_experts", "0")).model.shape.layers == 32);
  // A MoE model_type or architecture is read as MoE: without its expert keys it names the
  // first one missing.
  CHECK(error_of(without(with(kMistral7b, "model_type", "\"mixtral\""), "architectures")) ==
        "cfg/config.json: num_local_experts: missing; expected a positive integer");
  CHECK(error_of(with(kMistral7b, "architectures", "[\"MixtralForCausalLM\"]")) ==
        "cfg/config.json: num_local_experts: missing; expected a positive integer");
}

TEST_CASE("HF import: an unknown family names architectures or model_type and lists ours") {
  const std::string ours =
      "supported: LlamaForCausalLM (model_type llama), Qwen2ForCausalLM (qwen2), "
      "Qwen3ForCausalLM (qwen3), MistralForCausalLM (mistral), GPTJForCausalLM (gptj), "
      "Qwen2MoeForCausalLM (qwen2_moe), Qwen3MoeForCausalLM (qwen3_moe), MixtralForCausalLM "
      "(mixtral), PhiMoEForCausalLM (phimoe), Glm4MoeForCausalLM (glm4_moe), "
      "DeepseekV2ForCausalLM (deepseek_v2), DeepseekV3ForCausalLM (deepseek_v3), "
      "GlmMoeDsaForCausalLM (glm_moe_dsa)";
  CHECK(error_of(with(kLlama31_8b, "architectures", "[\"FalconForCausalLM\"]")) ==
        "cfg/config.json: architectures: unknown architecture 'FalconForCausalLM'; " + ours);
  CHECK(error_of(with(without(kLlama31_8b, "architectures"), "model_type", "\"falcon\"")) ==
        "cfg/config.json: model_type: unknown model_type 'falcon' (and no architectures); " + ours);
  CHECK(error_of(without(without(kLlama31_8b, "architectures"), "model_type")) ==
        "cfg/config.json: architectures: missing, and no model_type either; expected one of: " +
            ours.substr(11));
  CHECK(error_of(with(kLlama31_8b, "architectures", "\"LlamaForCausalLM\"")) ==
        "cfg/config.json: architectures: expected a list of class names such as "
        "[\"LlamaForCausalLM\"], got \"LlamaForCausalLM\"");
  // model_type alone identifies the family.
  CHECK(import(without(kLlama31_8b, "architectures")).architecture == "LlamaForCausalLM");
}

TEST_CASE("HF import: a missing or wrong-typed key names the file, the key and what was expected") {
  const std::string f = "cfg/config.json: ";
  CHECK(error_of(without(kLlama31_8b, "num_hidden_layers")) ==
        f + "num_hidden_layers: missing; expected a positive integer");
  CHECK(error_of(with(kLlama31_8b, "hidden_size", "\"4096\"")) ==
        f + "hidden_size: expected a positive integer, got \"4096\"");
  CHECK(error_of(with(kLlama31_8b, "hidden_size", "4096.0")) ==
        f + "hidden_size: expected a positive integer, got 4096.0");
  CHECK(error_of(with(kLlama31_8b, "num_attention_heads", "null")) ==
        f + "num_attention_heads: expected a positive integer, got null");
  CHECK(error_of(with(kLlama31_8b, "intermediate_size", "0")) ==
        f + "intermediate_size: expected a positive integer up to 2147483647, got 0");
  CHECK(error_of(with(kLlama31_8b, "vocab_size", "-5")) ==
        f + "vocab_size: expected a positive integer up to 2147483647, got -5");
  CHECK(error_of(with(kLlama31_8b, "num_key_value_heads", "5")) ==
        f + "num_key_value_heads: 5 does not divide num_attention_heads 32; expected a divisor "
            "of it");
  CHECK(error_of(with(kLlama31_8b, "hidden_size", "4100")) ==
        f + "hidden_size: 4100 is not a multiple of num_attention_heads 32, and there is no "
            "head_dim key; expected one or the other");
  CHECK(error_of(with(kLlama31_8b, "tie_word_embeddings", "\"no\"")) ==
        f + "tie_word_embeddings: expected true or false, got \"no\"");
  CHECK(error_of(with(kLlama31_8b, "rope_scaling", "8"))
            .rfind(f + "rope_scaling: expected a map", 0) == 0);
  CHECK(error_of(without(kGptj6b, "n_layer"), {"g", "fp16", ""}) ==
        f + "n_layer: missing; expected a positive integer");
  CHECK(error_of(with(kGptj6b, "n_head", "[16]"), {"g", "fp16", ""}) ==
        f + "n_head: expected a positive integer, got [16]");
  // dtype: required from the config unless --dtype gives it.
  CHECK(error_of(kGptj6b, {"g", "", ""}) ==
        f + "torch_dtype: missing (and no dtype key); expected bfloat16, float16 or float32, or "
            "pass --dtype fp16|bf16|fp32|fp8");
  CHECK(error_of(with(kLlama31_8b, "torch_dtype", "\"int8\"")) ==
        f + "torch_dtype: unknown 'int8'; expected bfloat16, float16, float32, float8_e4m3fn or "
            "float8_e5m2, or pass --dtype fp16|bf16|fp32|fp8");
  CHECK(error_of(kLlama31_8b, {"", "half", ""}) ==
        "--dtype: expected fp16, bf16, fp32 or fp8, got 'half'");
  // The newer `dtype` key is read like torch_dtype.
  CHECK(
      import(with(without(kLlama31_8b, "torch_dtype"), "dtype", "\"float16\"")).model.shape.dtype ==
      "fp16");
  // A config with a head_dim key (as Llama 3.2 and Mistral-Nemo have) uses it.
  CHECK(import(with(kLlama31_8b, "head_dim", "64")).model.shape.head_dim == 64);
  // No name anywhere: the folder is a hub snapshot hash.
  CHECK(isim::test::error_of_call([&] {
          import_hf_config_text(json_of(kLlama31_8b),
                                "snap/0123456789abcdef0123456789abcdef01234567/config.json", {});
        }).find("_name_or_path: missing, and the folder of the config") != std::string::npos);
}

TEST_CASE("HF import: malformed JSON names the file and line; a missing file is said so") {
  CHECK(error_of_text("{\n  \"hidden_size\": 4096,\n  \"vocab_size\": ,\n}\n")
            .rfind("cfg/config.json:3: not valid JSON (column 17): syntax error", 0) == 0);
  CHECK(error_of_text("{\n  \"a\": 1\n").rfind("cfg/config.json:3: not valid JSON", 0) == 0);
  CHECK(error_of_text("[1, 2]") ==
        "cfg/config.json: expected a JSON object (a Hugging Face config.json), got [1,2]");
  CHECK(isim::test::error_of_call([] { import_hf_config("/nonexistent/config.json", {}); }) ==
        "/nonexistent/config.json: cannot open: No such file or directory");
}

TEST_CASE("HF import: a key twice names both lines (the later value was used before)") {
  // "num_attention_heads" opens at column 3 of lines 2 and 4.
  CHECK(error_of_text("{\n  \"num_attention_heads\": 32,\n  \"hidden_size\": 4096,\n"
                      "  \"num_attention_heads\": 8\n}\n") ==
        "cfg/config.json:4: <json>: key \"num_attention_heads\" appears twice in one object (line "
        "2 column 3, line 4 column 3); each key may appear once");
}
