// Exact messages of error paths that had none (issue 36): an engine's
// max_long_partial_prefills above max_num_partial_prefills (in a spec and in a vLLM run's
// meta.json), a meta.json that is not a JSON object, and a vLLM run whose request ids are not
// bench-N while its dataset's sha256 matches (so its lines are looked up by id).
#include <doctest/doctest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "core/sha256.h"
#include "experiments/validate/validate_vllm.h"
#include "tests/cli_helpers.h"
#include "tests/input_error_text.h"
#include "tests/spec_helpers.h"

using namespace isim;
namespace fs = std::filesystem;

namespace {

const char* kGuardSpec = "trace: {from: jsonl, path: t.jsonl}\nprofile: p.yaml\npolicy: swap\n";

// A vLLM run's meta.json, as test_validate_vllm.cpp's fake run has it.
nlohmann::json guard_meta() {
  return nlohmann::json::parse(R"({
    "schema_version": 1, "model": "tiny", "vllm_version": "0.19.0",
    "engine_kwargs": {"tensor_parallel_size": 1, "max_num_seqs": 8,
                      "max_num_batched_tokens": 64},
    "dataset_path": "workloads/d.jsonl",
    "dataset_hash": "0000000000000000000000000000000000000000000000000000000000000000",
    "kv_cache": {"num_gpu_blocks": 100, "block_size": 4, "gpu_memory_utilization": 0.9,
                 "enable_prefix_caching": true},
    "hardware": {"device_name": "test-gpu"},
    "resolved_config": {"scheduler_config": {"long_prefill_token_threshold": 0,
        "max_num_partial_prefills": 1, "max_long_partial_prefills": 1,
        "async_scheduling": false}}})");
}

}  // namespace

TEST_CASE("guard messages: max_long_partial_prefills above max_num_partial_prefills") {
  CHECK(test::error_of(std::string(kGuardSpec) +
                       "engine: {max_num_partial_prefills: 2, max_long_partial_prefills: 3}\n") ==
        "e.yaml:4: engine.max_long_partial_prefills: 3 is more than max_num_partial_prefills 2; "
        "expected at most max_num_partial_prefills");
  CHECK(test::error_of(std::string(kGuardSpec) +
                       "engine: {max_num_partial_prefills: 3, max_long_partial_prefills: 3}\n") ==
        "(no error)");
  nlohmann::json m = guard_meta();
  m["resolved_config"]["scheduler_config"]["max_long_partial_prefills"] = 2;
  CHECK(test::error_of_call([&] { exp::parse_vllm_meta(m.dump(), "r/meta.json"); }) ==
        "r/meta.json: resolved_config.scheduler_config.max_long_partial_prefills: 2 is more than "
        "max_num_partial_prefills 1; expected at most max_num_partial_prefills");
}

TEST_CASE("guard messages: a meta.json that is not a JSON object") {
  CHECK(test::error_of_call([] { exp::parse_vllm_meta("[1, 2]", "r/meta.json"); }) ==
        "r/meta.json: <json>: expected a JSON object (a vLLM run's meta.json), got [1,2]");
  CHECK(test::error_of_call([] { exp::parse_vllm_meta("\"meta\"", "r/meta.json"); }) ==
        "r/meta.json: <json>: expected a JSON object (a vLLM run's meta.json), got \"meta\"");
}

TEST_CASE("guard messages: request ids that are not bench-N with the run's own dataset") {
  // The dataset matches meta.json's sha256, so each request's line is found by its id
  // (bench-N is line N); "req-1" names no line of the 2-line dataset.
  const fs::path run = test::scratch("guard-bench-id") / "run";
  fs::create_directories(run);
  const std::string dataset =
      R"({"input_toks": 4, "output_toks": 2, "arrival_time_ns": 0, "input_tok_ids": [1, 2, 3, 4]})"
      "\n"
      R"({"input_toks": 2, "output_toks": 1, "arrival_time_ns": 1, "input_tok_ids": [5, 6]})"
      "\n";
  const std::string data = test::write_file(run.parent_path() / "d.jsonl", dataset);
  nlohmann::json m = guard_meta();
  m["dataset_hash"] = sha256_hex(dataset);
  test::write_file(run / "meta.json", m.dump(2));
  test::write_file(run / "requests.jsonl",
                   R"({"request_id": "bench-0", "input_toks": 4, "output_toks": 2, )"
                   R"("queued_ts": 100, "scheduled_ts": 100, "first_token_ts": 101, )"
                   R"("last_token_ts": 102})"
                   "\n"
                   R"({"request_id": "req-1", "input_toks": 2, "output_toks": 1, )"
                   R"("queued_ts": 101, "scheduled_ts": 101, "first_token_ts": 102, )"
                   R"("last_token_ts": 102})"
                   "\n");
  const exp::VllmRun r = exp::load_vllm_run(run.string());
  CHECK(test::error_of_call([&] { exp::vllm_run_trace(r); }) ==
        (run / "requests.jsonl").string() + ":2: request_id: 'req-1' names no line of " +
            fs::path(data).lexically_normal().string() + " (expected bench-N, N < 2)");
}
