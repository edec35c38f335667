// The checks a trace gets on the command line: an empty trace is an error naming the file (run,
// sweep, trace stats), a file of another format names the --from it needs, and a replay whose
// sessions all arrive at once warns (exit code unchanged).
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "tests/cli_helpers.h"
#include "tests/test_paths.h"

using namespace isim;
namespace fs = std::filesystem;

namespace {

std::string profile() {
  return test::source_dir() + "/calibrate/profiles/a100-80g-gptj-6b.infercept.yaml";
}

std::string session(const std::string& id, double arrival) {
  return R"({"id":")" + id + R"(","arrival_s":)" + std::to_string(arrival) +
         R"(,"segments":[{"input":30,"output":4}]})"
         "\n";
}

}  // namespace

TEST_CASE("an empty trace is an error naming the file: trace stats, run, sweep") {
  const fs::path d = test::scratch("empty-trace");
  for (const std::string text : {"", "\n\n"}) {
    const std::string t = test::write_file(d / "empty.jsonl", text);
    std::string out, err;
    CHECK(test::run_bin("isim", "trace stats " + t, &out, &err) == 2);
    CHECK(out.empty());
    CHECK(err.find(t + ": no sessions") != std::string::npos);
    CHECK(test::run_bin("isim",
                        "run --trace " + t + " --profile " + profile() +
                            " --policy preserve --out " + (d / "run").string(),
                        &out, &err) == 2);
    CHECK(out.empty());  // no row of zeros
    CHECK(err.find(t + ": no sessions") != std::string::npos);
    const std::string spec = test::write_file(
        d / "sweep.yaml", "name: empty\ntrace:\n  from: jsonl\n  path: " + t +
                              "\narrival:\n  process: poisson\n  rate: 1\nprofile: " + profile() +
                              "\npolicies: [preserve]\nsweep:\n  arrival.rate: [1, 2]\n");
    CHECK(test::run_bin("isim", "sweep " + spec + " --out " + (d / "sweep").string(), &out,
                        &err) == 2);
    CHECK(err.find(t + ": no sessions") != std::string::npos);
  }
}

TEST_CASE("trace stats and run on a file of another format name the --from it needs") {
  const std::string f = test::data_dir() + "/infercept-excerpt.json";
  const std::string hint = f +
                           ":1: not a native JSONL trace; it looks like an InferCept trace: add "
                           "--from infercept (in a spec: trace.from: infercept)";
  std::string out, err;
  CHECK(test::run_bin("isim", "trace stats " + f, &out, &err) == 2);
  CHECK(err == "isim: error: " + hint + "\n");
  const fs::path d = test::scratch("hint-run");
  CHECK(test::run_bin("isim",
                      "run --trace " + f + " --profile " + profile() +
                          " --policy preserve --out " + (d / "r").string(),
                      &out, &err) == 2);
  CHECK(err == "isim: error: " + hint + "\n");
  // With the right --from it reads.
  CHECK(test::run_bin("isim", "trace stats " + f + " --from infercept", &out, &err) == 0);
}

TEST_CASE("a replay whose sessions all arrive at once warns and says how to set a rate") {
  const fs::path d = test::scratch("burst");
  const std::string burst = test::write_file(
      d / "burst.jsonl", session("a", 2.5) + session("b", 2.5) + session("c", 2.5));
  const std::string spread = test::write_file(
      d / "spread.jsonl", session("a", 0) + session("b", 1) + session("c", 2.5));
  const std::string run = " --profile " + profile() + " --policy preserve --out ";
  std::string out, err;
  CHECK(test::run_bin("isim", "run --trace " + burst + run + (d / "1").string(), &out, &err) ==
        0);
  CHECK(err.find("warning: " + burst +
                 ": all 3 sessions arrive at t = 2.5 s (arrival.process: replay of a trace "
                 "without arrival times): one burst, not a steady load; give a rate: --rate R, "
                 "or -p arrival.process=poisson -p arrival.rate=R\n") != std::string::npos);
  // Spread arrivals, or a rate: no warning.
  CHECK(test::run_bin("isim", "run --trace " + spread + run + (d / "2").string(), &out, &err) ==
        0);
  CHECK(err.find("warning:") == std::string::npos);
  CHECK(test::run_bin("isim", "run --trace " + burst + run + (d / "3").string() + " --rate 2",
                      &out, &err) == 0);
  CHECK(err.find("warning:") == std::string::npos);
}
