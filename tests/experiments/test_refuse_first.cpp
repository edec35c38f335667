// Issue 36, files: refusals that come before any output (a spec's name that is a path,
// --trace-events to a folder, profile show --plot to no folder), and an edited sweep journal
// refused on merge with its file, line and key.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "core/input_error.h"
#include "experiments/sweep/sweep_shards.h"
#include "tests/cli_helpers.h"
#include "tests/input_error_text.h"
#include "tests/spec_helpers.h"

namespace fs = std::filesystem;
using isim::test::error_of_call;

namespace {

const char* kRefuseFirstName =
    "expected a file name (it names the folder results/NAME: no '/', not empty, '.' or '..'), "
    "got ";

std::string refuse_first_profile() {
  return isim::test::source_dir() + "/calibrate/profiles/a100-80g-gptj-6b.infercept.yaml";
}

// A run on the built-in generator (no data needed).
std::string refuse_first_spec(const fs::path& dir) {
  return isim::test::write_file(dir / "spec.yaml",
                                "name: rf\nseed: 3\ntrace: {from: generator, sessions: 4}\n"
                                "arrival: {process: poisson, rate: 4}\nprofile: " +
                                    refuse_first_profile() + "\npolicy: preserve\n");
}

}  // namespace

TEST_CASE("refuse first: a spec's name is a file name, never a path") {
  const std::string spec = "trace: {from: generator, sessions: 2}\nprofile: p\npolicy: swap\n";
  // Line 1 holds the name in each spec below.
  CHECK(isim::test::error_of("name: ../evil\n" + spec) ==
        std::string("e.yaml:1: name: ") + kRefuseFirstName + "'../evil'");
  CHECK(isim::test::error_of("name: /tmp/x\n" + spec) ==
        std::string("e.yaml:1: name: ") + kRefuseFirstName + "'/tmp/x'");
  CHECK(isim::test::error_of("name: ..\n" + spec) ==
        std::string("e.yaml:1: name: ") + kRefuseFirstName + "'..'");
  CHECK(isim::test::error_of("name: ''\n" + spec) ==
        std::string("e.yaml:1: name: ") + kRefuseFirstName + "''");
  CHECK(isim::test::error_of("name: ok-name.v2\n" + spec) == "(no error)");
  // The flag form names the flag; nothing is written outside results/.
  const fs::path d = isim::test::scratch("refuse-first-name");
  std::string err;
  CHECK(isim::test::run_shell("cd " + d.string() + " && " + isim::test::bin_dir() + "/isim run " +
                                  refuse_first_spec(d) + " -p name=../evil",
                              nullptr, &err) == 2);
  CHECK(err ==
        std::string("isim: error: -p name=../evil: name: ") + kRefuseFirstName + "'../evil'\n");
  CHECK_FALSE(fs::exists(d / "evil"));
  CHECK_FALSE(fs::exists(d / "results"));
}

TEST_CASE("refuse first: --trace-events to a folder is refused before the first policy runs") {
  const fs::path d = isim::test::scratch("refuse-first-trace-events");
  fs::create_directories(d / "a-folder");
  std::string err;
  CHECK(isim::test::run_bin("isim",
                            "run " + refuse_first_spec(d) + " --out " + (d / "o").string() +
                                " --trace-events " + (d / "a-folder").string(),
                            nullptr, &err) == 2);
  CHECK(err == "isim: error: --trace-events " + (d / "a-folder").string() +
                   ": is a folder; give a file to write\n");
  CHECK_FALSE(fs::exists(d / "o"));  // no policy ran
}

TEST_CASE("refuse first: profile show --plot checks its destination before the work") {
  std::string out, err;
  CHECK(isim::test::run_bin(
            "isim", "profile show " + refuse_first_profile() + " --plot /nonexistent-dir/p.png",
            &out, &err) == 2);
  CHECK(err == "isim: error: --plot /nonexistent-dir/p.png: no such folder /nonexistent-dir\n");
  CHECK(out.empty());  // the summary was not printed either
}

TEST_CASE("refuse first: a journal whose numeric metric became text is refused on merge") {
  const fs::path d = isim::test::scratch("refuse-first-journal");
  const std::string head = R"({"isim_sweep_shard":1,"isim":"x","spec":"0","runs":1,"shard":[1,1],)"
                           R"("columns":["run_index","policy","estimator","ttft_s.mean"]})"
                           "\n";
  auto record = [](const std::string& value) {
    return R"({"index":0,"key":"policy=swap","fingerprint":"0","policy":"swap","point":[],)"
           R"("estimator":"","metrics":{"ttft_s.mean":)" +
           value + R"(},"warning":"","skipped":false})" + "\n";
  };
  const std::string good = isim::test::write_file(d / "good.jsonl", head + record("\"1.5\""));
  // The CSV row: run_index 0, policy swap, no estimator, ttft_s.mean 1.5.
  CHECK(isim::exp::merge_shards({good}) == "run_index,policy,estimator,ttft_s.mean\n0,swap,,1.5\n");
  const std::string bad = isim::test::write_file(d / "bad.jsonl", head + record("\"fast\""));
  // Line 2: the record after the header.
  CHECK(error_of_call([&] { isim::exp::merge_shards({bad}); }) ==
        bad +
            ":2: metrics.ttft_s.mean: expected a number (or nothing), as every run writes it, "
            "got \"fast\": the journal was edited; remove the record to rerun it");
  const std::string empty = isim::test::write_file(d / "empty.jsonl", head + record("\"\""));
  CHECK(isim::exp::merge_shards({empty}) == "run_index,policy,estimator,ttft_s.mean\n0,swap,,\n");
}
