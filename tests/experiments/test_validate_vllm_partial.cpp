// isim validate --against vllm on a meta.json that carries some of its sections: kv_cache,
// hardware and resolved_config are each optional, one that is there is read strictly, and
// each value the replay takes instead of reading is one exact assumption line.
#include <doctest/doctest.h>

#include <filesystem>
#include <functional>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "experiments/validate/validate_vllm.h"
#include "experiments/validate/vllm_defaults.h"
#include "tests/cli_helpers.h"
#include "tests/input_error_text.h"
#include "tests/test_paths.h"

using namespace isim;
namespace fs = std::filesystem;
using test::error_of_call;

// Named, not anonymous: the unity build may join this file with the other against tests.
namespace against_partial {

// Every section, every setting stated (values apart from vLLM 0.19's defaults, so that a
// default taken shows): no assumption at all.
nlohmann::json full_meta() {
  return nlohmann::json::parse(R"({
    "schema_version": 1, "model": "meta-llama/Llama-3.1-8B", "vllm_version": "0.19.0",
    "engine_kwargs": {"tensor_parallel_size": 1, "data_parallel_size": 1,
                      "enable_expert_parallel": false, "max_num_seqs": 8,
                      "max_num_batched_tokens": 64, "max_model_len": 32768},
    "dataset_path": "workloads/d.jsonl",
    "dataset_hash": "0000000000000000000000000000000000000000000000000000000000000000",
    "kv_cache": {"num_gpu_blocks": 50, "block_size": 16, "gpu_memory_utilization": 0.85,
                 "enable_prefix_caching": false},
    "hardware": {"device_name": "run-gpu"},
    "resolved_config": {"parallel_config": {"pipeline_parallel_size": 1},
                        "scheduler_config": {"long_prefill_token_threshold": 8,
                                             "max_num_partial_prefills": 2,
                                             "max_long_partial_prefills": 1,
                                             "async_scheduling": false}}})");
}

nlohmann::json without(std::initializer_list<const char*> sections) {
  nlohmann::json m = full_meta();
  for (const char* s : sections) m.erase(s);
  return m;
}

sim::Profile profile_gpu() {
  sim::Profile p;
  p.device.name = "test-gpu";
  p.device.memory_gib = 24;
  return p;
}

// The meta.json read and vLLM 0.19's defaults applied, as the verb does.
exp::VllmMeta resolved(const nlohmann::json& m) {
  exp::VllmMeta meta = exp::parse_vllm_meta(m.dump(), "r/meta.json");
  exp::apply_vllm_defaults(meta, profile_gpu(), exp::VllmUsageContext::kEngine);
  return meta;
}

std::string error_of(const nlohmann::json& m) {
  return error_of_call([&] { resolved(m); });
}

using Lines = std::vector<std::string>;

const std::string kGpu = "GPU: test-gpu (the profile's device; meta.json does not name one)";
const std::string kPipeline =
    "engine_kwargs.pipeline_parallel_size 1 (not stated; vLLM's default in every version, "
    "ParallelConfig, vllm/config/parallel.py)";
const std::string kChunkWhy =
    "on for a generative decoder model, EngineArgs._set_default_chunked_prefill_and_prefix_"
    "caching_args, vllm/engine/arg_utils.py)";
const std::string kSched = "SchedulerConfig, vllm/config/scheduler.py)";
// What a run without kv_cache assumes (block size, memory fraction, prefix caching).
const Lines kKvLines = {
    "engine_kwargs.block_size 16 (not stated; vLLM 0.19.0: CacheConfig.block_size unset becomes "
    "16 on CUDA, vllm/platforms/cuda.py)",
    "engine_kwargs.gpu_memory_utilization 0.9 (not stated; vLLM 0.19.0: "
    "CacheConfig.gpu_memory_utilization, vllm/config/cache.py)",
    "engine_kwargs.enable_prefix_caching true (not stated; vLLM 0.19.0: " + kChunkWhy};
// What a run without resolved_config assumes (the scheduler knobs).
const Lines kSchedulerLines = {
    "engine_kwargs.enable_chunked_prefill true (not stated; vLLM 0.19.0: " + kChunkWhy,
    "engine_kwargs.async_scheduling true (not stated; vLLM 0.19.0: VllmConfig.__post_init__, "
    "vllm/config/vllm.py: on unless pipeline parallel, speculative decoding or an executor "
    "without it (the shared RTX 4090 run of vLLM 0.19.0 resolved it to true unasked))",
    "engine_kwargs.long_prefill_token_threshold 0 (not stated; vLLM 0.19.0: " + kSched,
    "engine_kwargs.max_num_partial_prefills 1 (not stated; vLLM 0.19.0: " + kSched,
    "engine_kwargs.max_long_partial_prefills 1 (not stated; vLLM 0.19.0: " + kSched};

Lines join(std::initializer_list<Lines> parts) {
  Lines out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

const char* kRequests =
    R"({"request_id": "bench-0", "input_toks": 4, "output_toks": 5, "queued_ts": 100, )"
    R"("scheduled_ts": 100, "first_token_ts": 101, "last_token_ts": 105})"
    "\n"
    R"({"request_id": "bench-1", "input_toks": 8, "output_toks": 3, "queued_ts": 101, )"
    R"("scheduled_ts": 102, "first_token_ts": 103, "last_token_ts": 104})"
    "\n";

struct Verb {
  int rc = 0;
  std::string out, err;
  fs::path dir;
  Lines assumed;  // the printed `assumed: ` lines, in order
};

// The verb on a tiny run folder with `meta` and the linear test profile (16-token blocks,
// device test-gpu).
Verb validate(const std::string& name, const nlohmann::json& meta) {
  Verb v;
  v.dir = test::scratch(name);
  const fs::path run = v.dir / "run";
  fs::create_directories(run);
  test::write_file(run / "meta.json", meta.dump(2));
  test::write_file(run / "requests.jsonl", kRequests);
  std::string profile = test::slurp(test::data_dir() + "/profile-linear-small.yaml");
  const std::string from = "block_tokens: 4";
  REQUIRE(profile.find(from) != std::string::npos);
  profile.replace(profile.find(from), from.size(), "block_tokens: 16");
  test::write_file(v.dir / "profile.yaml", profile);
  v.rc = test::run_bin("isim",
                       "validate --against vllm " + run.string() + " --profile " +
                           (v.dir / "profile.yaml").string() + " --scheduler chunked --out " +
                           (v.dir / "out").string() + " -p engine.activation_reserve_gib=0",
                       &v.out, &v.err);
  std::istringstream in(v.out);
  for (std::string line; std::getline(in, line);)
    if (line.starts_with("assumed: ")) v.assumed.push_back(line.substr(9));
  return v;
}

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos;
}

}  // namespace against_partial

using namespace against_partial;

TEST_CASE("against vllm, partial meta.json: each missing section's settings and assumptions") {
  // All three sections: nothing assumed (pipeline parallel from resolved_config).
  exp::VllmMeta all = resolved(full_meta());
  CHECK(all.assumptions.empty());
  CHECK(all.missing_sections.empty());
  CHECK(all.num_gpu_blocks == 50);

  // No hardware: the GPU is the profile's; everything else read.
  exp::VllmMeta m = resolved(without({"hardware"}));
  CHECK(m.assumptions == Lines{kGpu});
  CHECK(m.missing_sections == Lines{"hardware"});
  CHECK_FALSE(m.older_schema);
  CHECK(m.device_name == "test-gpu");
  CHECK(m.block_size == 16);
  CHECK(m.gpu_memory_utilization == 0.85);
  CHECK(m.long_prefill_token_threshold == 8);
  CHECK(m.num_gpu_blocks == 50);

  // No resolved_config: the scheduler knobs and pipeline parallel from vLLM 0.19's defaults.
  m = resolved(without({"resolved_config"}));
  CHECK(m.assumptions == join({{kPipeline}, kSchedulerLines}));
  CHECK(m.device_name == "run-gpu");
  CHECK(m.async_scheduling);
  CHECK(m.long_prefill_token_threshold == 0);
  CHECK(m.max_num_partial_prefills == 1);
  CHECK(m.gpu_memory_utilization == 0.85);  // kv_cache still read
  CHECK(m.num_gpu_blocks == 50);

  // No kv_cache: its settings from vLLM's defaults, and no vLLM block count.
  m = resolved(without({"kv_cache"}));
  CHECK(m.assumptions == kKvLines);
  CHECK(m.block_size == 16);
  CHECK(m.gpu_memory_utilization == 0.9);
  CHECK(m.enable_prefix_caching);
  CHECK_FALSE(m.num_gpu_blocks);
  CHECK(m.no_gpu_blocks ==
        "meta.json has no kv_cache and engine_kwargs.num_gpu_blocks_override is not set");
  CHECK(m.async_scheduling == false);  // resolved_config still read

  // Without kv_cache, engine_kwargs states them (and vLLM's count by its override).
  nlohmann::json k = without({"kv_cache"});
  k["engine_kwargs"]["block_size"] = 16;
  k["engine_kwargs"]["gpu_memory_utilization"] = 0.8;
  k["engine_kwargs"]["enable_prefix_caching"] = false;
  k["engine_kwargs"]["num_gpu_blocks_override"] = 60;
  m = resolved(k);
  CHECK(m.assumptions.empty());
  CHECK(m.gpu_memory_utilization == 0.8);
  CHECK(m.num_gpu_blocks == 60);
  CHECK(m.key_of("block_size") == "engine_kwargs.block_size");

  // One section only.
  m = resolved(without({"hardware", "resolved_config"}));
  CHECK(m.assumptions == join({{kGpu, kPipeline}, kSchedulerLines}));
  CHECK(m.missing_sections == Lines{"hardware", "resolved_config"});
  CHECK(m.num_gpu_blocks == 50);
  m = resolved(without({"kv_cache", "resolved_config"}));
  CHECK(m.assumptions == join({{kPipeline}, kKvLines, kSchedulerLines}));
  CHECK(m.device_name == "run-gpu");
  m = resolved(without({"kv_cache", "hardware"}));
  CHECK(m.assumptions == join({{kGpu}, kKvLines}));
  CHECK(m.max_num_partial_prefills == 2);

  // kv_cache without vLLM's count: absent, or null.
  nlohmann::json n = full_meta();
  n["kv_cache"].erase("num_gpu_blocks");
  m = resolved(n);
  CHECK(m.assumptions.empty());
  CHECK_FALSE(m.num_gpu_blocks);
  CHECK(m.no_gpu_blocks == "kv_cache has no num_gpu_blocks");
  n["kv_cache"]["num_gpu_blocks"] = nullptr;
  CHECK(resolved(n).no_gpu_blocks == "kv_cache.num_gpu_blocks is null");
  // A section that is null is a section the run does not carry.
  n = full_meta();
  n["hardware"] = nullptr;
  CHECK(resolved(n).assumptions == Lines{kGpu});
}

TEST_CASE("against vllm, partial meta.json: a section present is read strictly") {
  auto err = [](const std::initializer_list<const char*>& drop,
                const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json m = without(drop);
    edit(m);
    return error_of(m);
  };
  CHECK(err({"hardware"}, [](auto& m) { m["kv_cache"]["block_size"] = "16"; }) ==
        "r/meta.json: kv_cache.block_size: expected an integer >= 1, got \"16\"");
  CHECK(err({"resolved_config"}, [](auto& m) { m["kv_cache"].erase("enable_prefix_caching"); }) ==
        "r/meta.json: kv_cache.enable_prefix_caching: missing");
  CHECK(err({"resolved_config"}, [](auto& m) { m["kv_cache"]["num_gpu_blocks"] = 0; }) ==
        "r/meta.json: kv_cache.num_gpu_blocks: expected an integer >= 1, got 0");
  CHECK(err({"kv_cache"}, [](auto& m) { m["hardware"] = nlohmann::json::object(); }) ==
        "r/meta.json: hardware.device_name: missing");
  CHECK(err({"kv_cache"}, [](auto& m) { m["hardware"] = 3; }) ==
        "r/meta.json: hardware: expected an object (holding device_name), got 3");
  CHECK(err({"kv_cache"},
            [](auto& m) { m["resolved_config"]["scheduler_config"]["async_scheduling"] = 1; }) ==
        "r/meta.json: resolved_config.scheduler_config.async_scheduling: expected true or "
        "false, got 1");
  CHECK(err({"hardware"}, [](auto& m) {
          m["resolved_config"]["scheduler_config"].erase("max_num_partial_prefills");
        }) == "r/meta.json: resolved_config.scheduler_config.max_num_partial_prefills: missing");
  // Without the section, its settings in engine_kwargs are read as strictly.
  CHECK(err({"resolved_config"}, [](auto& m) { m["engine_kwargs"]["async_scheduling"] = "yes"; }) ==
        "r/meta.json: engine_kwargs.async_scheduling: expected true or false, got \"yes\"");
  CHECK(err({"resolved_config"},
            [](auto& m) {
              m["engine_kwargs"]["max_num_partial_prefills"] = 1;
              m["engine_kwargs"]["max_long_partial_prefills"] = 2;
            }) ==
        "r/meta.json: engine_kwargs.max_long_partial_prefills: 2 is more than "
        "max_num_partial_prefills 1; expected at most max_num_partial_prefills");
  CHECK(err({"kv_cache"}, [](auto& m) { m["engine_kwargs"]["gpu_memory_utilization"] = 2; }) ==
        "r/meta.json: engine_kwargs.gpu_memory_utilization: expected a fraction in (0, 1], got 2");
  // The block size is named by the key it came from.
  exp::VllmMeta meta = resolved(without({"kv_cache"}));
  sim::Profile p = profile_gpu();
  p.block_tokens = 4;
  CHECK(error_of_call([&] { exp::check_vllm_profile(meta, p, "p.yaml"); }) ==
        "r/meta.json: engine_kwargs.block_size: the run used 16-token blocks, but the profile "
        "p.yaml has kv.block_tokens 4");
  meta = resolved(without({"hardware"}));
  CHECK(error_of_call([&] {
          exp::check_vllm_profile(meta, p, "p.yaml");
        }).starts_with("r/meta.json: kv_cache.block_size: the run used 16-token blocks"));
}

TEST_CASE("against vllm, partial meta.json: vllm_version is needed only for a default") {
  // Every setting read: no default, so no version.
  nlohmann::json m = full_meta();
  m.erase("vllm_version");
  CHECK(error_of(m) == "(no error)");
  CHECK(resolved(m).vllm_version.empty());
  // The GPU and the parallel sizes do not depend on the version.
  m.erase("hardware");
  m["resolved_config"].erase("parallel_config");
  CHECK(error_of(m) == "(no error)");
  m = without({"resolved_config"});
  m.erase("vllm_version");
  CHECK(error_of(m) ==
        "r/meta.json: vllm_version: missing, and the run does not state "
        "engine_kwargs.enable_chunked_prefill, whose default depends on vLLM's version (known: "
        "0.19, 0.19.N); state vllm_version or the setting in meta.json's engine_kwargs");
  m = without({"kv_cache"});
  m["vllm_version"] = nullptr;
  CHECK(
      error_of(m).starts_with("r/meta.json: vllm_version: missing, and the run does not state "
                              "engine_kwargs.gpu_memory_utilization, "));
  m = full_meta();
  m["vllm_version"] = 19;
  CHECK(error_of(m) == "r/meta.json: vllm_version: expected a non-empty string, got 19");
}

TEST_CASE("against vllm, partial meta.json: the verb prints each assumption and the capacity") {
  // kv_cache (with vLLM's count) but no hardware or resolved_config: two replays.
  Verb v = validate("against-partial-kv", without({"hardware", "resolved_config"}));
  CAPTURE(v.out);
  CAPTURE(v.err);
  REQUIRE(v.rc == 0);
  CHECK(v.out.starts_with("vLLM 0.19.0 run " + (v.dir / "run").string() +
                          ": 2 requests, meta-llama/Llama-3.1-8B on test-gpu (meta.json has no "
                          "hardware, resolved_config)\n"));
  CHECK(v.assumed == join({{kGpu, kPipeline}, kSchedulerLines}));
  CHECK(v.out.find("\ncapacity error: ") != std::string::npos);
  CHECK(v.out.find("capacity error: none") == std::string::npos);
  const auto j = nlohmann::json::parse(test::slurp(v.dir / "out" / "against.json"));
  CHECK(j["older_schema"] == false);
  CHECK(j["device"] == "test-gpu");
  CHECK(j["assumptions"].get<Lines>() == v.assumed);
  CHECK(j["replays"].size() == 2);
  CHECK(j["replays"][1]["gpu_blocks"] == 50);

  // kv_cache without num_gpu_blocks: one replay, and the line that says why no capacity error.
  nlohmann::json n = full_meta();
  n["kv_cache"].erase("num_gpu_blocks");
  v = validate("against-partial-noblocks", n);
  REQUIRE(v.rc == 0);
  CHECK(v.out.starts_with("vLLM 0.19.0 run " + (v.dir / "run").string() +
                          ": 2 requests, meta-llama/Llama-3.1-8B on run-gpu\n"));
  CHECK(v.assumed.empty());
  CHECK(has_line(v.out,
                 "capacity error: none (kv_cache has no num_gpu_blocks: no vLLM block count to "
                 "compare with; one replay, at the predicted count)"));
  CHECK(nlohmann::json::parse(test::slurp(v.dir / "out" / "against.json"))["replays"].size() == 1);

  // No kv_cache, and no vllm_version (not needed: engine_kwargs states kv_cache's settings).
  n = without({"kv_cache"});
  n.erase("vllm_version");
  n["engine_kwargs"]["block_size"] = 16;
  n["engine_kwargs"]["gpu_memory_utilization"] = 0.9;
  n["engine_kwargs"]["enable_prefix_caching"] = true;
  v = validate("against-partial-nokv", n);
  REQUIRE(v.rc == 0);
  CHECK(v.out.starts_with("vLLM (version not stated) run " + (v.dir / "run").string() +
                          ": 2 requests, meta-llama/Llama-3.1-8B on run-gpu (meta.json has no "
                          "kv_cache)\n"));
  CHECK(v.assumed.empty());
  CHECK(has_line(v.out,
                 "capacity error: none (meta.json has no kv_cache and "
                 "engine_kwargs.num_gpu_blocks_override is not set: no vLLM block count to "
                 "compare with; one replay, at the predicted count)"));
  CHECK(nlohmann::json::parse(test::slurp(v.dir / "out" / "against.json"))["vllm_version"] ==
        nullptr);

  // Errors exit 2 naming the file and key.
  n = without({"resolved_config"});
  n["hardware"].erase("device_name");
  v = validate("against-partial-hw", n);
  CHECK(v.rc == 2);
  CHECK(v.err == "isim: error: " + (v.dir / "run" / "meta.json").string() +
                     ": hardware.device_name: missing\n");
  n = without({"kv_cache"});
  n.erase("vllm_version");
  v = validate("against-partial-version", n);
  CHECK(v.rc == 2);
  CHECK(v.err.starts_with("isim: error: " + (v.dir / "run" / "meta.json").string() +
                          ": vllm_version: missing, and the run does not state "
                          "engine_kwargs.gpu_memory_utilization, "));
}
