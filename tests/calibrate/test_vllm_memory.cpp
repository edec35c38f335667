// vLLM's memory terms modelled from a model's shapes, computed by hand for Llama-3.1-8B.
#include <doctest/doctest.h>

#include "calibrate/model.h"
#include "calibrate/vllm_memory.h"
#include "tests/test_paths.h"

using namespace isim;

TEST_CASE("vllm_memory: Llama-3.1-8B terms by hand") {
  const calib::ModelSpec m =
      calib::load_model(test::source_dir() + "/calibrate/models/llama-3.1-8b.yaml");
  std::string rule;
  const sim::MemorySpec s = calib::vllm_memory(m, 25250627584.0, 1, &rule);
  CHECK(s.given);
  CHECK(s.usable_gib == doctest::Approx(25250627584.0 / 1073741824.0));
  // rotary cache: 131072 positions x 128 x 2 B
  CHECK(s.weights_extra_bytes == 33554432);
  // 2 x (3 x 14336 + (32 + 16) x 128 + 2 x 4096) = 2 x 57344
  CHECK(s.activation_bytes_per_token == 114688);
  // 128256 x (2 + 13)
  CHECK(s.sampler_bytes_per_sequence == 1923840);
  // the forward's output: 4096 x 2
  CHECK(s.sampler_bytes_per_token == 8192);
  CHECK(s.non_torch_gib == 0.25);
  CHECK(s.cuda_graph_gib == 0);
  CHECK(rule.find("no term was fitted to one run") != std::string::npos);
  CHECK(rule.find("isim validate --kv-logs") != std::string::npos);
  SUBCASE("tp 2 halves the per-rank activations but not the hidden states") {
    const sim::MemorySpec t = calib::vllm_memory(m, 25250627584.0, 2, nullptr);
    // 2 x (3 x 7168 + 24 x 128 + 8192) = 2 x 32768
    CHECK(t.activation_bytes_per_token == 65536);
    // a worker process with NCCL and custom all-reduce buffers: 0.07 + 2.0
    CHECK(t.non_torch_gib == doctest::Approx(2.07));
  }
  SUBCASE("pipeline workers without tensor parallelism") {
    CHECK(calib::vllm_memory(m, 25250627584.0, 1, nullptr, 2).non_torch_gib == 0.07);
  }
}

TEST_CASE("vllm_memory: a MoE model holds the fused-MoE workspace through the sampler") {
  // Qwen3-30B-A3B's shapes (the shared config): hidden 2048, 128 experts, 8 per token, 768 wide.
  calib::ModelSpec m;
  m.shape.name = "moe";
  m.shape.layers = 48;
  m.shape.hidden = 2048;
  m.shape.heads = 32;
  m.shape.kv_heads = 4;
  m.shape.head_dim = 128;
  m.shape.ffn = 6144;
  m.shape.vocab = 151936;
  m.shape.dtype = "bf16";
  m.shape.params = 30532122624;
  m.shape.moe.experts = 128;
  m.shape.moe.experts_per_token = 8;
  m.shape.moe.expert_ffn = 768;
  // hidden 2048 x 2 + 2 x (8 x (max(2 x 768, 2048) + 768) + 2048) = 4096 + 49152
  CHECK(calib::vllm_memory(m, 85e9, 1, nullptr).sampler_bytes_per_token == 53248);
  // tp 2: 384 wide per rank: 4096 + 2 x (8 x (2048 + 384) + 2048) = 4096 + 43008
  CHECK(calib::vllm_memory(m, 85e9, 2, nullptr).sampler_bytes_per_token == 47104);
}
