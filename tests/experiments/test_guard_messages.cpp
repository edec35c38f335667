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
#include "tests/experiments/vllm_meta_fixture.h"
#include "tests/input_error_text.h"
#include "tests/spec_helpers.h"

using namespace isim;
namespace fs = std::filesystem;

namespace {

const char* kGuardSpec = "trace: {from: jsonl, path: t.jsonl}\nprofile: p.yaml\npolicy: swap\n";

}  // namespace

TEST_CASE("guard messages: max_long_partial_prefills above max_num_partial_prefills") {
  CHECK(test::error_of(std::string(kGuardSpec) +
                       "engine: {max_num_partial_prefills: 2, max_long_partial_prefills: 3}\n") ==
        "e.yaml:4: engine.max_long_partial_prefills: 3 is more than max_num_partial_prefills 2; "
        "expected at most max_num_partial_prefills");
  CHECK(test::error_of(std::string(kGuardSpec) +
                       "engine: {max_num_partial_prefills: 3, max_long_partial_prefills: 3}\n") ==
        "(no error)");
  nlohmann::json m = test::tiny_vllm_meta();
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
  nlohmann::json m = test::tiny_vllm_meta();
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
