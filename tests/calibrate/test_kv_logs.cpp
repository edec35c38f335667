// `isim validate --kv-logs` (calibrate/kv_logs.h) and the KV rule it shares with `isim run`
// (sim/vllm_kv_rule.h), against values worked out by hand.
#include <doctest/doctest.h>

#include <filesystem>
#include <sstream>

#include "calibrate/kv_logs.h"
#include "calibrate/model.h"
#include "calibrate/vllm_memory.h"
#include "sim/engine_config.h"
#include "sim/profile.h"
#include "sim/vllm_kv_rule.h"
#include "tests/cli_helpers.h"
#include "tests/input_error_text.h"
#include "tests/test_paths.h"

using namespace isim;

namespace {
std::string fixtures() {
  return test::data_dir() + "/kv-logs";
}
calib::ModelSpec toy() {
  return calib::load_model(fixtures() + "/models/toy-1b.yaml");
}
const calib::KvLogRow& row(const calib::KvLogReport& r, const std::string& file) {
  for (const calib::KvLogRow& w : r.rows)
    if (w.file == file) return w;
  FAIL("no row " << file);
  return r.rows.front();
}
}  // namespace

TEST_CASE("vLLM pipeline stages split the layers as get_pp_indices does") {
  CHECK(sim::pp_stage_layers(32, 1, 0) == 32);
  CHECK(sim::pp_stage_layers(32, 2, 1) == 16);
  // 7 layers over 4 stages: 1 each, the 3 left over to stages 2, 1, 0 (never the last)
  CHECK(sim::pp_stage_layers(7, 4, 0) == 2);
  CHECK(sim::pp_stage_layers(7, 4, 2) == 2);
  CHECK(sim::pp_stage_layers(7, 4, 3) == 1);
  CHECK(sim::pp_stage_layers(5, 2, 0) == 3);
  CHECK(sim::pp_stage_layers(5, 2, 1) == 2);
  CHECK(test::error_of_call([] { (void)sim::pp_stage_layers(2, 4, 0); }) ==
        "pipeline_parallel_size 4 is more than the 2 layers");
}

TEST_CASE("vLLM weights: the allocator's 2 MiB rounding, quantized layers, tp and pp") {
  sim::ModelShape m = toy().shape;
  // bf16, pp 1: 126,886,912 x 2 = 253,773,824 B; the embedding and lm_head [32256, 1024] x 2 B
  // = 66,060,288 B (63 MiB) each get a 64 MiB segment (1 MiB left: not split): + 2 MiB; the
  // layer tensors (qkv 3 MiB, o 2 MiB, gate_up 16 MiB, down 8 MiB) add nothing.
  CHECK(sim::vllm_weight_bytes(m, 1, 0) == 253773824.0 + 2097152.0);
  // int8, tp 2, pp 2, stage 0: the layers' linear weights 4 x (1024x1024 x 2 + 2 x 1024x256 +
  // 3 x 1024x4096) = 60,817,408 at 1 B, the rest outside the embeddings (norms: 126,886,912 -
  // 2 x 33,030,144 - 60,817,408 = 9,216) at 2 B: 60,835,840, half of it on this stage
  // 30,417,920, + the embedding 33,030,144 x 2 B = 96,478,208, / tp 2 = 48,239,104; the half
  // embedding [16128, 1024] x 2 B = 31.5 MiB gets a 32 MiB segment: + 0.5 MiB = 48,763,392.
  m.weight_dtype = "int8";
  m.tp = 2;
  CHECK(sim::vllm_weight_bytes(m, 2, 0) == 48763392.0);
  CHECK(sim::vllm_weight_bytes(m, 2, 1) == 48763392.0);  // the lm_head instead
  // int4 (w4a16): 0.5 B + a 2 B scale per 128 weights; pp 1 holds both embedding matrices:
  // (60,817,408 x 0.515625 + 9,216 x 2 + 66,060,288 x 2) / 2 = 81,748,992 + 1 MiB (two half
  // embeddings)
  m.weight_dtype = "int4";
  CHECK(sim::vllm_weight_bytes(m, 1, 0) == doctest::Approx(81748992.0 + 1048576.0));
}

TEST_CASE("vLLM KV terms: a pipeline stage before the last has no sampler") {
  const calib::ModelSpec spec = toy();
  const sim::MemorySpec mem = calib::vllm_memory(spec, 20.0 * 1073741824.0, 1, nullptr, 2);
  sim::VllmKvSettings k;
  k.max_num_batched_tokens = 2048;
  k.max_num_seqs = 256;
  k.gpu_memory_utilization = 0.5;
  k.pp = 2;
  const sim::VllmKvTerms first = sim::vllm_kv_terms(spec.shape, mem, k);
  CHECK(first.sampler == 0);
  CHECK(first.peak == 65011712.0);  // 2 x (3 x 4096 + 12 x 128 + 2 x 1024) x 2048
  CHECK(first.non_torch == doctest::Approx(0.07 * 1073741824.0));
  // 2 of the 4 layers: 2 x 2 x 2 x 128 x 2 B; kv fp8 halves it
  CHECK(first.kv_bytes_per_token == 2048);
  k.stage = 1;
  k.kv_dtype_bytes = 1;
  const sim::VllmKvTerms last = sim::vllm_kv_terms(spec.shape, mem, k);
  CHECK(last.kv_bytes_per_token == 1024);
  // 32256 x 15 x 256 + 1024 x 2 x 2048
  CHECK(last.sampler == 128057344.0);
  CHECK(last.peak == 128057344.0);
  SUBCASE("more sequences allowed than tokens per step: the sampler takes one per token") {
    // vLLM's dummy sampler run takes min(max_num_seqs, max_num_batched_tokens) sequences:
    // max_num_seqs 4096 > 2048 tokens gives 2048, so 32256 x 15 x 2048 + 1024 x 2 x 2048 =
    // 990,904,320 + 4,194,304 = 995,098,624 B (4096 sequences would give 1,985,413,120).
    k.max_num_seqs = 4096;
    const sim::VllmKvTerms many = sim::vllm_kv_terms(spec.shape, mem, k);
    CHECK(many.seqs == 2048);
    CHECK(many.sampler == 995098624.0);
    CHECK(many.peak == 995098624.0);
  }
  SUBCASE("MLA: one latent per token and layer, on every tensor-parallel rank") {
    sim::ModelShape mla = spec.shape;
    mla.mla.kv_lora_rank = 512;
    mla.mla.qk_rope_head_dim = 64;
    mla.tp = 2;
    k.kv_dtype_bytes = 0;
    // stage 1 of 2: 2 layers x (512 + 64) x 2 B, not halved by tp
    CHECK(sim::vllm_kv_terms(mla, mem, k).kv_bytes_per_token == 2304);
  }
}

TEST_CASE("--kv-logs: the toy log predicted by hand, the others skipped with their reason") {
  const calib::KvLogReport r = calib::check_kv_logs(fixtures(), {fixtures() + "/models"});
  REQUIRE(r.rows.size() == 5);
  const calib::KvLogRow& w = row(r, "toy-1b--tp1pp1dp1--2048.log");
  CHECK(w.skip.empty());
  CHECK(w.known == "toy-1b");
  // usable 10.00 GiB / 0.5 = 20 GiB; requested 10 GiB = 10,737,418,240 B
  // weights 253,773,824 + 2 MiB allocator + rotary 4096 x 128 x 2 = 256,919,552
  CHECK(w.weights_pred * 1073741824.0 == doctest::Approx(256919552.0));
  // peak: sampler 32256 x 15 x 256 + 1024 x 2 x 2048 = 128,057,344 > forward 65,011,712
  CHECK(w.peak_pred * 1073741824.0 == doctest::Approx(128057344.0));
  CHECK(w.non_torch_pred == 0.25);
  // KV 10,737,418,240 - 256,919,552 - 128,057,344 - 268,435,456 = 10,084,005,888 B;
  // blocks of 16 x 4096 B: 153,869 -> 2,461,904 tokens against 2,437,280 logged
  CHECK(w.tokens_pred == 2461904);
  CHECK(w.tokens_log == 2437280);
  CHECK(w.error == doctest::Approx(24624.0 / 2437280.0));
  CHECK(w.weights_log == 0.24);
  CHECK(w.peak_log == 0.12);
  CHECK(w.non_torch_log == 0.25);
  CHECK(w.graph_log == 0.10);
  CHECK(row(r, "toy-1b--tp2pp1dp1--2048.FAILED.log").skip == "did not start");
  CHECK(row(r, "toy-1b--tp4pp1dp1--2048.log").skip == "no KV size logged");
  CHECK(row(r, "gemma-3-4b-it--tp1pp1dp1--8192.log").skip == "vision tower");
  CHECK(row(r, "mystery-3b--tp1pp1dp1--8192.log").skip == "unknown model");
  CHECK(row(r, "mystery-3b--tp1pp1dp1--8192.log").detail == "no model named mystery-3b");
  CHECK(calib::summary_line(r) ==
        "5 logs: within 2%: 1, within 5%: 1, skipped: 4 (did not start 1, no KV size logged 1, "
        "unknown model 1, vision tower 1)");
  std::ostringstream out;
  calib::print_kv_report(out, r);
  CHECK(out.str().ends_with(calib::summary_line(r) + "\n"));
  CHECK(out.str().find("toy-1b--tp1pp1dp1--2048.log") != std::string::npos);
}

TEST_CASE("--kv-logs: a model that does not load is skipped with its error") {
  const calib::KvLogReport r =
      calib::check_kv_logs(fixtures(), {test::data_dir() + "/kv-logs-bad/models"});
  const calib::KvLogRow& w = row(r, "toy-1b--tp1pp1dp1--2048.log");
  CHECK(w.skip == "model not loadable");  // layers: -4
  CHECK(w.detail.find("toy-1b.yaml:") != std::string::npos);
  CHECK(w.detail.ends_with("layers: must be > 0"));
  CHECK(calib::check_kv_logs(fixtures(), {}).why.at("unknown model") == 2);  // no models at all
  CHECK(test::error_of_call([] { (void)calib::check_kv_logs(test::data_dir() + "/nope", {}); }) ==
        test::data_dir() + "/nope: not a folder (--kv-logs DIR)");
  CHECK(
      test::error_of_call([] { (void)calib::check_kv_logs(test::data_dir() + "/kv-logs-bad", {}); })
          .ends_with("notes.log:1: not a vLLM log line (expected '(PROCESS pid=N) LEVEL MM-DD "
                     "HH:MM:SS [file.py:N] ...')"));
}

TEST_CASE("--kv-logs: a log's model id to a known model, by the stated rule") {
  auto name = [](const std::string& id, const std::string& q = "") {
    const calib::ModelMatch m = calib::match_model_id(id, q);
    return m.name + (m.weight_dtype.empty() ? "" : " " + m.weight_dtype);
  };
  CHECK(name("meta-llama/Llama-3.1-8B-Instruct") == "llama-3.1-8b");
  CHECK(name("meta-llama/Llama-3.1-8B-Instruct", "fp8") == "llama-3.1-8b fp8");
  CHECK(name("RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w8a8", "compressed-tensors") ==
        "llama-3.1-8b int8");
  CHECK(name("RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w4a16", "compressed-tensors") ==
        "llama-3.1-8b int4");
  CHECK(name("RedHatAI/Llama-3.3-70B-Instruct-fp8-dynamic", "compressed-tensors") ==
        "llama-3.3-70b fp8");
  CHECK(name("codellama/CodeLlama-7b-hf") == "codellama-7b");
  CHECK(name("deepseek-ai/DeepSeek-V2-Lite-Chat") == "deepseek-v2-lite-chat");
  CHECK(name("mistralai/Mixtral-8x7B-Instruct-v0.1") == "mixtral-8x7b-v0.1");
  CHECK(name("Qwen/Qwen3-30B-A3B") == "qwen3-30b-a3b-instruct-2507");
  CHECK(name("acme/Model-7B", "awq") == "model-7b ?");
  CHECK(name("RedHatAI/Mistral-Small-3.1-24B-Instruct-2503-quantized.w8a8", "compressed-tensors") ==
        "mistral-small-3.1-24b int8");
  CHECK(calib::unmodelled("google/gemma-3-4b-it").first == "vision tower");
  CHECK(calib::unmodelled("openai/gpt-oss-20b").first == "MXFP4 experts");
  CHECK(calib::unmodelled("google/gemma-2-9b-it").first.empty());  // a uniform KV in vLLM 0.19
  CHECK(calib::unmodelled("ibm-granite/granite-vision-3.3-2b").first == "vision tower");
  CHECK(calib::unmodelled("google/gemma-7b").first.empty());
}

static bool no_startup_logs() {
  return !std::filesystem::is_directory(test::shared_data() + "/vllm-startup-logs");
}

TEST_CASE("--kv-logs over the shared logs: the summary counts add up" *
          doctest::skip(isim::test::absent(no_startup_logs()))) {
  const std::string dir = test::shared_data() + "/vllm-startup-logs";
  const calib::KvLogReport r = calib::check_kv_logs(
      dir, {test::source_dir() + "/calibrate/models", test::shared_data() + "/llmservingsim/models",
            test::shared_data() + "/aiconfigurator-models"});
  CHECK(r.rows.size() == 74);
  int predicted = 0, skipped = 0;
  for (const calib::KvLogRow& w : r.rows) (w.skip.empty() ? predicted : skipped) += 1;
  int why = 0;
  for (const auto& entry : r.why) why += entry.second;
  CHECK(skipped == r.skipped);
  CHECK(why == r.skipped);
  CHECK(r.within2 <= r.within5);
  CHECK(r.within5 <= predicted);
  CHECK(r.why.at("did not start") == 15);  // the 15 .FAILED.log files
  CHECK(calib::summary_line(r).starts_with("74 logs: within 2%: "));
}

TEST_CASE("isim run's block count (derive_block_counts) is the --kv-logs rule") {
  // The toy log's settings on a profile of the toy model: the same 153,869 blocks as above.
  sim::Profile p = sim::load_profile(test::data_dir() + "/profile-linear-small.yaml");
  p.model = toy().shape;
  p.block_tokens = 16;
  p.memory = calib::vllm_memory(toy(), 20.0 * 1073741824.0, 1, nullptr);
  sim::EngineConfig c;
  c.kv_capacity = "vllm";
  c.max_num_batched_tokens = 2048;
  c.max_num_seqs = 256;
  c.gpu_memory_utilization = 0.5;
  const sim::BlockCounts b = sim::derive_block_counts(p, c);
  CHECK(b.gpu == 153869);
  CHECK(b.gpu_rule.find("sampler at 256 sequences 0.119") != std::string::npos);
  SUBCASE("the memory section's sampler_bytes_per_token reads back, and is optional") {
    std::ostringstream os;
    sim::write_profile(os, p);
    CHECK(os.str().find("  sampler_bytes_per_token: 2048\n") != std::string::npos);
    CHECK(sim::parse_profile(os.str(), "p.yaml").memory == p.memory);
    std::string older = os.str();
    older.erase(older.find("  sampler_bytes_per_token: 2048\n"), 32);
    CHECK(sim::parse_profile(older, "p.yaml").memory.sampler_bytes_per_token == 0);
  }
}

TEST_CASE("--kv-logs: settings the rule cannot model are skipped, not fatal") {
  const auto dir = test::scratch("kv-logs-settings");
  const std::string head =
      "(APIServer pid=1) INFO 04-22 00:48:47 [entrypoints/utils.py:233] non-default args: ";
  const std::string tail =
      "(EngineCore pid=2) DEBUG 04-22 00:48:59 [v1/worker/gpu_worker.py:285] worker requested "
      "memory: 10.00GiB\n"
      "(EngineCore pid=2) INFO 04-22 00:49:37 [v1/core/kv_cache_utils.py:1319] GPU KV cache "
      "size: 1,000 tokens\n";
  test::write_file(dir / "pp8.log", head +
                                        "{'model': 'acme/Toy-1B', 'pipeline_parallel_size': 8, "
                                        "'max_num_batched_tokens': 2048, 'max_num_seqs': 8}\n" +
                                        tail);
  test::write_file(dir / "kvint8.log", head +
                                           "{'model': 'acme/Toy-1B', 'kv_cache_dtype': "
                                           "'int8', 'max_num_batched_tokens': 2048, "
                                           "'max_num_seqs': 8}\n" +
                                           tail);
  const calib::KvLogReport r = calib::check_kv_logs(dir.string(), {fixtures() + "/models"});
  CHECK(row(r, "pp8.log").skip == "settings not modelled");
  CHECK(row(r, "pp8.log").detail == "pipeline_parallel_size 8 is more than the 4 layers");
  CHECK(row(r, "kvint8.log").detail == "kv_cache_dtype int8");
  CHECK(calib::summary_line(r) ==
        "2 logs: within 2%: 0, within 5%: 0, skipped: 2 (settings not modelled 2)");
}
