// The profile's optional model keys (moe, mla, active_params, weight_dtype, ep): read, written back
// equal only when given, checked, and used for KV and weight bytes (values worked by hand).
#include <doctest/doctest.h>

#include <sstream>
#include <string>

#include "sim/engine.h"
#include "sim/profile.h"
#include "tests/input_error_text.h"
#include "tests/sim/profile_text.h"

using namespace isim;

namespace {

// The small linear profile (tiny: 2 layers, hidden 64, vocab 1000, bf16, params 1e6, tp 1)
// with `extra` lines added to its model section.
std::string with_model(const std::string& extra, const std::string& tp = "1") {
  std::string t = test::profile_text::linear_text();
  const std::string at = "  tp: 1\n";
  t.replace(t.find(at), at.size(), "  tp: " + tp + "\n" + extra);
  return t;
}

const char* kMoe =
    "  active_params: 4e5\n  weight_dtype: fp8\n  moe:\n    experts: 8\n"
    "    experts_per_token: 2\n    expert_ffn: 128\n    shared_ffn: 0\n    dense_layers: 1\n"
    "  mla:\n    kv_lora_rank: 32\n    qk_rope_head_dim: 8\n";

std::string written(const sim::Profile& p) {
  std::ostringstream w;
  sim::write_profile(w, p);
  return w.str();
}

}  // namespace

TEST_CASE("profile model: moe, mla, active_params and weight_dtype read and write back equal") {
  const sim::Profile p = sim::parse_profile(with_model(kMoe), "p.yaml");
  const sim::ModelShape& m = p.model;
  CHECK(m.moe.experts == 8);
  CHECK(m.moe.experts_per_token == 2);
  CHECK(m.moe.expert_ffn == 128);
  CHECK(m.moe.shared_ffn == 0);
  CHECK(m.moe.dense_layers == 1);
  CHECK(m.mla.kv_lora_rank == 32);
  CHECK(m.mla.qk_rope_head_dim == 8);
  CHECK(m.active_params == 4e5);
  CHECK(m.params_per_token() == 4e5);
  CHECK(m.weight_dtype == "fp8");
  const std::string text = written(p);
  CHECK(text.find("  tp: 1\n  active_params: 400000\n  weight_dtype: fp8\n  moe:\n    experts: 8\n"
                  "    experts_per_token: 2\n    expert_ffn: 128\n    shared_ffn: 0\n"
                  "    dense_layers: 1\n  mla:\n    kv_lora_rank: 32\n    qk_rope_head_dim: 8\n"
                  "kv:\n") != std::string::npos);
  CHECK(sim::parse_profile(text, "back") == p);
  // A dense profile writes none of them: its bytes are what they were.
  const std::string plain = test::profile_text::linear_text();
  const sim::Profile dense = sim::parse_profile(plain, "d.yaml");
  CHECK(written(dense).find("  tp: 1\nkv:\n") != std::string::npos);
  CHECK(written(dense).find("moe") == std::string::npos);
  CHECK(dense.model.params_per_token() == 1e6);
}

TEST_CASE("profile model: MLA's KV is a latent per layer, the same on every tp rank") {
  // 2 layers x (32 + 8) x 2 bytes = 160 B per token, tp 1 or 2.
  CHECK(sim::parse_profile(with_model(kMoe), "p").model.kv_bytes_per_token() == 160);
  const sim::Profile tp2 = sim::parse_profile(with_model(kMoe, "2"), "p");
  CHECK(tp2.model.kv_bytes_per_token() == 160);
  CHECK(tp2.model.kv_bytes_per_token_unsplit() == 320.0);
  // Without mla: 2 x 2 layers x 2 kv_heads x 16 x 2 bytes = 256, halved at tp 2.
  CHECK(sim::parse_profile(with_model(""), "p").model.kv_bytes_per_token() == 256);
  CHECK(sim::parse_profile(with_model("", "2"), "p").model.kv_bytes_per_token() == 128);
}

TEST_CASE("profile model: quantized weights, embedding and lm_head at the model dtype") {
  // Embedding and lm_head 2 x 1000 x 64 = 128,000 params at 2 bytes; the other 872,000 at
  // 1 byte (fp8, int8) or 0.5 (int4); bf16 throughout without weight_dtype.
  auto bytes = [](const std::string& w, const std::string& tp) {
    return sim::parse_profile(with_model(w.empty() ? "" : "  weight_dtype: " + w + "\n", tp), "p")
        .model.weight_bytes_per_gpu();
  };
  CHECK(bytes("", "1") == 2e6);
  CHECK(bytes("fp8", "1") == 256000.0 + 872000.0);
  CHECK(bytes("int8", "1") == 256000.0 + 872000.0);
  CHECK(bytes("int4", "1") == 256000.0 + 436000.0);
  CHECK(bytes("fp8", "2") == (256000.0 + 872000.0) / 2);
  const sim::Profile p = sim::parse_profile(with_model("  weight_dtype: int4\n"), "p");
  CHECK(sim::describe_profile(p).find("weights: 676 KiB per GPU (linear weights int4, embedding "
                                      "and lm_head bf16)\n") != std::string::npos);
  const sim::Profile moe = sim::parse_profile(with_model(kMoe), "p");
  CHECK(sim::describe_profile(moe).find(
            "moe: 8 experts, 2 per token, expert ffn 128, shared ffn 0, 1 dense layers; 4e+05 "
            "active params per token\n") != std::string::npos);
}

TEST_CASE("profile model: bad optional keys name the file, line and key") {
  const auto err = [](const std::string& extra) {
    return test::error_of_call([&] { sim::parse_profile(with_model(extra), "p.yaml"); });
  };
  const std::string moe =
      "  moe:\n    experts: 8\n    experts_per_token: 2\n    expert_ffn: 128\n"
      "    shared_ffn: 0\n";
  CHECK(err(moe + "    dense_layers: 2\n") ==
        "p.yaml:26: model.moe.dense_layers: must be in [0, 1] (layers with a dense FFN, fewer "
        "than model.layers), got 2");
  CHECK(err(moe + "    dense_layers: 0\n    top_k: 2\n") ==
        "p.yaml:27: model.moe.top_k: unknown key (valid keys: experts, experts_per_token, "
        "expert_ffn, shared_ffn, dense_layers)");
  CHECK(err(moe) ==
        "p.yaml: model.moe.dense_layers: missing (expected layers with a dense FFN, "
        "fewer than model.layers)");
  CHECK(err("  moe:\n    experts: 8\n    experts_per_token: 9\n") ==
        "p.yaml:23: model.moe.experts_per_token: must be in [1, 8] (routed experts per token), "
        "got 9");
  CHECK(err("  weight_dtype: nf4\n") ==
        "p.yaml:21: model.weight_dtype: unknown weight dtype 'nf4' (valid: fp8, int8, int4)");
  CHECK(err("  active_params: 2e6\n") ==
        "p.yaml:21: model.active_params: must be at most model.params (1000000), got 2000000");
  CHECK(err("  mla:\n    kv_lora_rank: 0\n    qk_rope_head_dim: 8\n") ==
        "p.yaml:22: model.mla.kv_lora_rank: must be > 0 (a size), got 0");
}

TEST_CASE("profile model: the KV capacity rule counts MLA blocks and quantized weights") {
  // Reserve rule on the 2 GiB test device at utilisation 0.5, no activation reserve:
  // 1,073,741,824 B - weights. Blocks of 4 tokens.
  sim::EngineConfig c;
  c.gpu_memory_utilization = 0.5;
  c.activation_reserve_gib = 0;
  c.activation_reserve_given = true;
  // Dense bf16: weights 2,000,000 B; block 4 x 256 = 1,024 B: floor(1,071,741,824 / 1,024).
  const auto dense = sim::derive_block_counts(sim::parse_profile(with_model(""), "p"), c);
  CHECK(dense.block_bytes == 1024);
  CHECK(dense.gpu == 1046622);
  // MLA + fp8: weights 1,128,000 B; block 4 x 160 = 640 B: floor(1,072,613,824 / 640).
  const auto mla = sim::derive_block_counts(sim::parse_profile(with_model(kMoe), "p"), c);
  CHECK(mla.block_bytes == 640);
  CHECK(mla.gpu == 1675959);
}

TEST_CASE("profile model: an MLA block too large names the latent's terms") {
  // 2 layers x (2^28 + 8) x 2 bytes x 4 tokens > 2 GiB.
  const std::string huge = "  mla:\n    kv_lora_rank: 268435456\n    qk_rope_head_dim: 8\n";
  CHECK(test::error_of_call([&] { sim::parse_profile(with_model(huge), "p.yaml"); }) ==
        "p.yaml:9: model: KV bytes per token layers 2 x (mla.kv_lora_rank 268435456 + "
        "mla.qk_rope_head_dim 8) x 2 bytes = 1.07374e+09, times kv.block_tokens 4 = 4.29497e+09 "
        "bytes a block; expected at most 2147483648 (2 GiB)");
}

TEST_CASE("KV heads are replicated when tp exceeds them, as vLLM does") {
  // Qwen3-30B-A3B's attention: 48 layers, 4 KV heads of 128, bf16. At tp 2 each GPU holds 2
  // heads: 2 x 48 x 2 x 128 x 2 = 49,152 B a token. At tp 8 each holds one head (four ranks
  // share each): 2 x 48 x 1 x 128 x 2 = 24,576, not 4 / 8 of a head's 12,288.
  sim::ModelShape m;
  m.layers = 48;
  m.kv_heads = 4;
  m.heads = 32;
  m.head_dim = 128;
  m.dtype = "bf16";
  m.tp = 2;
  CHECK(m.kv_heads_per_gpu() == 2);
  CHECK(m.kv_bytes_per_token() == 49152);
  m.tp = 8;
  CHECK(m.kv_heads_per_gpu() == 1);
  CHECK(m.kv_bytes_per_token() == 24576);
}

TEST_CASE("profile model: ep spreads the routed experts, written only when > 1") {
  // tiny with fp8 weights and 8 experts of 128 in its 1 MoE layer: routed experts 1 x 8 x 3 x 64
  // x 128 = 196,608 params; embedding and lm_head 2 x 1000 x 64 = 128,000 at 2 bytes; the other
  // 1e6 - 128,000 - 196,608 = 675,392 at 1 byte.
  const sim::Profile one = sim::parse_profile(with_model(kMoe), "p.yaml");
  CHECK(one.model.ep == 1);
  CHECK(one.model.routed_expert_params() == 196608.0);
  CHECK(one.model.weight_bytes_per_gpu() == 1128000.0);  // 256,000 + 872,000, as before
  CHECK(written(one).find("ep:") == std::string::npos);
  // ep 4, tp 1: 256,000 + 675,392 + 196,608 / 4 = 980,544.
  const sim::Profile four = sim::parse_profile(with_model(std::string(kMoe) + "  ep: 4\n"), "p");
  CHECK(four.model.ep == 4);
  CHECK(four.model.weight_bytes_per_gpu() == 980544.0);
  CHECK(written(four).find("  weight_dtype: fp8\n  ep: 4\n  moe:\n") != std::string::npos);
  CHECK(sim::parse_profile(written(four), "back") == four);
  // ep 4, tp 2: everything but the routed experts over tp: (256,000 + 675,392) / 2 + 49,152.
  const sim::Profile tp2 =
      sim::parse_profile(with_model(std::string(kMoe) + "  ep: 4\n", "2"), "p.yaml");
  CHECK(tp2.model.weight_bytes_per_gpu() == 514848.0);
  // Without weight_dtype every parameter is 2 bytes: 2 x (1e6 - 196,608) + 2 x 196,608 / 8 =
  // 1,606,784 + 49,152.
  sim::ModelShape bf16 = four.model;
  bf16.weight_dtype = "";
  bf16.ep = 8;
  CHECK(bf16.weight_bytes_per_gpu() == 1655936.0);

  const auto err = [](const std::string& extra) {
    return test::error_of_call([&] { sim::parse_profile(with_model(extra), "p.yaml"); });
  };
  CHECK(
      err(std::string(kMoe) + "  ep: 9\n")
          .find(
              "model.ep: must be in [1, 8] (expert-parallel ranks, at most model.moe.experts), got "
              "9") != std::string::npos);
  CHECK(err(std::string(kMoe) + "  ep: 0\n").find("model.ep: must be in [1, 8]") !=
        std::string::npos);
  CHECK(err("  ep: 2\n") ==
        "p.yaml:21: model.ep: expert parallelism needs a MoE model (model.moe is absent: a dense "
        "model)");
}

TEST_CASE("profile model: a GPU with no room for KV names an analytic profile's min_ep") {
  sim::Profile p = sim::parse_profile(with_model(kMoe), "p.yaml");
  p.device.memory_gib = 0.001;  // 1,073,742 B x 0.9: less than the 1,128,000 B of weights
  const sim::EngineConfig c;
  const auto err = [&] {
    return test::error_of_call([&] { (void)sim::derive_block_counts(p, c); });
  };
  CHECK(err().find("no KV block fits on the GPU") != std::string::npos);
  CHECK(err().find("min_ep") == std::string::npos);
  p.provenance.emplace_back("min_ep", "4: at ep 1 the weights ...");
  CHECK(err().find(" B blocks need more (provenance min_ep: 4: the experts must be "
                   "spread over that many GPUs)") != std::string::npos);
}
