// `isim profile import` end to end: the binary on the committed excerpts, its exit codes and
// messages, and a profile that loads back.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "sim/profile.h"
#include "tests/cli_helpers.h"

namespace fs = std::filesystem;

namespace {

const std::string kSrc = ISIM_SOURCE_DIR;

// Runs `isim profile import ARGS`; returns the exit code, with stderr in `err`.
int import(const std::string& args, std::string* err) {
  return isim::test::run_bin("isim", "profile import " + args, nullptr, err);
}

}  // namespace

TEST_CASE("isim profile import: both formats write a profile that loads") {
  const std::string model = kSrc + "/calibrate/models/llama-3.1-8b.yaml";
  const fs::path out = fs::temp_directory_path() / "isim-test-import-cli.yaml";
  std::string err;
  CHECK(import("--from llmservingsim --model " + model + " " + kSrc +
                   "/tests/data/llmservingsim-excerpt --out " + out.string(),
               &err) == 0);
  CHECK(err.find("T(1) = ") != std::string::npos);
  const auto a = isim::sim::load_profile(out.string());
  CHECK(a.device.name == "NVIDIA GeForce RTX 4090");
  CHECK(isim::test::slurp(out).rfind("# llama-3.1-8b on NVIDIA GeForce RTX 4090, imported from "
                                     "llmservingsim",
                                     0) == 0);
  CHECK(import("--from aiconfigurator --model " + model + " " + kSrc +
                   "/tests/data/aiconfigurator-excerpt --out " + out.string(),
               &err) == 0);
  CHECK(isim::sim::load_profile(out.string()).device.name == "H200-SXM");
}

TEST_CASE("isim profile import: usage and input errors exit 2 and say why") {
  const std::string model = kSrc + "/calibrate/models/llama-3.1-8b.yaml";
  const std::string out = (fs::temp_directory_path() / "isim-test-import-cli-bad.yaml").string();
  std::string err;
  CHECK(import("--from vidur --model " + model + " x --out " + out, &err) == 2);
  CHECK(err.find("unknown --from 'vidur'; valid: aiconfigurator, llmservingsim") !=
        std::string::npos);
  CHECK(import("--from llmservingsim --model " + model + " --out " + out, &err) == 2);
  CHECK(err.find("missing IN_DIR") != std::string::npos);
  CHECK(import("--from aiconfigurator --model " + model + " /nonexistent --out " + out, &err) == 2);
  CHECK(err.find("/nonexistent/h200_sxm.yaml: cannot open") != std::string::npos);
}
