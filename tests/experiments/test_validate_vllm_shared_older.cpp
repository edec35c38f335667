// The shared RTX 4090 run of vLLM 0.19.0 as LLMServingSim's scripts wrote it before April 2026:
// its requests and dataset copied beside an older meta.json (no kv_cache, hardware or
// resolved_config; engine_kwargs as the runner wrote them). vLLM 0.19's defaults for what that
// leaves out are what the full meta.json of the same run records (block size 16,
// gpu_memory_utilization 0.9, prefix caching, async scheduling, one partial prefill), so the
// replay must be the full schema's first replay, figure for figure. The same run with some of
// the full meta.json's sections only replays as the full one too.
#include <doctest/doctest.h>

#include <filesystem>
#include <map>

#include <nlohmann/json.hpp>

#include "tests/cli_helpers.h"
#include "tests/test_paths.h"

using namespace isim;
namespace fs = std::filesystem;

namespace shared_older {

const std::string kRun = "/llmservingsim/vllm-RTX4090-llama-3.1-8b";
const std::string kDataset = "/llmservingsim/sharegpt-llama-3.1-8b-300-sps10.jsonl";

bool have_shared_older_inputs() {
  return fs::exists(test::shared_data() + kRun + "/meta.json") &&
         fs::exists(test::shared_data() + kDataset);
}

std::map<std::string, double> sims(const fs::path& against_json) {
  std::map<std::string, double> out;
  const auto j = nlohmann::json::parse(test::slurp(against_json));
  for (const auto& row : j["metrics"])
    out[row["metric"].get<std::string>()] = row["sim"].get<double>();
  return out;
}

}  // namespace shared_older

using namespace shared_older;

TEST_CASE(
    "against vllm: the shared RTX 4090 run with the older meta.json replays as with the "
    "full one" *
    doctest::skip(isim::test::absent(!have_shared_older_inputs()))) {
  const fs::path dir = test::scratch("against-shared-older"), run = dir / "run";
  fs::create_directories(run);
  fs::copy_file(test::shared_data() + kRun + "/requests.jsonl", run / "requests.jsonl");
  fs::copy_file(test::shared_data() + kDataset, dir / fs::path(kDataset).filename());
  const auto full = nlohmann::json::parse(test::slurp(test::shared_data() + kRun + "/meta.json"));
  nlohmann::json older;
  for (const char* k :
       {"schema_version", "model", "vllm_version", "engine_kwargs", "dataset_path", "dataset_hash",
        "num_requests", "started_at", "finished_at", "tick_seconds"})
    older[k] = full[k];
  test::write_file(run / "meta.json", older.dump(2));
  const std::string profile =
      test::source_dir() + "/calibrate/profiles/rtx4090-llama-3.1-8b.llmservingsim.yaml";
  std::string so, se;
  REQUIRE(test::run_bin("isim",
                        "validate --against vllm " + run.string() + " --profile " + profile +
                            " --out " + (dir / "older").string(),
                        &so, &se) == 0);
  CAPTURE(se);
  MESSAGE(so);
  CHECK(so.find("\nassumed: GPU: NVIDIA GeForce RTX 4090 (the profile's device; meta.json does "
                "not name one)\n") != std::string::npos);
  CHECK(so.find("\nassumed: engine_kwargs.block_size 16 (not stated; vLLM 0.19.0: ") !=
        std::string::npos);
  CHECK(so.find("\nassumed: engine_kwargs.async_scheduling true (not stated; vLLM 0.19.0: ") !=
        std::string::npos);
  CHECK(so.find("(sha256 matches meta.json dataset_hash)") != std::string::npos);

  REQUIRE(test::run_bin("isim",
                        "validate --against vllm " + test::shared_data() + kRun + " --profile " +
                            profile + " --out " + (dir / "full").string(),
                        nullptr, &se) == 0);
  const auto a = sims(dir / "older" / "against.json"), b = sims(dir / "full" / "against.json");
  CHECK(a.size() == 12);  // no gpu_blocks row: the older run does not state vLLM's count
  for (const auto& kv : a) {
    CAPTURE(kv.first);
    CHECK(kv.second == b.at(kv.first));
  }
}

TEST_CASE(
    "against vllm: the shared RTX 4090 run without hardware and resolved_config replays as "
    "with the full meta.json" *
    doctest::skip(isim::test::absent(!have_shared_older_inputs()))) {
  const fs::path dir = test::scratch("against-shared-partial"), run = dir / "run";
  fs::create_directories(run);
  fs::copy_file(test::shared_data() + kRun + "/requests.jsonl", run / "requests.jsonl");
  fs::copy_file(test::shared_data() + kDataset, dir / fs::path(kDataset).filename());
  nlohmann::json meta =
      nlohmann::json::parse(test::slurp(test::shared_data() + kRun + "/meta.json"));
  meta.erase("hardware");
  meta.erase("resolved_config");
  test::write_file(run / "meta.json", meta.dump(2));
  const std::string profile =
      test::source_dir() + "/calibrate/profiles/rtx4090-llama-3.1-8b.llmservingsim.yaml";
  std::string so, se;
  REQUIRE(test::run_bin("isim",
                        "validate --against vllm " + run.string() + " --profile " + profile +
                            " --out " + (dir / "partial").string(),
                        &so, &se) == 0);
  CAPTURE(se);
  MESSAGE(so);
  CHECK(so.find(" on NVIDIA GeForce RTX 4090 (meta.json has no hardware, resolved_config)\n") !=
        std::string::npos);
  CHECK(so.find("\nassumed: GPU: NVIDIA GeForce RTX 4090 (the profile's device; meta.json does "
                "not name one)\n") != std::string::npos);
  CHECK(so.find("\nassumed: engine_kwargs.async_scheduling true (not stated; vLLM 0.19.0: ") !=
        std::string::npos);
  CHECK(so.find("\ncapacity error: +7.84% GPU KV blocks (predicted 2,791 vs vLLM's 2,588)\n") !=
        std::string::npos);
  REQUIRE(test::run_bin("isim",
                        "validate --against vllm " + test::shared_data() + kRun + " --profile " +
                            profile + " --out " + (dir / "full").string(),
                        nullptr, &se) == 0);
  // Both replays, figure for figure: at the predicted count and at vLLM's 2,588 blocks.
  const auto a = nlohmann::json::parse(test::slurp(dir / "partial" / "against.json"));
  const auto b = nlohmann::json::parse(test::slurp(dir / "full" / "against.json"));
  REQUIRE(a["replays"].size() == 2);
  REQUIRE(b["replays"].size() == 2);
  for (size_t r = 0; r < 2; ++r) {
    CAPTURE(r);
    CHECK(a["replays"][r]["gpu_blocks"] == b["replays"][r]["gpu_blocks"]);
    CHECK(a["replays"][r]["metrics"] == b["replays"][r]["metrics"]);
  }
}
