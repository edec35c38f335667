// Hugging Face import of MoE and MLA families from configs kept here (tests/data/hf, and
// DeepSeek-V3's card numbers inline), of multimodal wrappers (text_config) and of
// quantization_config, and the errors naming each key. Every expected value is worked out by
// hand in the comments, never by the importer.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "calibrate/hf_config.h"
#include "calibrate/model.h"
#include "tests/cli_helpers.h"
#include "tests/input_error_text.h"
#include "tests/test_paths.h"

using isim::calib::HfImport;
using isim::calib::import_hf_config_text;

namespace {

using Fields = std::vector<std::pair<std::string, std::string>>;

std::string json_of(const Fields& f) {
  std::string s = "{";
  for (size_t i = 0; i < f.size(); ++i)
    s += (i ? ", \"" : "\"") + f[i].first + "\": " + f[i].second;
  return s + "}";
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

// deepseek-ai/DeepSeek-V3's config.json (model card numbers), the keys the import reads.
const Fields kDeepseekV3 = {{"architectures", "[\"DeepseekV3ForCausalLM\"]"},
                            {"model_type", "\"deepseek_v3\""},
                            {"hidden_size", "7168"},
                            {"num_hidden_layers", "61"},
                            {"num_attention_heads", "128"},
                            {"num_key_value_heads", "128"},
                            {"intermediate_size", "18432"},
                            {"vocab_size", "129280"},
                            {"q_lora_rank", "1536"},
                            {"kv_lora_rank", "512"},
                            {"qk_nope_head_dim", "128"},
                            {"qk_rope_head_dim", "64"},
                            {"v_head_dim", "128"},
                            {"n_routed_experts", "256"},
                            {"n_shared_experts", "1"},
                            {"num_experts_per_tok", "8"},
                            {"moe_intermediate_size", "2048"},
                            {"first_k_dense_replace", "3"},
                            {"moe_layer_freq", "1"},
                            {"num_nextn_predict_layers", "1"},
                            {"tie_word_embeddings", "false"},
                            {"torch_dtype", "\"bfloat16\""}};

HfImport import(const Fields& f, const std::string& name = "m") {
  return import_hf_config_text(json_of(f), "cfg/config.json", {name, "", ""});
}

std::string error_of(const Fields& f) {
  return isim::test::error_of_call([&] { import(f); });
}

HfImport import_file(const std::string& name) {
  const HfImport imp = isim::calib::import_hf_config(isim::test::data_dir() + "/hf/" + name, {});
  const auto dir = isim::test::scratch("hf-moe");
  const auto back =
      isim::calib::load_model(isim::test::write_file(dir / "m.yaml", hf_model_yaml(imp)));
  CHECK(back.shape == imp.model.shape);
  return imp;
}

bool near(double a, double b, double tol) {
  return std::abs(a / b - 1) <= tol;
}

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

}  // namespace

TEST_CASE("HF MoE: DeepSeek-V3 counts 671B without its MTP layer, 37B active") {
  const HfImport imp = import(kDeepseekV3, "deepseek-v3");
  const auto& s = imp.model.shape;
  CHECK(s.layers == 61);  // the MTP layer is not one of them
  CHECK(s.moe.experts == 256);
  CHECK(s.moe.experts_per_token == 8);
  CHECK(s.moe.dense_layers == 3);
  CHECK(s.moe.shared_ffn == 2048);
  CHECK(s.kv_bytes_per_token() == 61 * (512 + 64) * 2);
  // Attention: q_a 7168x1536 = 11,010,048 + 1,536 + q_b 1536x(128x192) = 37,748,736 + kv_a
  // 7168x576 = 4,128,768 + 512 + kv_b 512x(128x256) = 16,777,216 + o 16384x7168 = 117,440,512:
  // 187,107,328. Dense layer + 396,361,728 + 14,336 = 583,483,392. MoE layer + router
  // 1,835,008 + 256 + 256 x 44,040,192 + 44,040,192 + 14,336 = 11,507,286,272.
  // 58 x MoE + 3 x dense + 2x129280x7168 + 7168.
  CHECK(s.params == 671026419200.0);
  CHECK(s.active_params == 37552297472.0);  // 58 x 585,318,656 + 1,750,450,176 + 1,853,365,248
  CHECK(near(s.params, 671e9, 0.001));      // the card's 671B "excluding the 14B MTP module"
  CHECK(near(s.active_params, 37e9, 0.02));
  REQUIRE(imp.notes.size() == 1);
  CHECK(imp.notes[0].rfind("num_nextn_predict_layers 1: the multi-token-prediction layers are "
                           "not counted",
                           0) == 0);
  // Without q_lora_rank (null), q is one hidden x heads x 192 matrix.
  const auto no_qa = import(with(kDeepseekV3, "q_lora_rank", "null")).model.shape;
  CHECK(no_qa.params - s.params ==
        61 * (7168.0 * 128 * 192 - (7168.0 * 1536 + 1536 + 1536.0 * 128 * 192)));
  // topk_method greedy (DeepSeek-V2's routing) has no per-expert bias: 58 x 256 fewer.
  CHECK(import(with(kDeepseekV3, "topk_method", "\"greedy\"")).model.shape.params ==
        671026419200.0 - 58 * 256);
  // moe_layer_freq 2: layers 0-2 dense, and of 3..60 the odd ones: 3 + 29 = 32 dense.
  CHECK(import(with(kDeepseekV3, "moe_layer_freq", "2")).model.shape.moe.dense_layers == 32);
}

TEST_CASE("HF MoE: DeepSeek-V2-Lite (no q_lora_rank, 2 shared experts) against its vLLM log") {
  const HfImport imp = import_file("DeepSeek-V2-Lite-Chat.json");
  const auto& s = imp.model.shape;
  CHECK(imp.architecture == "DeepseekV2ForCausalLM");
  CHECK(s.name == "deepseek-v2-lite-chat");
  CHECK(s.layers == 27);
  CHECK(s.heads == 16);
  CHECK(s.moe.experts == 64);
  CHECK(s.moe.experts_per_token == 6);
  CHECK(s.moe.expert_ffn == 1408);
  CHECK(s.moe.shared_ffn == 2816);  // 2 x 1408
  CHECK(s.moe.dense_layers == 1);
  CHECK(s.mla.kv_lora_rank == 512);
  // Attention: q 2048x(16x192) = 6,291,456 + kv_a 2048x576 = 1,179,648 + 512 + kv_b
  // 512x(16x256) = 2,097,152 + o 2048x2048 = 4,194,304: 13,763,072. Dense layer +
  // 3x2048x10944 + 4096 = 81,007,104; MoE layer + router 64x2048 (no bias: V2 routes greedily)
  // + 64 x 8,650,752 + 3x2048x2816 + 4096 = 584,847,872. 26 MoE + 1 dense + 2x102400x2048 + 2048.
  CHECK(s.params == 15706484224.0);
  CHECK(s.active_params == 2661150208.0);  // 26 x (584,847,872 - 58 x 8,650,752) + ...
  CHECK(near(s.params, 15.7e9, 0.001));    // the card's 15.7B
  // vLLM 0.19 (deepseek-ai-deepseek-v2...tp1 log): "Model loading took 29.43 GiB" (ours
  // 29.26 GiB, the rest is not weights); 43.61 GiB of KV for 1,505,552 tokens = 31,103 B/token.
  CHECK(near(s.weight_bytes_per_gpu() / kGiB, 29.43, 0.01));
  CHECK(s.kv_bytes_per_token() == 27 * 576 * 2);  // 31,104
}

TEST_CASE("HF MoE: Qwen1.5-MoE-A2.7B, a gated shared expert, against its vLLM log") {
  const HfImport imp = import_file("Qwen1.5-MoE-A2.7B.json");
  const auto& s = imp.model.shape;
  CHECK(imp.architecture == "Qwen2MoeForCausalLM");
  CHECK(s.moe.experts == 60);
  CHECK(s.moe.experts_per_token == 4);
  CHECK(s.moe.expert_ffn == 1408);
  CHECK(s.moe.shared_ffn == 5632);
  CHECK(s.moe.dense_layers == 0);
  // Per layer: q,k,v,o 4x2048x2048 = 16,777,216 + q,k,v bias 6,144 + router 60x2048 = 122,880
  // + experts 60 x 8,650,752 = 519,045,120 + shared 3x2048x5632 = 34,603,008 + its gate 2,048 +
  // norms 4,096 = 570,560,512. x 24 + 2x151936x2048 + 2048.
  CHECK(s.params == 14315784192.0);
  CHECK(s.active_params == 2689173504.0);  // 24 x (570,560,512 - 56 x 8,650,752) + 622,331,904
  CHECK(near(s.params, 14.3e9, 0.002));    // the card: 14.3B
  CHECK(near(s.active_params, 2.7e9, 0.01));
  // vLLM 0.19 (qwen-qwen1-5-moe-a2-7b...tp1 log): 26.67 GiB of weights; 45.83 GiB of KV for
  // 250,304 tokens = 196,600 B/token.
  CHECK(near(s.weight_bytes_per_gpu() / kGiB, 26.67, 0.001));
  CHECK(s.kv_bytes_per_token() == 2 * 24 * 16 * 128 * 2);
}

TEST_CASE("HF MoE: which layers stay dense (mlp_only_layers, decoder_sparse_step)") {
  const std::string base = isim::test::slurp(isim::test::data_dir() + "/hf/Qwen1.5-MoE-A2.7B.json");
  auto dense = [&](const std::string& from, const std::string& to) {
    std::string text = base;
    text.replace(text.find(from), from.size(), to);
    return import_hf_config_text(text, "q/config.json", {}).model.shape.moe.dense_layers;
  };
  // step 2: layer l is MoE when (l + 1) % 2 == 0, i.e. l = 1, 3, ..., 23: 12 dense.
  CHECK(dense("\"decoder_sparse_step\": 1", "\"decoder_sparse_step\": 2") == 12);
  // Listed layers 1 and 5 are dense too, and 0 (already dense at step 2) counts once: 14.
  CHECK(dense("\"decoder_sparse_step\": 1",
              "\"decoder_sparse_step\": 2, \"mlp_only_layers\": [0, 1, 5]") == 14);
  CHECK(dense("\"decoder_sparse_step\": 1", "\"mlp_only_layers\": [3]") == 1);
  CHECK(isim::test::error_of_call([&] {
          dense("\"decoder_sparse_step\": 1", "\"mlp_only_layers\": [24]");
        }) == "q/config.json: mlp_only_layers: expected layer indices 0..23, got 24");
}

TEST_CASE("HF MoE: a multimodal wrapper is read from its text_config") {
  // Kimi-VL-A3B's shape of wrapper: the text model (DeepSeek-V3 type) nested in text_config,
  // torch_dtype and the name outside.
  const std::string text =
      "{\"architectures\": [\"KimiVLForConditionalGeneration\"], "
      "\"_name_or_path\": \"moonshotai/Kimi-VL-A3B\", "
      "\"torch_dtype\": \"bfloat16\", \"vision_config\": {\"hidden_size\": 1152}, "
      "\"text_config\": " +
      json_of(without(kDeepseekV3, "torch_dtype")) + "}";
  const HfImport imp = import_hf_config_text(text, "vl/config.json", {});
  const auto& s = imp.model.shape;
  CHECK(imp.architecture == "DeepseekV3ForCausalLM");
  CHECK(s.name == "kimi-vl-a3b");
  CHECK(s.dtype == "bf16");
  CHECK(s.params == 671026419200.0);  // the text model alone (as above)
  REQUIRE(imp.notes.size() == 2);
  CHECK(imp.notes[0] ==
        "KimiVLForConditionalGeneration: a multimodal wrapper; the text model is "
        "read from text_config, and the vision encoder and projector are not "
        "counted in params");
  CHECK(hf_model_yaml(imp).find("layers: 61  # text_config.num_hidden_layers\n") !=
        std::string::npos);
  // Its keys are named with the prefix in errors.
  const std::string no_k =
      "{\"text_config\": " + json_of(without(kDeepseekV3, "num_experts_per_tok")) + "}";
  CHECK(isim::test::error_of_call([&] {
          import_hf_config_text(no_k, "vl/config.json", {"v", "", ""});
        }) ==
        "vl/config.json: text_config.num_experts_per_tok: missing; expected a positive integer");
  CHECK(isim::test::error_of_call(
            [&] { import_hf_config_text("{\"text_config\": [1]}", "vl/config.json", {}); }) ==
        "vl/config.json: text_config: expected a map (a multimodal wrapper's text model "
        "config), got [1]");
  CHECK(isim::test::error_of_call([&] {
          import_hf_config_text("{\"text_config\": {\"model_type\": \"gemma3_text\"}}",
                                "vl/config.json", {});
        })
            .rfind("vl/config.json: text_config.model_type: unknown model_type 'gemma3_text' (and "
                   "no architectures); supported: LlamaForCausalLM",
                   0) == 0);
}

TEST_CASE("HF MoE: quantization_config gives weight_dtype; the weights shrink, not the KV") {
  const Fields q8 = with(kDeepseekV3, "quantization_config",
                         "{\"quant_method\": \"fp8\", \"fmt\": \"e4m3\", "
                         "\"weight_block_size\": [128, 128]}");
  const auto& s = import(q8).model.shape;
  CHECK(s.weight_dtype == "fp8");
  CHECK(s.dtype == "bf16");
  CHECK(s.kv_bytes_per_token() == 61 * 576 * 2);
  // Embedding and lm_head 2 x 129280 x 7168 = 1,853,358,080 at 2 bytes, the other
  // 671,026,419,200 - 1,853,358,080 = 669,173,061,120 at 1 byte.
  CHECK(s.weight_bytes_per_gpu() == 669173061120.0 + 2 * 1853358080.0);
  auto ct = [&](const std::string& bits, const std::string& type) {
    return import(with(kDeepseekV3, "quantization_config",
                       "{\"quant_method\": \"compressed-tensors\", \"config_groups\": "
                       "{\"group_0\": {\"weights\": {\"num_bits\": " +
                           bits + ", \"type\": \"" + type + "\"}}}}"))
        .model.shape.weight_dtype;
  };
  CHECK(ct("8", "float") == "fp8");
  CHECK(ct("8", "int") == "int8");
  CHECK(ct("4", "int") == "int4");
  const auto gptq = import(with(kDeepseekV3, "quantization_config",
                                "{\"quant_method\": \"gptq\", \"bits\": 4, \"group_size\": 128}"))
                        .model.shape;
  CHECK(gptq.weight_dtype == "int4");
  CHECK(gptq.weight_bytes_per_gpu() == 669173061120.0 * 0.5 + 2 * 1853358080.0);
  // What it cannot model is refused, naming the key.
  CHECK(error_of(with(kDeepseekV3, "quantization_config", "{\"quant_method\": \"mxfp4\"}")) ==
        "cfg/config.json: quantization_config.quant_method: 'mxfp4' is not modelled; supported: "
        "fp8, fbgemm_fp8, compressed-tensors (8-bit float, 8-bit int or 4-bit int weights), gptq "
        "and awq (bits 4 or 8)");
  CHECK(isim::test::error_of_call([&] { ct("4", "float"); }) ==
        "cfg/config.json: quantization_config.config_groups.group_0.weights: num_bits 4 type "
        "'float' is not modelled; expected 8-bit float, 8-bit int or 4-bit int weights");
  CHECK(error_of(
            with(kDeepseekV3, "quantization_config", "{\"quant_method\": \"awq\", \"bits\": 3}")) ==
        "cfg/config.json: quantization_config.bits: 3 bits is not modelled; expected 4 or 8");
  CHECK(error_of(with(kDeepseekV3, "quantization_config", "{\"bits\": 4}")) ==
        "cfg/config.json: quantization_config.quant_method: missing; expected one of fp8, "
        "fbgemm_fp8, compressed-tensors (8-bit float, 8-bit int or 4-bit int weights), gptq and "
        "awq (bits 4 or 8)");
  // --weight-dtype overrides it, or sets it on a bf16 checkpoint.
  const auto forced = import_hf_config_text(json_of(kDeepseekV3), "c.json", {"m", "", "int8"});
  CHECK(forced.model.shape.weight_dtype == "int8");
  CHECK(hf_model_yaml(forced).find("weight_dtype: int8  # --weight-dtype (the config has no "
                                   "quantization_config)\n") != std::string::npos);
}

TEST_CASE("HF MoE: a MoE or MLA config lacking a key names it") {
  const std::string f = "cfg/config.json: ";
  CHECK(error_of(without(kDeepseekV3, "num_experts_per_tok")) ==
        f + "num_experts_per_tok: missing; expected a positive integer");
  CHECK(error_of(without(kDeepseekV3, "kv_lora_rank")) ==
        f + "kv_lora_rank: missing; expected a positive integer");
  CHECK(error_of(without(kDeepseekV3, "first_k_dense_replace")) ==
        f + "first_k_dense_replace: missing; expected an integer >= 0");
  CHECK(error_of(with(kDeepseekV3, "num_experts_per_tok", "300")) ==
        f + "num_experts_per_tok: 300 is more than the 256 experts (n_routed_experts); expected at "
            "most that");
  CHECK(error_of(with(kDeepseekV3, "first_k_dense_replace", "61")) ==
        f + "first_k_dense_replace: every one of the 61 layers is dense; expected at least one MoE "
            "layer (else import it as a dense model)");
  CHECK(error_of(with(kDeepseekV3, "n_shared_experts", "-1")) ==
        f + "n_shared_experts: expected an integer from 0 to 64, got -1");
  CHECK(error_of(with(with(kDeepseekV3, "q_lora_rank", "null"), "attention_bias", "true"))
            .rfind(f + "attention_bias: true with q_lora_rank null: not modelled", 0) == 0);
}

TEST_CASE("model YAML: the optional moe, mla, active_params and weight_dtype keys are checked") {
  const auto dir = isim::test::scratch("model-yaml-moe");
  const std::string base =
      "name: m\nsource: \"hand-made\"\nlayers: 4\nhidden: 64\nheads: 4\nkv_heads: 4\n"
      "head_dim: 16\nffn: 256\nvocab: 1000\ndtype: bf16\nparams: 1e6\n";
  auto load = [&](const std::string& extra) {
    return isim::calib::load_model(isim::test::write_file(dir / "m.yaml", base + extra));
  };
  auto err = [&](const std::string& extra) {
    return isim::test::error_of_call([&] { load(extra); });
  };
  const std::string f = (dir / "m.yaml").string();
  const auto m = load(
                     "active_params: 5e5\nweight_dtype: int4\nmoe: {experts: 4, "
                     "experts_per_token: 1, expert_ffn: 32, shared_ffn: 0, dense_layers: 3}\n"
                     "mla: {kv_lora_rank: 16, qk_rope_head_dim: 4}\n")
                     .shape;
  CHECK(m.moe.experts == 4);
  CHECK(m.moe.dense_layers == 3);
  CHECK(m.active_params == 5e5);
  CHECK(m.weight_dtype == "int4");
  CHECK(m.kv_bytes_per_token() == 4 * (16 + 4) * 2);                 // 160
  CHECK(load("").shape.kv_bytes_per_token() == 2 * 4 * 4 * 16 * 2);  // 1024, no mla
  CHECK(err("moe: {experts: 4, experts_per_token: 1, expert_ffn: 32, shared_ffn: 0, "
            "dense_layers: 4}\n") ==
        f + ":12: moe.dense_layers: must be in [0, 3] (layers with a dense FFN, fewer than "
            "layers), got 4");
  CHECK(err("moe: {experts: 4, experts_per_token: 1, expert_ffn: 32, shared_ffn: 0}\n") ==
        f + ":12: moe.dense_layers: missing (expected layers with a dense FFN, fewer than layers)");
  CHECK(err("weight_dtype: fp4\n") ==
        f + ":12: weight_dtype: unknown weight dtype 'fp4'; valid: fp8, int8, int4");
  CHECK(err("active_params: 2e6\n") ==
        f + ":12: active_params: must be > 0 and at most params (1000000), got 2000000");
  CHECK(err("experts: 4\n").find(":12: experts: unknown key") != std::string::npos);
}
