// `isim run --metrics` files through Prometheus' own reader: promtool (Debian's prometheus;
// scripts/deps --test installs it) turns them into TSDB blocks (`promtool tsdb
// create-blocks-from openmetrics`), and `promtool tsdb dump --match` reads the stored samples
// back: the two-session schedule's values at their timestamps, by hand
// (tests/experiments/openmetrics_fixture.h), with and without an epoch; and a fleet's file from
// the real binary loads whole.
//
// Its own main: without promtool on PATH it exits 77, which CTest (SKIP_RETURN_CODE 77) reports
// as skipped, never as passed; with ISIM_REQUIRE_DATA=1 (CI) it runs and fails instead.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "experiments/run/openmetrics.h"
#include "tests/cli_helpers.h"
#include "tests/doctest_main.h"
#include "tests/experiments/openmetrics_fixture.h"
#include "tests/test_paths.h"

using namespace isim;
namespace fs = std::filesystem;

namespace om_promtool {

// Loads `text` into a fresh TSDB folder; returns it (promtool's exit code checked).
fs::path load(const std::string& name, const std::string& text) {
  const fs::path d = test::scratch("om-promtool-" + name);
  test::write_file(d / "m.om", text);
  std::string out, err;
  const int rc = test::run_shell("promtool tsdb create-blocks-from openmetrics " +
                                     (d / "m.om").string() + " " + (d / "db").string(),
                                 &out, &err);
  CAPTURE(out);
  CAPTURE(err);
  REQUIRE(rc == 0);
  fs::create_directories(d / "db" / "wal");  // dump reads the WAL too: an empty one
  return d / "db";
}

// promtool's dump of the series of metric `name`.
std::string dump(const fs::path& db, const std::string& name) {
  std::string out;
  REQUIRE(test::run_shell("promtool tsdb dump --match='{__name__=\"" + name + "\"}' " + db.string(),
                          &out) == 0);
  return out;
}

// The line dump prints for one expected value: labels sorted, time in milliseconds.
std::string dump_line(const om_test::OmExpect& e, int64_t epoch_ms) {
  const std::string extra = e.extra.empty() ? "" : e.extra + ", ";
  return "{__name__=\"" + e.name + "\", engine=\"0\", " + extra +
         "model_name=\"test\", replica=\"0\"} " + e.value + " " +
         std::to_string(epoch_ms + e.t_ms) + "\n";
}

}  // namespace om_promtool

TEST_CASE("promtool: the two-session schedule's values read back at their timestamps") {
  const cluster::RunResult r = om_test::two_session_run();
  for (const int64_t epoch : {int64_t{0}, int64_t{1767225600}}) {
    CAPTURE(epoch);
    exp::OmOptions o = om_test::two_session_options();
    o.epoch_s = epoch;
    const fs::path db =
        om_promtool::load("two-" + std::to_string(epoch), exp::openmetrics_text(r, o));
    for (const om_test::OmExpect& e : om_test::two_session_points()) {
      const std::string line = om_promtool::dump_line(e, epoch * 1000);
      CAPTURE(line);
      CHECK(om_promtool::dump(db, e.name).find(line) != std::string::npos);
    }
    // 6 samples, then the final point: 7 points of a counter; 6 of a gauge.
    const std::string tokens = om_promtool::dump(db, "vllm:generation_tokens_total");
    CHECK(std::count(tokens.begin(), tokens.end(), '\n') == 7);
    const std::string running = om_promtool::dump(db, "vllm:num_requests_running");
    CHECK(std::count(running.begin(), running.end(), '\n') == 6);
  }
}

TEST_CASE("promtool: a fleet's file from isim run --metrics loads whole, one series per replica") {
  const fs::path d = test::scratch("om-promtool-fleet");
  const std::string spec = test::write_file(
      d / "spec.yaml",
      "name: om\nseed: 3\ntrace: {from: generator, sessions: 24}\n"
      "arrival: {process: poisson, rate: 4}\nprofile: " +
          test::source_dir() + "/calibrate/profiles/a100-80g-gptj-6b.infercept.yaml\n" +
          "metrics: {timeseries_interval_s: 0.5}\npolicy: swap\n"
          "cluster: {replicas: 2, router: kv-aware}\n");
  REQUIRE(test::run_bin("isim", "run " + spec + " --out " + (d / "o").string() + " --metrics " +
                                    (d / "m.om").string() + " --metrics-epoch 1767225600") == 0);
  const fs::path db = om_promtool::load("fleet", test::slurp(d / "m.om"));
  const std::string running = om_promtool::dump(db, "vllm:num_requests_running");
  CHECK(running.find("replica=\"0\"") != std::string::npos);
  CHECK(running.find("replica=\"1\"") != std::string::npos);
  // The first sample, at simulated 0, is stored at the epoch.
  CHECK(running.find("} 0 1767225600000\n") != std::string::npos);
}

int main(int argc, char** argv) {
  if (std::system("command -v promtool > /dev/null 2>&1") != 0 && !test::data_required()) {
    std::fputs(
        "promtool is not on PATH (Debian package prometheus; scripts/deps --test): the\n"
        "OpenMetrics round trip did not run (exit 77)\n",
        stdout);
    return 77;
  }
  return test::run_doctest_in_own_tmpdir(argc, argv);
}
