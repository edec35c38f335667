// Every Hugging Face config in ../shared/data imports (calibrate/hf_config.h), checked field by
// field against values worked out by hand from the config (in the comments), and its parameter
// counts against the published totals. Where a vLLM 0.19 startup log of the same model exists
// (../shared/data/vllm-startup-logs), its weights and KV figures are quoted as a cross-check.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <string>

#include "calibrate/hf_config.h"
#include "calibrate/model.h"
#include "tests/cli_helpers.h"
#include "tests/test_paths.h"

namespace fs = std::filesystem;
using isim::calib::HfImport;

namespace {

std::string shared(const std::string& rel) {
  return isim::test::shared_data() + "/" + rel;
}
bool missing(const std::string& rel) {
  return !fs::exists(shared(rel));
}

const std::string kModels = "llmservingsim/models/";
const std::string kAic = "aiconfigurator-models/";

// Imports, writes the YAML and checks that load_model reads back the same shape.
HfImport imported(const std::string& rel) {
  const HfImport imp = isim::calib::import_hf_config(shared(rel), {});
  const auto dir = isim::test::scratch("hf-shared");
  const auto back =
      isim::calib::load_model(isim::test::write_file(dir / "m.yaml", hf_model_yaml(imp)));
  CHECK(back.shape == imp.model.shape);
  return imp;
}

// |a / b - 1| <= tol
bool near(double a, double b, double tol) {
  return std::abs(a / b - 1) <= tol;
}

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

}  // namespace

TEST_CASE("HF shared: Llama-3.1-8B and 70B" *
          doctest::skip(isim::test::absent(missing(kModels + "Llama-3.1-8B.json") ||
                                           missing(kModels + "Llama-3.1-70B.json")))) {
  const auto& s8 = imported(kModels + "Llama-3.1-8B.json").model.shape;
  CHECK(s8.name == "llama-3.1-8b");  // the file's stem
  // 32 x (q 4096^2 + k,v 2x4096x1024 + o 4096^2 + 3x4096x14336 + 2x4096) + 2x128256x4096 + 4096
  CHECK(s8.params == 8030261248.0);
  CHECK(near(s8.params, 8.03e9, 0.001));  // the card's 8.03B
  CHECK(s8.active_params == 0);
  CHECK(!s8.moe.given());
  CHECK(s8.kv_bytes_per_token() == 2 * 32 * 8 * 128 * 2);
  const auto& s = imported(kModels + "Llama-3.1-70B.json").model.shape;
  CHECK(s.layers == 80);
  CHECK(s.hidden == 8192);
  CHECK(s.heads == 64);
  CHECK(s.kv_heads == 8);
  CHECK(s.head_dim == 128);  // 8192 / 64
  CHECK(s.ffn == 28672);
  CHECK(s.vocab == 128256);
  // Per layer: q 8192x8192 = 67,108,864; k,v 2x8192x1024 = 16,777,216; o 67,108,864;
  // gate/up/down 3x8192x28672 = 704,643,072; norms 16,384: 855,654,400. x 80 = 68,452,352,000;
  // + embedding and lm_head 2x128256x8192 = 2,101,346,304 + final norm 8,192.
  CHECK(s.params == 70553706496.0);
  CHECK(near(s.params, 70.6e9, 0.002));     // the card's 70.6B
  CHECK(s.kv_bytes_per_token() == 327680);  // 2 x 80 x 8 x 128 x 2
}

TEST_CASE("HF shared: Qwen3-32B, q/k norms and head_dim given" *
          doctest::skip(isim::test::absent(missing(kModels + "Qwen3-32B.json")))) {
  const HfImport imp = imported(kModels + "Qwen3-32B.json");
  const auto& s = imp.model.shape;
  CHECK(imp.architecture == "Qwen3ForCausalLM");
  CHECK(s.name == "qwen3-32b");
  CHECK(s.layers == 64);
  CHECK(s.hidden == 5120);
  CHECK(s.heads == 64);
  CHECK(s.kv_heads == 8);
  CHECK(s.head_dim == 128);  // given: 64 x 128 = 8192 != hidden 5120
  CHECK(s.ffn == 25600);
  CHECK(s.vocab == 151936);
  CHECK(s.dtype == "bf16");
  // Per layer: q 5120x8192 = 41,943,040; k,v 2x5120x1024 = 10,485,760; o 8192x5120 =
  // 41,943,040; q_norm, k_norm 2x128 = 256; gate/up/down 3x5120x25600 = 393,216,000; norms
  // 10,240: 487,598,336. x 64 = 31,206,293,504 + 2x151936x5120 = 1,555,824,640 + 5,120.
  CHECK(s.params == 32762123264.0);
  CHECK(near(s.params, 32.8e9, 0.002));     // the card's 32.8B
  CHECK(s.kv_bytes_per_token() == 262144);  // 2 x 64 x 8 x 128 x 2
  // The committed model (hand-written before the importer knew Qwen3) agrees.
  auto committed =
      isim::calib::load_model(std::string(ISIM_SOURCE_DIR) + "/calibrate/models/qwen3-32b.yaml")
          .shape;
  CHECK(committed == s);
}

TEST_CASE("HF shared: Qwen3-30B-A3B, 128 experts, 8 per token" *
          doctest::skip(isim::test::absent(missing(kModels +
                                                   "Qwen3-30B-A3B-Instruct-2507.json")))) {
  const HfImport imp = imported(kModels + "Qwen3-30B-A3B-Instruct-2507.json");
  const auto& s = imp.model.shape;
  CHECK(imp.architecture == "Qwen3MoeForCausalLM");
  CHECK(s.layers == 48);
  CHECK(s.hidden == 2048);
  CHECK(s.heads == 32);
  CHECK(s.kv_heads == 4);
  CHECK(s.head_dim == 128);
  CHECK(s.ffn == 6144);
  CHECK(s.vocab == 151936);
  CHECK(s.moe.experts == 128);
  CHECK(s.moe.experts_per_token == 8);
  CHECK(s.moe.expert_ffn == 768);
  CHECK(s.moe.shared_ffn == 0);
  CHECK(s.moe.dense_layers == 0);  // mlp_only_layers [], decoder_sparse_step 1
  CHECK(!s.mla.given());
  // Per layer: q 2048x4096 = 8,388,608; k,v 2x2048x512 = 2,097,152; o 8,388,608; q/k norms 256;
  // router 128x2048 = 262,144; experts 128 x 3x2048x768 = 603,979,776; norms 4,096:
  // 623,120,640. x 48 = 29,909,790,720 + 2x151936x2048 = 622,329,856 + 2,048.
  CHECK(s.params == 30532122624.0);
  // Active: 120 unpicked experts of 4,718,592 fewer per layer: 48 x 56,889,600 + 622,331,904.
  CHECK(s.active_params == 3353032704.0);
  CHECK(near(s.params, 30.5e9, 0.002));       // the card: 30.5B
  CHECK(near(s.active_params, 3.3e9, 0.02));  // 3.3B activated
  CHECK(s.kv_bytes_per_token() == 98304);     // 2 x 48 x 4 x 128 x 2
  // vLLM 0.19 on an H100 (qwen-qwen3-30b-a3b...tp1 log): "Model loading took 56.88 GiB";
  // "Available KV cache memory: 15.41 GiB" for 168,288 tokens = 98,322 B/token.
  CHECK(near(s.weight_bytes_per_gpu() / kGiB, 56.88, 0.001));
}

TEST_CASE("HF shared: Mixtral-8x7B, 8 experts of intermediate_size, 2 per token" *
          doctest::skip(isim::test::absent(missing(kModels + "Mixtral-8x7B-v0.1.json")))) {
  const HfImport imp = imported(kModels + "Mixtral-8x7B-v0.1.json");
  const auto& s = imp.model.shape;
  CHECK(imp.architecture == "MixtralForCausalLM");
  CHECK(s.layers == 32);
  CHECK(s.hidden == 4096);
  CHECK(s.heads == 32);
  CHECK(s.kv_heads == 8);
  CHECK(s.head_dim == 128);
  CHECK(s.ffn == 14336);
  CHECK(s.moe.experts == 8);
  CHECK(s.moe.experts_per_token == 2);
  CHECK(s.moe.expert_ffn == 14336);
  CHECK(s.moe.shared_ffn == 0);
  CHECK(s.moe.dense_layers == 0);
  // Per layer: attention 41,943,040; router 8x4096 = 32,768; experts 8 x 3x4096x14336 =
  // 1,409,286,144; norms 8,192: 1,451,270,144. x 32 + 2x32000x4096 + 4096.
  CHECK(s.params == 46702792704.0);
  // Active: 32 x (1,451,270,144 - 6 x 176,160,768) + 262,148,096.
  CHECK(s.active_params == 12879925248.0);
  CHECK(near(s.params, 46.7e9, 0.001));         // 46.7B total
  CHECK(near(s.active_params, 12.9e9, 0.002));  // 12.9B active
  CHECK(s.kv_bytes_per_token() == 131072);
  // vLLM at tp 2 (mistralai-mixtral-8x7b...tp2 log): 43.51 GiB of weights per GPU; 28.44 GiB
  // of KV for 465,936 tokens = 65,538 B/token per GPU, our 131072 / 2.
  auto tp2 = s;
  tp2.tp = 2;
  CHECK(near(tp2.weight_bytes_per_gpu() / kGiB, 43.51, 0.001));
  CHECK(tp2.kv_bytes_per_token() == 65536);
}

TEST_CASE("HF shared: Phi-mini-MoE, LayerNorms, biases and a sliding window noted" *
          doctest::skip(isim::test::absent(missing(kModels + "Phi-mini-MoE-instruct.json")))) {
  const HfImport imp = imported(kModels + "Phi-mini-MoE-instruct.json");
  const auto& s = imp.model.shape;
  CHECK(imp.architecture == "PhiMoEForCausalLM");
  CHECK(s.name == "phi-mini-moe");  // _name_or_path
  CHECK(s.layers == 32);
  CHECK(s.heads == 32);
  CHECK(s.kv_heads == 8);
  CHECK(s.head_dim == 128);
  CHECK(s.moe.experts == 16);
  CHECK(s.moe.experts_per_token == 2);
  CHECK(s.moe.expert_ffn == 960);
  CHECK(s.moe.shared_ffn == 0);
  CHECK(s.moe.dense_layers == 0);
  // Per layer: q,k,v,o 41,943,040 + their biases 4096 + 2x1024 + 4096 = 10,240; router
  // 16x4096 = 65,536; experts 16 x 3x4096x960 = 188,743,680; 2 LayerNorms 4x4096 = 16,384:
  // 230,778,880. x 32 + embedding and lm_head 2x32064x4096 = 262,668,288 + lm_head bias 32,064
  // + final LayerNorm 8,192.
  CHECK(s.params == 7647632704.0);
  CHECK(s.active_params == 7647632704.0 - 32 * 14 * 3.0 * 4096 * 960);  // 2,362,809,664
  CHECK(near(s.params, 7.6e9, 0.01));                                   // the card: 7.6B total
  CHECK(near(s.active_params, 2.4e9, 0.02));                            // 2.4B activated
  REQUIRE(imp.notes.size() == 1);
  CHECK(imp.notes[0].rfind("sliding_window 2047:", 0) == 0);
}

TEST_CASE("HF shared: Kimi K2 (DeepseekV3ForCausalLM): MLA latent KV, 384 experts" *
          doctest::skip(isim::test::absent(missing(kAic +
                                                   "moonshotai--Kimi-K2-Instruct_config.json")))) {
  const HfImport imp = imported(kAic + "moonshotai--Kimi-K2-Instruct_config.json");
  const auto& s = imp.model.shape;
  CHECK(imp.architecture == "DeepseekV3ForCausalLM");
  CHECK(s.name == "kimi-k2-instruct");
  CHECK(s.layers == 61);
  CHECK(s.hidden == 7168);
  CHECK(s.heads == 64);
  CHECK(s.head_dim == 128 + 64);  // qk_nope + qk_rope
  CHECK(s.ffn == 18432);
  CHECK(s.vocab == 163840);
  CHECK(s.moe.experts == 384);
  CHECK(s.moe.experts_per_token == 8);
  CHECK(s.moe.expert_ffn == 2048);
  CHECK(s.moe.shared_ffn == 2048);  // 1 x 2048
  CHECK(s.moe.dense_layers == 1);   // first_k_dense_replace
  CHECK(s.mla.kv_lora_rank == 512);
  CHECK(s.mla.qk_rope_head_dim == 64);
  // KV: one latent of 512 + 64 per layer: 61 x 576 x 2 bytes, on every tp rank.
  CHECK(s.kv_bytes_per_token() == 70272);
  // Attention: q_a 7168x1536 = 11,010,048; its norm 1,536; q_b 1536x(64x192) = 18,874,368;
  // kv_a 7168x576 = 4,128,768; its norm 512; kv_b 512x(64x256) = 8,388,608; o 8192x7168 =
  // 58,720,256: 101,124,096. Dense layer + 3x7168x18432 + norms 14,336 = 497,500,160. MoE layer
  // + router 384x7168 = 2,752,512 + bias 384 + experts 384 x 44,040,192 + shared 44,040,192 +
  // norms = 17,059,365,248. 60 MoE + 1 dense + 2x163840x7168 + 7168.
  CHECK(s.params == 1026408232448.0);
  // Active: 60 x (17,059,365,248 - 376 x 44,040,192) + 497,500,160 + 2,348,817,408.
  CHECK(s.active_params == 32861500928.0);
  CHECK(near(s.params, 1.04e12, 0.02));      // published 1.04T (Kimi: "1T total")
  CHECK(near(s.active_params, 32e9, 0.03));  // 32B activated
}

TEST_CASE("HF shared: GLM-4.7 (Glm4MoeForCausalLM): 160 experts, 3 dense layers" *
          doctest::skip(isim::test::absent(missing(kAic + "zai-org--GLM-4.7-FP8_config.json")))) {
  const HfImport imp = imported(kAic + "zai-org--GLM-4.7-FP8_config.json");
  const auto& s = imp.model.shape;
  CHECK(imp.architecture == "Glm4MoeForCausalLM");
  CHECK(s.layers == 92);
  CHECK(s.hidden == 5120);
  CHECK(s.heads == 96);
  CHECK(s.kv_heads == 8);
  CHECK(s.head_dim == 128);
  CHECK(s.ffn == 12288);
  CHECK(s.moe.experts == 160);
  CHECK(s.moe.experts_per_token == 8);
  CHECK(s.moe.expert_ffn == 1536);
  CHECK(s.moe.shared_ffn == 1536);
  CHECK(s.moe.dense_layers == 3);
  CHECK(!s.mla.given());
  CHECK(s.kv_bytes_per_token() == 376832);  // 2 x 92 x 8 x 128 x 2
  // Attention q 5120x12288 + k,v 2x5120x1024 + o 12288x5120 = 136,314,880 (the trimmed config
  // has no attention_bias or use_qk_norm: transformers' default false). Dense layer + 3x5120x12288
  // + norms = 325,068,800; MoE layer + router 160x5120 + bias 160 + 160 x 23,592,960 + shared
  // 23,592,960 + norms = 3,935,611,040. 89 MoE + 3 dense + 2x151552x5120 + 5120.
  CHECK(s.params == 352796486560.0);
  CHECK(s.active_params == 33630923680.0);  // 89 x 349,481,120 + 975,206,400 + 1,551,897,600
  CHECK(near(s.params, 355e9, 0.01));       // GLM-4.5/4.7's published 355B (MTP layer not counted)
  // Its published 32B active leaves out the embedding and lm_head (2x151552x5120):
  CHECK(near(s.active_params - 2.0 * 151552 * 5120, 32e9, 0.01));
}

TEST_CASE("HF shared: GLM-5 (GlmMoeDsaForCausalLM): MLA, sparse attention noted as dense" *
          doctest::skip(isim::test::absent(missing(kAic + "zai-org--GLM-5-FP8_config.json")))) {
  const HfImport imp = imported(kAic + "zai-org--GLM-5-FP8_config.json");
  const auto& s = imp.model.shape;
  CHECK(imp.architecture == "GlmMoeDsaForCausalLM");
  CHECK(s.layers == 78);
  CHECK(s.hidden == 6144);
  CHECK(s.heads == 64);
  CHECK(s.head_dim == 192 + 64);
  CHECK(s.moe.experts == 256);
  CHECK(s.moe.experts_per_token == 8);
  CHECK(s.moe.expert_ffn == 2048);
  CHECK(s.moe.shared_ffn == 2048);
  CHECK(s.moe.dense_layers == 3);
  CHECK(s.mla.kv_lora_rank == 512);
  CHECK(s.mla.v_head_dim == 256);  // not the default head_dim - rope = 192
  CHECK(s.mla.qk_rope_head_dim == 64);
  CHECK(s.kv_bytes_per_token() == 89856);  // 78 x 576 x 2
  // Attention: q_a 6144x2048 + 2048 + q_b 2048x(64x256) + kv_a 6144x576 + 512 + kv_b
  // 512x(64x448) + o 16384x6144 = 165,022,208. Dense layer + 3x6144x12288 + norms =
  // 391,526,912; MoE layer + router 256x6144 + 256 + 256 x 37,748,736 + 37,748,736 + norms =
  // 9,868,032,768. 75 MoE + 3 dense + 2x154880x6144 + 6144.
  CHECK(s.params == 743180209920.0);
  CHECK(s.active_params == 41053720320.0);   // 75 x 506,346,240 + 1,174,580,736 + 1,903,171,584
  CHECK(near(s.params, 744e9, 0.005));       // published 744B (the indexer's ~0.7B not counted)
  CHECK(near(s.active_params, 40e9, 0.03));  // published 40B
  REQUIRE(imp.notes.size() == 1);
  CHECK(imp.notes[0].find("costed as dense attention") != std::string::npos);
}

TEST_CASE("HF shared: the committed MoE models are what the import writes" *
          doctest::skip(isim::test::absent(missing(kAic + "zai-org--GLM-5-FP8_config.json") ||
                                           missing(kModels + "Mixtral-8x7B-v0.1.json")))) {
  struct Committed {
    const char* yaml;
    std::string config;
    const char* name;  // the --name it was imported with ("": derived)
    // --weight-dtype: the FP8 checkpoints (Kimi K2 is published in fp8; GLM's are the -FP8
    // repos) whose quantization_config aiconfigurator's trimmed configs leave out
    const char* weight_dtype = "";
  };
  const std::string hf = isim::test::data_dir() + "/hf/";
  const Committed all[] = {
      {"qwen3-30b-a3b", shared(kModels + "Qwen3-30B-A3B-Instruct-2507.json"), "qwen3-30b-a3b"},
      {"mixtral-8x7b", shared(kModels + "Mixtral-8x7B-v0.1.json"), "mixtral-8x7b"},
      {"phi-mini-moe", shared(kModels + "Phi-mini-MoE-instruct.json"), ""},
      {"kimi-k2", shared(kAic + "moonshotai--Kimi-K2-Instruct_config.json"), "kimi-k2", "fp8"},
      {"glm-4.7-fp8", shared(kAic + "zai-org--GLM-4.7-FP8_config.json"), "", "fp8"},
      {"glm-5-fp8", shared(kAic + "zai-org--GLM-5-FP8_config.json"), "", "fp8"},
      {"deepseek-v2-lite-chat", hf + "DeepSeek-V2-Lite-Chat.json", ""},
      {"qwen1.5-moe-a2.7b", hf + "Qwen1.5-MoE-A2.7B.json", ""}};
  for (const Committed& c : all) {
    INFO(c.yaml);
    const auto committed = isim::calib::load_model(std::string(ISIM_SOURCE_DIR) +
                                                   "/calibrate/models/" + c.yaml + ".yaml");
    const auto fresh = isim::calib::import_hf_config(c.config, {c.name, "", c.weight_dtype});
    CHECK(committed.shape == fresh.model.shape);
    CHECK(committed.max_position == fresh.model.max_position);
    CHECK(committed.shape.name == c.yaml);
  }
}
