// `isim run --metrics FILE.om [--metrics-epoch S]` (experiments/run/metrics_out.h) through the
// real binary: one file per policy on a fleet, its shape, determinism, the epoch, the run's own
// outputs unchanged; each bad flag exits 2 with its message before any run. And the writer in
// pieces it uses (core/atomic_file.h).
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <iterator>
#include <stdexcept>
#include <string>

#include "core/atomic_file.h"
#include "tests/cli_helpers.h"
#include "tests/test_paths.h"

using namespace isim;
namespace fs = std::filesystem;

namespace om_cli {

int run_isim(const std::string& args, std::string* err = nullptr) {
  return test::run_bin("isim", args, nullptr, err);
}

// A spec on the built-in generator (no data needed), with `extra` appended.
std::string write_spec(const fs::path& dir, const std::string& extra) {
  return test::write_file(dir / "spec.yaml",
                          "name: om\nseed: 3\ntrace: {from: generator, sessions: 24}\n"
                          "arrival: {process: poisson, rate: 4}\nprofile: " +
                              test::source_dir() +
                              "/calibrate/profiles/a100-80g-gptj-6b.infercept.yaml\n" +
                              "metrics: {timeseries_interval_s: 0.5}\n" + extra);
}

}  // namespace om_cli

TEST_CASE("isim run --metrics on a fleet: one file per policy, per replica, deterministic") {
  const fs::path d = test::scratch("om-cli-fleet");
  const std::string spec = om_cli::write_spec(
      d, "policies: [swap, discard]\ncluster: {replicas: 2, router: kv-aware}\n");
  std::string err;
  REQUIRE(om_cli::run_isim("run " + spec + " --out " + (d / "o").string() + " --metrics " +
                               (d / "m.om").string(),
                           &err) == 0);
  for (const char* p : {"swap", "discard"}) {
    CAPTURE(p);
    const fs::path file = d / (std::string("m.") + p + ".om");
    CHECK(err.find(std::string(p) + ": OpenMetrics, ") != std::string::npos);
    // "..., N samples per series, S MB -> FILE", S the file's size in millions of bytes.
    char size[32];
    std::snprintf(size, sizeof size, "%.1f", static_cast<double>(fs::file_size(file)) / 1e6);
    CHECK(err.find(std::string("samples per series, ") + size + " MB -> " + file.string()) !=
          std::string::npos);
    const std::string text = test::slurp(file);
    CHECK(text.rfind("# HELP vllm:num_requests_running ", 0) == 0);
    CHECK(text.substr(text.size() - 6) == "# EOF\n");
    // The GPT-J profile's model; replicas 0 and 1, engine 0 each; the first sample at 0 s.
    CHECK(text.find("vllm:num_requests_running{model_name=\"gpt-j-6b\",engine=\"0\","
                    "replica=\"0\"} 0 0.000\n") != std::string::npos);
    CHECK(text.find("replica=\"1\"") != std::string::npos);
  }
  CHECK_FALSE(fs::exists(d / "m.om"));
  // Again with an epoch: the same bytes but the stamps; the run's own outputs do not change.
  REQUIRE(om_cli::run_isim("run " + spec + " --out " + (d / "p").string() + " --metrics " +
                           (d / "n.om").string() + " --metrics-epoch 1767225600") == 0);
  REQUIRE(om_cli::run_isim("run " + spec + " --out " + (d / "q").string() + " --metrics " +
                           (d / "k.om").string()) == 0);
  CHECK(test::slurp(d / "m.swap.om") == test::slurp(d / "k.swap.om"));
  const std::string dated = test::slurp(d / "n.swap.om");
  CHECK(dated.find("replica=\"0\"} 0 1767225600.000\n") != std::string::npos);
  CHECK(dated.find(" 0.000\n") == std::string::npos);
  REQUIRE(om_cli::run_isim("run " + spec + " --out " + (d / "r").string()) == 0);
  for (const char* f : {"summary.json", "sessions.csv", "timeseries.csv", "replicas.csv"})
    CHECK(test::slurp(d / "o/discard" / f) == test::slurp(d / "r/discard" / f));
}

TEST_CASE("isim run: bad --metrics flags exit 2 naming the flag, before any run") {
  const fs::path d = test::scratch("om-cli-bad");
  const std::string spec = om_cli::write_spec(d, "policy: preserve\n");
  const std::string base = "run " + spec + " --out " + (d / "o").string();
  std::string err;
  for (const char* v : {"-1", "1.5", "abc", "4102444801"}) {
    CAPTURE(v);
    CHECK(om_cli::run_isim(
              base + " --metrics " + (d / "m.om").string() + " --metrics-epoch='" + v + "'",
              &err) == 2);
    CHECK(err.find("--metrics-epoch: expected a whole number of seconds from 0 to 4102444800 "
                   "(Unix time), got '" +
                   std::string(v) + "'") != std::string::npos);
  }
  CHECK(om_cli::run_isim(base + " --metrics-epoch 5", &err) == 2);
  CHECK(err.find("isim: error: --metrics-epoch: needs --metrics FILE.om (there is no metrics "
                 "file to date)") != std::string::npos);
  CHECK(om_cli::run_isim(base + " --metrics " + (d / "nowhere/m.om").string(), &err) == 2);
  CHECK(err.find("--metrics " + (d / "nowhere/m.om").string() + ": the folder " +
                 (d / "nowhere").string() + " does not exist") != std::string::npos);
  fs::create_directories(d / "afolder");
  CHECK(om_cli::run_isim(base + " --metrics " + (d / "afolder").string(), &err) == 2);
  CHECK(err.find("--metrics " + (d / "afolder").string() + ": ") != std::string::npos);
  CHECK_FALSE(fs::exists(d / "o"));  // refused before the run folder
  CHECK_FALSE(fs::exists(d / "m.om"));
}

TEST_CASE("write_file_atomic in pieces: the pieces in order; a throwing producer leaves nothing") {
  const fs::path d = test::scratch("om-pieces");
  const std::string path = (d / "f.om").string();
  write_file_atomic(path, [](const PutText& write) {
    write("# HELP a b\n");
    write("");
    write("# EOF\n");
  });
  CHECK(test::slurp(path) == "# HELP a b\n# EOF\n");
  const auto thrower = [](const PutText& write) {
    write("half");
    throw std::runtime_error("stop");
  };
  CHECK_THROWS_AS(write_file_atomic((d / "g.om").string(), thrower), std::runtime_error);
  CHECK_FALSE(fs::exists(d / "g.om"));
  CHECK(std::distance(fs::directory_iterator(d), fs::directory_iterator()) == 1);  // f.om only
  // Over an existing file, a failed write keeps the old one.
  CHECK_THROWS_AS(write_file_atomic(path, thrower), std::runtime_error);
  CHECK(test::slurp(path) == "# HELP a b\n# EOF\n");
}
