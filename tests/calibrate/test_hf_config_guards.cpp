// Guards on the Hugging Face import (issue 36): the parameter count with tied embeddings and
// with attention and MLP biases (they set the weight memory, hence the KV capacity), and the
// exact messages of its error paths (GPT-J's n_embd not a multiple of n_head, the size caps, a
// folder given to `isim model import`). Every expected value is worked out by hand.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "calibrate/hf_config.h"
#include "tests/cli_helpers.h"
#include "tests/input_error_text.h"

namespace {

using isim::calib::import_hf_config_text;

// meta-llama/Llama-3.2-1B's config.json (model card numbers): the lm_head is tied.
std::string llama32_1b(const std::string& tied) {
  return R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama",
  "hidden_size": 2048, "num_hidden_layers": 16, "num_attention_heads": 32,
  "num_key_value_heads": 8, "head_dim": 64, "intermediate_size": 8192, "vocab_size": 128256,
  "max_position_embeddings": 131072, "attention_bias": false, "mlp_bias": false,
  "tie_word_embeddings": )" +
         tied + R"(, "torch_dtype": "bfloat16"})";
}

// A small Llama whose attention and MLP both carry biases.
std::string small_llama(const std::string& attention_bias, const std::string& mlp_bias) {
  return R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama",
  "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
  "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 100,
  "max_position_embeddings": 4096, "attention_bias": )" +
         attention_bias + R"(, "mlp_bias": )" + mlp_bias +
         R"(, "tie_word_embeddings": false, "torch_dtype": "bfloat16"})";
}

// EleutherAI/gpt-j-6b's keys with n_embd changed.
std::string gptj(const std::string& n_embd) {
  return R"({"architectures": ["GPTJForCausalLM"], "model_type": "gptj", "n_embd": )" + n_embd +
         R"(, "n_layer": 28, "n_head": 16, "n_inner": null, "rotary_dim": 64,
  "vocab_size": 50400, "n_positions": 2048, "tie_word_embeddings": false})";
}

double params_of(const std::string& text) {
  return import_hf_config_text(text, "cfg/config.json", {}).model.shape.params;
}

std::string import_error(const std::string& text) {
  return isim::test::error_of_call([&] { import_hf_config_text(text, "cfg/config.json", {}); });
}

}  // namespace

TEST_CASE("HF import guards: a tied lm_head is counted once (Llama-3.2-1B, 1.24B)") {
  // Per layer: q 2048x2048 = 4,194,304; k, v 2 x 2048x512 = 2,097,152; o 4,194,304;
  // gate/up/down 3 x 2048x8192 = 50,331,648; two RMS norms 4,096: 60,821,504; x 16 layers =
  // 973,144,064. The embedding 128256 x 2048 = 262,668,288, once (tied), and the final norm
  // 2,048: 1,235,814,400 (the card's 1.24B). Untied, the lm_head adds another 262,668,288.
  CHECK(params_of(llama32_1b("true")) == 1235814400.0);
  CHECK(params_of(llama32_1b("false")) == 1235814400.0 + 262668288.0);
}

TEST_CASE("HF import guards: Llama's attention_bias and mlp_bias add their biases") {
  // hidden 64, 4 heads of 16, 2 KV heads (k, v project to 32), ffn 128, vocab 100, 2 layers.
  // Per layer without biases: q 64x64 = 4,096; k, v 2 x 64x32 = 4,096; o 4,096; gate/up/down
  // 3 x 64x128 = 24,576; two norms 128: 36,992. Outer: embedding and lm_head 2 x 100x64 =
  // 12,800, final norm 64: 12,864. So 2 x 36,992 + 12,864 = 86,848.
  // attention_bias (Llama: q, k, v and o): q 64 + k, v 2 x 32 + o 64 = 192 per layer: +384.
  // mlp_bias: gate and up 2 x 128 + down 64 = 320 per layer: +640.
  CHECK(params_of(small_llama("false", "false")) == 86848.0);
  CHECK(params_of(small_llama("true", "false")) == 86848.0 + 384);
  CHECK(params_of(small_llama("false", "true")) == 86848.0 + 640);
  CHECK(params_of(small_llama("true", "true")) == 86848.0 + 384 + 640);
}

TEST_CASE("HF import guards: GPT-J's n_embd must be a multiple of n_head") {
  CHECK(import_error(gptj("4095")) ==
        "cfg/config.json: n_embd: 4095 is not a multiple of n_head 16; expected a multiple of "
        "n_head (head_dim is n_embd / n_head)");
}

TEST_CASE("HF import guards: the size caps name the key and the cap") {
  // A count above 2^31 - 1 = 2,147,483,647.
  std::string huge = small_llama("false", "false");
  huge.replace(huge.find("\"num_hidden_layers\": 2"), 22, "\"num_hidden_layers\": 2147483648");
  CHECK(import_error(huge) ==
        "cfg/config.json: num_hidden_layers: expected a positive integer up to 2147483647, got "
        "2147483648");
  // KV bytes per token 2 x layers x kv_heads x head_dim x 2 B: 2 x 1,000,000 x 2 x 16 x 2 =
  // 128,000,000 is below 2^27 = 134,217,728; 1,100,000 layers give 140,800,000, above.
  std::string deep = small_llama("false", "false");
  deep.replace(deep.find("\"num_hidden_layers\": 2"), 22, "\"num_hidden_layers\": 1000000");
  CHECK(import_error(deep) == "(no error)");
  deep.replace(deep.find("1000000"), 7, "1100000");
  CHECK(import_error(deep) ==
        "cfg/config.json: num_hidden_layers: KV bytes per token 1.408e+08 (2 x layers x kv_heads "
        "x head_dim x dtype bytes); expected at most 2^27");
}

TEST_CASE("HF import guards: a folder given to isim model import is refused, exit 2") {
  const auto dir = isim::test::scratch("hf-guards-folder") / "Llama-3.2-1B";
  std::filesystem::create_directories(dir);
  const std::string yaml = (dir.parent_path() / "m.yaml").string();
  std::string out, err;
  CHECK(isim::test::run_bin("isim", "model import " + dir.string() + " --out " + yaml, &out,
                            &err) == 2);
  CHECK(err.rfind("isim: error: " + dir.string() + ": is a directory; expected a regular file (a config.json file)",
                  0) == 0);
  CHECK(!std::filesystem::exists(yaml));
}
