// The one path a user follows from a model and a folder of measured tables to a simulation
// (issue 32): `isim model import` of the model's Hugging Face config, `isim profile import
// --from llmservingsim DIR --tp N`, then `isim run` of the shared ShareGPT trace on the profile
// (policy discard, scheduler vllm-v1: the tables were measured under vLLM 0.19, and vllm-v0 could
// never prefill whole the two requests longer than its 4,096-token budget). Every shared table
// folder, MoE and tp-2 included, must take it; the real binary runs each step, as a user would.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/cli_helpers.h"

namespace fs = std::filesystem;
using namespace isim::test;

namespace {

struct Folder {
  const char* tables;  // under llmservingsim/
  const char* config;  // under llmservingsim/models/
  int tp;
};

// The folders of ../shared/data/llmservingsim and the config of the model each measured.
constexpr Folder kFolders[] = {
    {"RTX4090-llama-3.1-8b", "Llama-3.1-8B.json", 1},
    {"RTXPRO6000-llama-3.1-8b", "Llama-3.1-8B.json", 1},
    {"RTXPRO6000-llama-3.1-8b-tp2", "Llama-3.1-8B.json", 2},
    {"RTXPRO6000-qwen3-32b", "Qwen3-32B.json", 1},
    {"RTXPRO6000-qwen3-32b-tp2", "Qwen3-32B.json", 2},
    {"RTXPRO6000-qwen3-30b-a3b", "Qwen3-30B-A3B-Instruct-2507.json", 1},
    {"RTXPRO6000-qwen3-30b-a3b-tp2", "Qwen3-30B-A3B-Instruct-2507.json", 2},
};

std::string lss() {
  return shared_data() + "/llmservingsim";
}

void user_path(const Folder& f) {
  CAPTURE(f.tables);
  const fs::path dir = scratch(std::string("user-path-") + f.tables);
  const std::string model = (dir / "m.yaml").string();
  const std::string profile = (dir / "p.yaml").string();
  std::string out, err;
  REQUIRE_MESSAGE(
      run_bin("isim", "model import " + lss() + "/models/" + f.config + " --out " + model, &out,
              &err) == 0,
      err);
  REQUIRE_MESSAGE(
      run_bin("isim",
              "profile import --from llmservingsim " + lss() + "/" + f.tables + " --model " +
                  model + " --tp " + std::to_string(f.tp) + " --out " + profile,
              &out, &err) == 0,
      err);
  REQUIRE_MESSAGE(
      run_bin("isim",
              "run --trace " + lss() +
                  "/sharegpt-llama-3.1-8b-300-sps10.jsonl --from "
                  "llmservingsim --profile " +
                  profile + " --policy discard --scheduler vllm-v1 --no-progress --out " +
                  (dir / "run").string(),
              &out, &err) == 0,
      err);
  const auto summary = nlohmann::json::parse(slurp(dir / "run" / "discard" / "summary.json"));
  // All 300 requests of the trace finish, each with a first token after its arrival.
  CHECK(summary.at("sessions").get<int>() == 300);
  CHECK(summary.at("finished").get<int>() == 300);
  CHECK(summary.at("ttft_s").at("mean").get<double>() > 0);
}

}  // namespace

TEST_CASE("user path: every shared table folder imports at its TP and runs ShareGPT" *
          doctest::skip(isim::test::absent(!fs::exists(shared_data() + "/llmservingsim")))) {
  for (const Folder& f : kFolders) user_path(f);
}
