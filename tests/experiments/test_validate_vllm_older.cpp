// isim validate --against vllm on runs as they come (experiments/validate/vllm_defaults.h,
// experiments/validate/validate_vllm_report.h): the older meta.json of LLMServingSim's scripts with
// each vLLM 0.19 default it takes (values worked out by hand from vLLM's rule), the parallel
// layouts read (and those refused), and the verb's two replays with the capacity error kept
// apart.
#include <doctest/doctest.h>

#include <filesystem>
#include <functional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "experiments/validate/validate_vllm.h"
#include "experiments/validate/validate_vllm_report.h"
#include "experiments/validate/vllm_defaults.h"
#include "tests/cli_helpers.h"
#include "tests/input_error_text.h"
#include "tests/test_paths.h"

using namespace isim;
namespace fs = std::filesystem;
using test::error_of_call;

// Named, not anonymous: the unity build joins this file with test_validate_vllm.cpp.
namespace against_older {

// What LLMServingSim's runner wrote before April 2026 (its bench/results/rtx4090-llama8b-tp1).
nlohmann::json older_meta() {
  return nlohmann::json::parse(R"({
    "schema_version": 1, "model": "meta-llama/Llama-3.1-8B", "vllm_version": "0.19.0",
    "engine_kwargs": {"model": "meta-llama/Llama-3.1-8B", "tensor_parallel_size": 1,
                      "data_parallel_size": 1, "enable_expert_parallel": false,
                      "max_num_seqs": 128, "max_num_batched_tokens": 2048,
                      "max_model_len": 32768, "dtype": "bfloat16", "kv_cache_dtype": "auto",
                      "seed": 42},
    "dataset_path": "workloads/d.jsonl",
    "dataset_hash": "0000000000000000000000000000000000000000000000000000000000000000",
    "num_requests": 3, "started_at": "2026-08-17T21:03:42Z",
    "finished_at": "2026-08-17T21:06:35Z", "tick_seconds": 1.0})");
}

sim::Profile gpu(const std::string& name, double usable_gib) {
  sim::Profile p;
  p.device.name = name;
  p.device.memory_gib = usable_gib;
  p.memory.given = true;
  p.memory.usable_gib = usable_gib;
  return p;
}

exp::VllmMeta parsed(const nlohmann::json& m) {
  return exp::parse_vllm_meta(m.dump(), "r/meta.json");
}

bool has_line(const std::vector<std::string>& lines, const std::string& line) {
  return std::find(lines.begin(), lines.end(), line) != lines.end();
}

// max_num_batched_tokens and max_num_seqs that vLLM 0.19 picks when neither is stated.
std::pair<int64_t, int64_t> batch(const std::string& device, double gib, exp::VllmUsageContext c,
                                  const std::function<void(nlohmann::json&)>& edit = {}) {
  nlohmann::json m = older_meta();
  m["engine_kwargs"].erase("max_num_seqs");
  m["engine_kwargs"].erase("max_num_batched_tokens");
  if (edit) edit(m);
  exp::VllmMeta meta = parsed(m);
  exp::apply_vllm_defaults(meta, gpu(device, gib), c);
  return {meta.max_num_batched_tokens, meta.max_num_seqs};
}

const char* kOlderRequests =
    R"({"request_id": "bench-0", "input_toks": 4, "output_toks": 5, "queued_ts": 100, )"
    R"("scheduled_ts": 100, "first_token_ts": 101, "last_token_ts": 105})"
    "\n"
    R"({"request_id": "bench-1", "input_toks": 8, "output_toks": 3, "queued_ts": 101, )"
    R"("scheduled_ts": 102, "first_token_ts": 103, "last_token_ts": 104})"
    "\n";

// A run folder with `meta`, and the tiny linear test profile with 16-token blocks (vLLM's
// default block size) beside it; returns {run, profile}.
std::pair<fs::path, fs::path> run_folder(const std::string& name, const nlohmann::json& meta) {
  const fs::path dir = test::scratch(name), run = dir / "run";
  fs::create_directories(run);
  test::write_file(run / "meta.json", meta.dump(2));
  test::write_file(run / "requests.jsonl", kOlderRequests);
  std::string profile = test::slurp(test::data_dir() + "/profile-linear-small.yaml");
  const std::string from = "block_tokens: 4";
  REQUIRE(profile.find(from) != std::string::npos);
  profile.replace(profile.find(from), from.size(), "block_tokens: 16");
  test::write_file(dir / "profile.yaml", profile);
  return {run, dir / "profile.yaml"};
}

int validate(const fs::path& run, const fs::path& profile, std::string* out, std::string* err) {
  return test::run_bin("isim",
                       "validate --against vllm " + run.string() + " --profile " +
                           profile.string() + " --scheduler chunked --out " +
                           (run.parent_path() / "out").string() +
                           " -p engine.activation_reserve_gib=0",
                       out, err);
}

}  // namespace against_older

using namespace against_older;

TEST_CASE("against vllm, older meta.json: each unstated setting takes vLLM 0.19's default") {
  exp::VllmMeta meta = parsed(older_meta());
  CHECK(meta.older_schema);
  CHECK(meta.device_name.empty());
  CHECK(meta.max_num_seqs == 128);  // stated
  CHECK(meta.max_model_len == 32768);
  exp::apply_vllm_defaults(meta, gpu("NVIDIA GeForce RTX 4090", 23.52),
                           exp::VllmUsageContext::kEngine);
  CHECK(meta.unstated.empty());
  CHECK(meta.device_name == "NVIDIA GeForce RTX 4090");
  CHECK(meta.max_num_seqs == 128);
  CHECK(meta.max_num_batched_tokens == 2048);
  CHECK(meta.block_size == 16);
  CHECK(meta.gpu_memory_utilization == 0.9);
  CHECK(meta.enable_prefix_caching);
  CHECK(meta.enable_chunked_prefill);
  CHECK(meta.async_scheduling);
  CHECK(meta.long_prefill_token_threshold == 0);
  CHECK(meta.max_num_partial_prefills == 1);
  CHECK(meta.max_long_partial_prefills == 1);
  CHECK(meta.pipeline_parallel_size == 1);
  CHECK_FALSE(meta.num_gpu_blocks);
  // One line per value taken: the GPU, pipeline parallel (the only parallel key unstated), and
  // the eight engine settings.
  const auto& a = meta.assumptions;
  CHECK(a.size() == 10);
  CHECK(has_line(a,
                 "GPU: NVIDIA GeForce RTX 4090 (the profile's device; meta.json does not "
                 "name one)"));
  CHECK(has_line(a,
                 "engine_kwargs.pipeline_parallel_size 1 (not stated; vLLM's default in every "
                 "version, ParallelConfig, vllm/config/parallel.py)"));
  CHECK(has_line(a,
                 "engine_kwargs.block_size 16 (not stated; vLLM 0.19.0: CacheConfig.block_size "
                 "unset becomes 16 on CUDA, vllm/platforms/cuda.py)"));
  CHECK(has_line(a,
                 "engine_kwargs.gpu_memory_utilization 0.9 (not stated; vLLM 0.19.0: "
                 "CacheConfig.gpu_memory_utilization, vllm/config/cache.py)"));
  CHECK(has_line(a,
                 "engine_kwargs.max_num_partial_prefills 1 (not stated; vLLM 0.19.0: "
                 "SchedulerConfig, vllm/config/scheduler.py)"));
  for (const char* key :
       {"enable_prefix_caching true", "enable_chunked_prefill true", "async_scheduling true",
        "long_prefill_token_threshold 0", "max_long_partial_prefills 1"}) {
    CAPTURE(key);
    CHECK(std::count_if(a.begin(), a.end(), [key](const std::string& l) {
            return l.starts_with(std::string("engine_kwargs.") + key + " (not stated; ");
          }) == 1);
  }
}

TEST_CASE("against vllm, older meta.json: the batch defaults follow usage context and GPU class") {
  using C = exp::VllmUsageContext;
  using B = std::pair<int64_t, int64_t>;
  // AsyncLLM (the engine context) is in neither table: SchedulerConfig's 2048 and 128.
  CHECK(batch("NVIDIA H100 80GB HBM3", 79.1, C::kEngine) == B{2048, 128});
  // vllm serve: 8192 and 1024 from 70 GiB up (the H100 startup logs say so), 2048 and 256
  // below and on any A100.
  CHECK(batch("NVIDIA H100 80GB HBM3", 79.1, C::kOpenAiApiServer) == B{8192, 1024});
  CHECK(batch("NVIDIA A100-SXM4-80GB", 79.1, C::kOpenAiApiServer) == B{2048, 256});
  CHECK(batch("NVIDIA GeForce RTX 4090", 23.5, C::kOpenAiApiServer) == B{2048, 256});
  CHECK(batch("NVIDIA L40S", 69.9, C::kOpenAiApiServer) == B{2048, 256});
  CHECK(batch("NVIDIA L40S", 70.0, C::kOpenAiApiServer) == B{8192, 1024});
  CHECK(batch("NVIDIA H100 80GB HBM3", 79.1, C::kLlmClass) == B{16384, 1024});
  CHECK(batch("NVIDIA GeForce RTX 4090", 23.5, C::kLlmClass) == B{8192, 256});
  // A defaulted token budget is capped at max_num_seqs x max_model_len: 1024 x 4 = 4096.
  CHECK(batch("NVIDIA H100 80GB HBM3", 79.1, C::kOpenAiApiServer,
              [](nlohmann::json& m) { m["engine_kwargs"]["max_model_len"] = 4; }) == B{4096, 1024});
  // A defaulted max_num_seqs is at most the (stated) token budget: min(1024, 512).
  nlohmann::json m = older_meta();
  m["engine_kwargs"].erase("max_num_seqs");
  m["engine_kwargs"]["max_num_batched_tokens"] = 512;
  exp::VllmMeta meta = parsed(m);
  exp::apply_vllm_defaults(meta, gpu("NVIDIA H100 80GB HBM3", 79.1), C::kOpenAiApiServer);
  CHECK(meta.max_num_batched_tokens == 512);
  CHECK(meta.max_num_seqs == 512);
  CHECK(error_of_call([] { exp::parse_usage_context("server", "--usage-context"); }) ==
        "--usage-context: unknown 'server'; valid: engine, openai-api-server, llm-class");
}

TEST_CASE("against vllm, older meta.json: errors name the key") {
  auto err = [](const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json m = older_meta();
    edit(m);
    return error_of_call([&] {
      exp::VllmMeta meta = parsed(m);
      exp::apply_vllm_defaults(meta, gpu("g", 24), exp::VllmUsageContext::kEngine);
    });
  };
  CHECK(err([](auto&) {}) == "(no error)");
  CHECK(err([](auto& m) { m.erase("model"); }) == "r/meta.json: model: missing");
  CHECK(err([](auto& m) { m.erase("engine_kwargs"); }) == "r/meta.json: engine_kwargs: missing");
  CHECK(err([](auto& m) { m["engine_kwargs"]["max_num_seqs"] = "8"; }) ==
        "r/meta.json: engine_kwargs.max_num_seqs: expected an integer >= 1, got \"8\"");
  CHECK(err([](auto& m) { m["engine_kwargs"]["max_model_len"] = nullptr; }) == "(no error)");
  CHECK(err([](auto& m) { m["engine_kwargs"]["num_gpu_blocks_override"] = 0; }) ==
        "r/meta.json: engine_kwargs.num_gpu_blocks_override: expected an integer >= 1, got 0");
  CHECK(err([](auto& m) { m["vllm_version"] = "0.18.1"; }) ==
        "r/meta.json: vllm_version: the run does not state engine_kwargs.gpu_memory_utilization "
        "and the defaults of vLLM '0.18.1' are not known here (known: 0.19, 0.19.N); state the "
        "setting in meta.json's engine_kwargs");
  CHECK(err([](auto& m) { m["vllm_version"] = "0.190.0"; }).find("vllm_version: ") !=
        std::string::npos);
  // Everything stated: no default is needed, so no version is checked.
  CHECK(err([](auto& m) {
          m["vllm_version"] = "0.18.1";
          auto& k = m["engine_kwargs"];
          k["pipeline_parallel_size"] = 1;
          k["gpu_memory_utilization"] = 0.85;
          k["enable_prefix_caching"] = false;
          k["enable_chunked_prefill"] = true;
          k["block_size"] = 32;
          k["async_scheduling"] = false;
          k["long_prefill_token_threshold"] = 0;
          k["max_num_partial_prefills"] = 1;
          k["max_long_partial_prefills"] = 1;
        }) == "(no error)");
  nlohmann::json fixed = older_meta();
  fixed["engine_kwargs"]["num_gpu_blocks_override"] = 1234;
  fixed["engine_kwargs"]["kv_cache_memory_bytes"] = 4294967296;
  const exp::VllmMeta f = parsed(fixed);
  CHECK(f.num_gpu_blocks == 1234);
  REQUIRE(f.assumptions.size() == 1);
  CHECK(
      f.assumptions[0].starts_with("engine_kwargs.kv_cache_memory_bytes 4294967296: vLLM sized "
                                   "its KV cache from this byte count"));
  CHECK(exp::vllm_defaults_known("0.19"));
  CHECK(exp::vllm_defaults_known("0.19.1"));
  CHECK_FALSE(exp::vllm_defaults_known("0.19."));
  CHECK_FALSE(exp::vllm_defaults_known("0.19.0rc1"));
  CHECK_FALSE(exp::vllm_defaults_known("0.20.0"));
}

TEST_CASE(
    "against vllm: parallel layouts are read from engine_kwargs, and refused when not "
    "simulated") {
  auto err = [](const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json m = older_meta();
    edit(m);
    return error_of_call([&] { parsed(m); });
  };
  // Data parallel replays on a cluster of engine cores (test_validate_vllm_dp.cpp).
  CHECK(err([](auto& m) { m["engine_kwargs"]["data_parallel_size"] = 2; }) == "(no error)");
  CHECK(err([](auto& m) { m["engine_kwargs"]["pipeline_parallel_size"] = 4; })
            .starts_with(
                "r/meta.json: engine_kwargs.pipeline_parallel_size: 4: pipeline parallelism is not "
                "simulated yet; it needs per-stage layer costs"));
  CHECK(err([](auto& m) {
          m["engine_kwargs"]["enable_chunked_prefill"] = false;
        }).starts_with("r/meta.json: engine_kwargs.enable_chunked_prefill: false: not simulated"));
  CHECK(err([](auto& m) { m["engine_kwargs"]["performance_mode"] = "throughput"; })
            .starts_with(
                "r/meta.json: engine_kwargs.performance_mode: \"throughput\": only \"balanced\""));
  CHECK(err([](auto& m) { m["engine_kwargs"]["tensor_parallel_size"] = 0; }) ==
        "r/meta.json: engine_kwargs.tensor_parallel_size: expected an integer >= 1, got 0");

  // Against the profile: tensor parallel must match; expert parallel on a MoE model spreads the
  // experts over the ranks (here one engine core of tp 2) and has no effect on a dense one.
  nlohmann::json m = older_meta();
  m["engine_kwargs"]["tensor_parallel_size"] = 2;
  m["engine_kwargs"]["enable_expert_parallel"] = true;
  exp::VllmMeta meta = parsed(m);
  meta.block_size = 16;
  sim::Profile p = gpu("g", 80);
  p.model.name = "moe-model";
  p.model.tp = 1;
  CHECK(error_of_call([&] { exp::check_vllm_profile(meta, p, "p.yaml"); }) ==
        "r/meta.json: engine_kwargs.tensor_parallel_size: the run used tp 2, but the profile "
        "p.yaml has model.tp 1");
  p.model.tp = 2;
  p.model.moe.experts = 128;
  p.model.moe.experts_per_token = 8;
  // A lockstep layout's MoE layer needs the tables form with moe_us or moe_roofline.
  CHECK(error_of_call([&] { exp::check_vllm_profile(meta, p, "p.yaml"); }) ==
        "r/meta.json: engine_kwargs.enable_expert_parallel: true: the engine cores of MoE model "
        "moe-model step together through every MoE layer, whose cost needs a tables profile "
        "with forward.tables.moe_us or moe_roofline; the profile p.yaml has neither");
  p.form = sim::ForwardForm::kTables;
  p.tables.moe_roofline = {1, 1, 0.5, 0.5};
  exp::VllmLayout moe;
  CHECK(error_of_call([&] { moe = exp::check_vllm_profile(meta, p, "p.yaml"); }) == "(no error)");
  CHECK(moe.ep);
  CHECK(moe.lockstep());
  CHECK(moe.line() ==
        "DP 1 x TP 2, expert parallel: 1 engine core behind dp-lb, the experts over 2 EP ranks");
  p.model.moe = {};
  p.model.name = "dense-model";
  CHECK(error_of_call([&] { exp::check_vllm_profile(meta, p, "p.yaml"); }) == "(no error)");
  CHECK(meta.assumptions.back() ==
        "engine_kwargs.enable_expert_parallel true has no effect: the profile's model "
        "dense-model is dense (vLLM applies it to MoE layers only)");
}

TEST_CASE("against vllm, older meta.json: the verb replays it and prints each assumption") {
  const auto [run, profile] = run_folder("against-older", older_meta());
  std::string so, se;
  const int rc = validate(run, profile, &so, &se);
  CAPTURE(so);
  CAPTURE(se);
  REQUIRE(rc == 0);
  CHECK(so.find("(the older meta.json schema: no kv_cache, hardware, resolved_config)") !=
        std::string::npos);
  CHECK(so.find("\nassumed: GPU: test-gpu (the profile's device; meta.json does not name one)\n") !=
        std::string::npos);
  CHECK(so.find("\nassumed: engine_kwargs.block_size 16 (not stated; vLLM 0.19.0: ") !=
        std::string::npos);
  CHECK(so.find("KV cache: vLLM sized (not reported) GPU blocks of 16 tokens") !=
        std::string::npos);
  CHECK(so.find("summary: error at the predicted ") != std::string::npos);
  CHECK(so.find("(latency and capacity together: the run does not state vLLM's block count)") !=
        std::string::npos);
  const auto j = nlohmann::json::parse(test::slurp(run.parent_path() / "out" / "against.json"));
  CHECK(j["older_schema"] == true);
  CHECK(j["device"] == "test-gpu");
  CHECK(j["replays"].size() == 1);
  CHECK_FALSE(j.contains("capacity"));
  // The file says what the screen says: every assumption, one printed line each.
  REQUIRE(j["assumptions"].size() == 10);
  for (const auto& a : j["assumptions"])
    CHECK(so.find("\nassumed: " + a.get<std::string>() + "\n") != std::string::npos);
  CHECK(so.find("summary: " + j["summary"].get<std::string>() + "\n") != std::string::npos);
}

TEST_CASE("against vllm: a layout not simulated exits 2 naming the key and value") {
  {
    nlohmann::json m = older_meta();
    m["engine_kwargs"]["pipeline_parallel_size"] = 2;
    const auto [run, profile] = run_folder("against-pipeline_parallel_size", m);
    std::string err;
    CHECK(validate(run, profile, nullptr, &err) == 2);
    CHECK(err.starts_with("isim: error: " + (run / "meta.json").string() +
                          ": engine_kwargs.pipeline_parallel_size: 2: "));
  }
  {  // data parallel is replayed: 2 independent cores of the dense model
    nlohmann::json m = older_meta();
    m["engine_kwargs"]["data_parallel_size"] = 2;
    const auto [run, profile] = run_folder("against-data_parallel_size", m);
    std::string out;
    CHECK(validate(run, profile, &out, nullptr) == 0);
    CHECK(out.find("\nlayout: DP 2 x TP 1, dense model: 2 independent engine cores behind "
                   "dp-lb") != std::string::npos);
  }
  nlohmann::json m = older_meta();
  m["vllm_version"] = "0.11.0";
  const auto [run, profile] = run_folder("against-version", m);
  std::string err;
  CHECK(validate(run, profile, nullptr, &err) == 2);
  CHECK(err.find("meta.json: vllm_version: the run does not state engine_kwargs.") !=
        std::string::npos);
}

TEST_CASE(
    "against vllm: a run stating vLLM's block count is replayed twice, the capacity error "
    "on its own line") {
  nlohmann::json m = older_meta();
  m.erase("engine_kwargs");
  m["engine_kwargs"] = {
      {"tensor_parallel_size", 1}, {"max_num_seqs", 8}, {"max_num_batched_tokens", 64}};
  m["kv_cache"] = {{"num_gpu_blocks", 50},
                   {"block_size", 16},
                   {"gpu_memory_utilization", 0.9},
                   {"enable_prefix_caching", true}};
  m["hardware"] = {{"device_name", "test-gpu"}};
  m["resolved_config"]["scheduler_config"] = {{"long_prefill_token_threshold", 0},
                                              {"max_num_partial_prefills", 1},
                                              {"max_long_partial_prefills", 1},
                                              {"async_scheduling", false}};
  const auto [run, profile] = run_folder("against-two", m);
  std::string so, se;
  REQUIRE(validate(run, profile, &so, &se) == 0);
  const fs::path out = run.parent_path() / "out";
  const auto j = nlohmann::json::parse(test::slurp(out / "against.json"));
  const int64_t predicted = j["kv_cache"]["sim_gpu_blocks"];
  REQUIRE(predicted != 50);
  REQUIRE(j["replays"].size() == 2);
  CHECK(j["replays"][0]["gpu_blocks_from"] == "predicted");
  CHECK(j["replays"][0]["error_kind"] == "latency and capacity");
  CHECK(j["replays"][1]["gpu_blocks_from"] == "vllm");
  CHECK(j["replays"][1]["gpu_blocks"] == 50);
  CHECK(j["replays"][1]["dir"] == "at-vllm-blocks");
  CHECK(j["replays"][1]["error_kind"] == "latency");
  CHECK(j["capacity"]["error"].get<double>() == doctest::Approx((predicted - 50) / 50.0));
  const std::string line =
      "capacity error: " + fmt::format("{:+.2f}%", 100.0 * (predicted - 50) / 50.0) +
      " GPU KV blocks (predicted " + exp::grouped(predicted) + " vs vLLM's 50)";
  CHECK(so.find("\n" + line + "\n") != std::string::npos);
  CHECK(so.find("\nsummary: latency error (at vLLM's 50 blocks): TTFT mean ") != std::string::npos);
  CHECK(so.find("summary: " + j["summary"].get<std::string>() + "\n") != std::string::npos);
  for (const char* f : {"against.csv", "against_requests.csv", "sessions.csv", "summary.json"})
    CHECK(fs::exists(out / "at-vllm-blocks" / f));
  CHECK(nlohmann::json::parse(test::slurp(out / "at-vllm-blocks" / "summary.json"))["gpu_blocks"] ==
        50);
}
