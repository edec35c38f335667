// experiments/plots/plot_run.py and `isim run --plot`: a run's time series as a PNG, from a
// hand-made timeseries.csv and from a real run; its bad input (exit 2 naming the file, line and
// column) and isim's error without matplotlib (exit 2 before anything runs).
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "tests/cli_helpers.h"
#include "tests/experiments/plot_helpers.h"
#include "tests/test_paths.h"

using namespace isim;
namespace fs = std::filesystem;

namespace {

using test::plot_python;

const char* kHeader =
    "t_s,running,waiting,paused,swapped,gpu_blocks_used,cpu_blocks_used,queued_tokens,"
    "batch_tokens\n";

bool is_png(const fs::path& p) {
  const std::string head = test::slurp(p).substr(0, 8);
  return head == std::string("\x89PNG\r\n\x1a\n", 8);
}

int plot(const std::string& args, std::string* err = nullptr) {
  return test::run_plot_script("plot_run.py", args, nullptr, err);
}

std::string spec(const fs::path& d) {
  return test::write_file(d / "spec.yaml",
                          "name: pr\nseed: 1\ntrace: {from: generator, sessions: 20}\n"
                          "arrival: {process: poisson, rate: 4}\nprofile: " +
                              test::source_dir() +
                              "/calibrate/profiles/a100-80g-gptj-6b.infercept.yaml\n"
                              "policies: [swap, preserve]\n"
                              "metrics: {timeseries_interval_s: 0.5}\n");
}

}  // namespace

TEST_CASE("plot_run.py draws a hand-made time series" *
          doctest::skip(isim::test::absent(plot_python().empty()))) {
  const fs::path d = test::scratch("plot-run");
  // Five samples: two sessions run, one pauses and its KV goes to the CPU, then it swaps in.
  test::write_file(d / "timeseries.csv", std::string(kHeader) +
                                             "0,1,1,0,0,4,0,12,8\n"
                                             "0.5,2,0,0,0,9,0,0,2\n"
                                             "1,1,0,1,0,5,4,0,1\n"
                                             "1.5,0,0,0,1,2,4,5,0\n"
                                             "2,1,0,0,0,7,0,0,1\n");
  std::string err;
  REQUIRE(plot((d / "timeseries.csv").string() + " " + (d / "ts.png").string() +
                   " --title 'test-gpu · tiny · hand-made'",
               &err) == 0);
  CHECK(err.empty());
  CHECK(is_png(d / "ts.png"));
  CHECK(fs::file_size(d / "ts.png") > 10000);
  // No temporary file is left beside it.
  int files = 0;
  for ([[maybe_unused]] const auto& f : fs::directory_iterator(d)) ++files;
  CHECK(files == 2);
}

TEST_CASE("plot_run.py: bad input exits 2 naming the file, line and column" *
          doctest::skip(isim::test::absent(plot_python().empty()))) {
  const fs::path d = test::scratch("plot-run-bad");
  std::string err;
  test::write_file(d / "old.csv", "t_s,running,waiting,paused,swapped,gpu_blocks_used,"
                                  "cpu_blocks_used\n0,1,0,0,0,3,0\n");
  CHECK(plot((d / "old.csv").string() + " " + (d / "x.png").string(), &err) == 2);
  CHECK(err.find("old.csv: missing column(s) queued_tokens, batch_tokens") != std::string::npos);
  test::write_file(d / "nan.csv", std::string(kHeader) + "0,1,0,0,0,3,0,0,0\n1,x,0,0,0,3,0,0,0\n");
  CHECK(plot((d / "nan.csv").string() + " " + (d / "x.png").string(), &err) == 2);
  CHECK(err.find("nan.csv:3: column running: expected a number, got 'x'") != std::string::npos);
  test::write_file(d / "empty.csv", kHeader);
  CHECK(plot((d / "empty.csv").string() + " " + (d / "x.png").string(), &err) == 2);
  CHECK(err.find("empty.csv: no samples") != std::string::npos);
  CHECK(plot((d / "none.csv").string() + " " + (d / "x.png").string(), &err) == 2);
  CHECK(err.find("none.csv: no such file") != std::string::npos);
  CHECK_FALSE(fs::exists(d / "x.png"));
}

TEST_CASE("isim run --plot: timeseries.png in each policy's run folder" *
          doctest::skip(isim::test::absent(plot_python().empty()))) {
  const fs::path d = test::scratch("run-plot");
  std::string err;
  REQUIRE(test::run_bin("isim", "run " + spec(d) + " --out " + (d / "o").string() + " --plot",
                        nullptr, &err) == 0);
  for (const char* p : {"swap", "preserve"}) {
    CAPTURE(p);
    CHECK(is_png(d / "o" / p / "timeseries.png"));
    CHECK(err.find(std::string(p) + ": plot -> " + (d / "o" / p / "timeseries.png").string()) !=
          std::string::npos);
  }
  // The columns the plot reads are in the run's timeseries.csv.
  const std::string csv = test::slurp(d / "o/swap/timeseries.csv");
  CHECK(csv.rfind(kHeader, 0) == 0);
}

TEST_CASE("isim run --plot without matplotlib: exit 2 before the run, saying how to get it") {
  const fs::path d = test::scratch("run-plot-none");
  std::string err;
  CHECK(test::run_shell("ISIM_PYTHON=" + (d / "no-python").string() + " " + test::bin_dir() +
                            "/isim run " + spec(d) + " --out " + (d / "o").string() + " --plot",
                        nullptr, &err) == 2);
  CHECK(err.find("--plot: no python3 with matplotlib (tried " + (d / "no-python").string() +
                 "; install Debian's python3-matplotlib or set ISIM_PYTHON); nothing was run") !=
        std::string::npos);
  CHECK_FALSE(fs::exists(d / "o" / "swap"));
}
