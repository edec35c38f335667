// isim run --bench-json FILE (experiments/run/bench_json.h): the copy of each policy's bench.json,
// one file per policy with several, byte-identical for the same seed, and its refusals, each
// before any output.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/cli_helpers.h"

namespace fs = std::filesystem;

namespace {

std::string bench_cli_profile() {
  return isim::test::source_dir() + "/calibrate/profiles/a100-80g-gptj-6b.infercept.yaml";
}

// A run on the built-in generator (no data needed), with `policy_line` naming its policies.
std::string bench_cli_spec(const fs::path& dir, const std::string& policy_line,
                           const std::string& file = "spec.yaml") {
  return isim::test::write_file(dir / file,
                                "name: bj\nseed: 3\ntrace: {from: generator, sessions: 4}\n"
                                "arrival: {process: poisson, rate: 4}\nprofile: " +
                                    bench_cli_profile() + "\n" + policy_line + "\n");
}

int bench_cli_run(const std::string& args, std::string* err) {
  return isim::test::run_bin("isim", "run " + args, nullptr, err);
}

}  // namespace

TEST_CASE("--bench-json FILE: the run folder's bench.json, the same bytes for the same seed") {
  const fs::path d = isim::test::scratch("bench-json-one");
  const std::string spec = bench_cli_spec(d, "policy: preserve");
  std::string err;
  REQUIRE(bench_cli_run(
              spec + " --out " + (d / "o").string() + " --bench-json " + (d / "b.json").string(),
              &err) == 0);
  CHECK(err.find("preserve: bench.json -> " + (d / "b.json").string() + "\n") != std::string::npos);
  const std::string copy = isim::test::slurp(d / "b.json");
  CHECK(copy == isim::test::slurp(d / "o" / "preserve" / "bench.json"));
  const auto j = nlohmann::json::parse(copy);
  CHECK(j["label"] == "preserve");
  CHECK(j["request_rate"] == 4.0);  // the spec's Poisson rate
  CHECK(j["completed"].get<int>() + j["failed"].get<int>() == j["num_prompts"].get<int>());
  // Again, to another folder: byte-identical.
  REQUIRE(bench_cli_run(spec + " --out " + (d / "o2").string(), &err) == 0);
  CHECK(isim::test::slurp(d / "o2" / "preserve" / "bench.json") == copy);
}

TEST_CASE("--bench-json FILE with several policies writes FILE.POLICY.json, one per policy") {
  const fs::path d = isim::test::scratch("bench-json-several");
  const std::string spec = bench_cli_spec(d, "policies: [preserve, swap]");
  std::string err;
  REQUIRE(bench_cli_run(
              spec + " --out " + (d / "o").string() + " --bench-json " + (d / "b.json").string(),
              &err) == 0);
  CHECK_FALSE(fs::exists(d / "b.json"));  // no policy overwrites another's
  for (const std::string p : {"preserve", "swap"}) {
    CHECK(isim::test::slurp(d / ("b." + p + ".json")) ==
          isim::test::slurp(d / "o" / p / "bench.json"));
    CHECK(nlohmann::json::parse(isim::test::slurp(d / ("b." + p + ".json")))["label"] == p);
  }
}

TEST_CASE("--bench-json refusals come before any output, exit 2") {
  const fs::path d = isim::test::scratch("bench-json-refusals");
  const std::string spec = bench_cli_spec(d, "policy: preserve");
  const std::string out = " --out " + (d / "o").string();
  std::string err;
  SUBCASE("a folder that does not exist") {
    const std::string f = (d / "nodir" / "b.json").string();
    CHECK(bench_cli_run(spec + out + " --bench-json " + f, &err) == 2);
    CHECK(err ==
          "isim: error: --bench-json " + f + ": no such folder " + (d / "nodir").string() + "\n");
  }
  SUBCASE("a folder") {
    fs::create_directories(d / "a-folder");
    const std::string f = (d / "a-folder").string();
    CHECK(bench_cli_run(spec + out + " --bench-json " + f, &err) == 2);
    CHECK(err == "isim: error: --bench-json " + f + ": is a folder; give a file to write\n");
  }
  SUBCASE("an input: the spec, or the profile") {
    CHECK(bench_cli_run(spec + out + " --bench-json " + spec, &err) == 2);
    CHECK(err == "isim: error: --bench-json " + spec + ": is the input " + spec +
                     "; writing it would replace it: give another file\n");
    CHECK(bench_cli_run(spec + out + " --bench-json " + bench_cli_profile(), &err) == 2);
    CHECK(err == "isim: error: --bench-json " + bench_cli_profile() + ": is the input " +
                     bench_cli_profile() + "; writing it would replace it: give another file\n");
  }
  SUBCASE("several policies: a per-policy name that is an input") {
    // The spec itself is b.swap.json: FILE b.json would become it for policy swap.
    const std::string s2 = bench_cli_spec(d, "policies: [preserve, swap]", "b.swap.json");
    const std::string f = (d / "b.json").string();
    const std::string per = (d / "b.swap.json").string();
    CHECK(bench_cli_run(s2 + out + " --bench-json " + f, &err) == 2);
    CHECK(err == "isim: error: --bench-json " + per + ": is the input " + s2 +
                     "; writing it would replace it: give another file\n");
    CHECK_FALSE(fs::exists(d / "b.preserve.json"));
  }
  SUBCASE("two policies of one name") {
    const std::string s2 = bench_cli_spec(d, "policies: [preserve, swap, preserve]", "dup.yaml");
    const std::string per = (d / "b.preserve.json").string();
    CHECK(bench_cli_run(s2 + out + " --bench-json " + (d / "b.json").string(), &err) == 2);
    CHECK(err == "isim: error: --bench-json " + per +
                     ": policies 1 and 3 are both named preserve, so one file would replace the "
                     "other: run them separately\n");
  }
  SUBCASE("an empty name") {
    CHECK(bench_cli_run(spec + out + " --bench-json ''", &err) == 2);
    CHECK(err == "isim: error: --bench-json: expected a value, got ''\n");
  }
  CHECK_FALSE(fs::exists(d / "o"));  // nothing ran, no folder was made
}

TEST_CASE("metrics.bench_json: summary drops the per-request lists, off writes no bench.json") {
  const fs::path d = isim::test::scratch("bench-json-modes");
  const std::string spec = bench_cli_spec(d, "policy: preserve");
  std::string err;
  REQUIRE(bench_cli_run(spec + " --out " + (d / "full").string(), &err) == 0);
  REQUIRE(bench_cli_run(spec + " --out " + (d / "sum").string() + " -p metrics.bench_json=summary",
                        &err) == 0);
  const auto full =
      nlohmann::json::parse(isim::test::slurp(d / "full" / "preserve" / "bench.json"));
  const auto sum = nlohmann::json::parse(isim::test::slurp(d / "sum" / "preserve" / "bench.json"));
  // The seven lists of --save-detailed are in the full file only; every other field is equal.
  for (const char* k :
       {"input_lens", "output_lens", "ttfts", "itls", "latencies", "start_times", "errors"}) {
    CAPTURE(k);
    CHECK(full.contains(k));
    CHECK(!sum.contains(k));
  }
  for (const auto& item : sum.items()) {
    const std::string k = item.key();  // CAPTURE cannot take a structured binding under clang
    CAPTURE(k);
    CHECK(full.at(k) == item.value());
  }
  CHECK(sum.size() + 7 == full.size());
  // The resolved config records the choice, so the run can be repeated as it was.
  CHECK(isim::test::slurp(d / "sum" / "preserve" / "config.resolved.yaml")
            .find("bench_json: summary") != std::string::npos);

  REQUIRE(bench_cli_run(spec + " --out " + (d / "off").string() + " -p metrics.bench_json=off",
                        &err) == 0);
  CHECK(fs::exists(d / "off" / "preserve" / "summary.json"));
  CHECK(!fs::exists(d / "off" / "preserve" / "bench.json"));
}

TEST_CASE("metrics.bench_json: a bad value, and --bench-json with off, are refused before output") {
  const fs::path d = isim::test::scratch("bench-json-modes-bad");
  const std::string spec = bench_cli_spec(d, "policy: preserve");
  std::string err;
  CHECK(bench_cli_run(spec + " --out " + (d / "o").string() + " -p metrics.bench_json=all", &err) ==
        2);
  CHECK(err.find("metrics.bench_json: expected detailed, summary or off, got 'all'") !=
        std::string::npos);
  CHECK(bench_cli_run(spec + " --out " + (d / "o").string() + " -p metrics.bench_json=off" +
                          " --bench-json " + (d / "b.json").string(),
                      &err) == 2);
  CHECK(err.find("--bench-json " + (d / "b.json").string() +
                 ": metrics.bench_json is off, so the run writes no bench.json to copy; give "
                 "-p metrics.bench_json=detailed (or summary)") != std::string::npos);
  CHECK(!fs::exists(d / "o"));
  CHECK(!fs::exists(d / "b.json"));
}
