// experiments/plots/plot_pd.py, the plots of the prefill/decode disaggregation sweep
// (experiments/specs/pd-adaptive.yaml), on a tiny synthetic sweep folder: both PNGs, the text
// table, and its errors (a missing column or file: exit 2 naming it; no matplotlib: exit 3).
#include <doctest/doctest.h>

#include "tests/test_paths.h"

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "tests/cli_helpers.h"
#include "tests/experiments/plot_helpers.h"

using namespace isim;
namespace fs = std::filesystem;

namespace {

using test::plot_python;

const char* kHeader =
    "run_index,policy,variant,trace.rate_scale,estimator,ttft_s.p95,e2e_s.mean,"
    "throughput_tokens_per_s,lost_kv_reuse_tokens.total\n";

// Four runs: mixed and online at two concurrency levels; the online runs have roles.csv, with a
// prefill count that changes after the phase boundary.
fs::path sweep_dir(const fs::path& d) {
  fs::create_directories(d / "runs");
  test::write_file(d / "results.csv", std::string(kHeader) +
                                          "0,preserve,mixed,2,,0.5,10,4000,100\n"
                                          "1,preserve,mixed,4,,8,30,7000,900\n"
                                          "2,preserve,online,2,,0.4,9,4100,50\n"
                                          "3,preserve,online,4,,2.5,20,7900,300\n");
  for (int i = 0; i < 4; ++i) fs::create_directories(d / "runs" / std::to_string(i));
  for (const char* i : {"2", "3"}) {
    std::string roles = "t_s,mixed,prefill,decode,switching,prefill_queued_tokens,decode_waiting\n";
    for (int t = 0; t <= 1200; t += 100) {
      const int prefill = t < 600 ? 6 : (t == 600 ? 5 : 3);
      const int switching = t == 600 ? 1 : 0;
      roles += std::to_string(t) + ",0," + std::to_string(prefill) + "," +
               std::to_string(16 - prefill - switching) + "," + std::to_string(switching) + "," +
               std::to_string(t < 600 ? 40000 : 2000) + "," + std::to_string(t < 600 ? 1 : 12) +
               "\n";
    }
    test::write_file(d / "runs" / i / "roles.csv", roles);
  }
  return d;
}

int plot(const std::string& args, std::string* out = nullptr, std::string* err = nullptr) {
  return test::run_plot_script("plot_pd.py", args, out, err);
}

}  // namespace

TEST_CASE("plot_pd.py draws the latency and roles PNGs of a pd-adaptive sweep" *
          doctest::skip(isim::test::absent(plot_python().empty()))) {
  auto d = sweep_dir(test::scratch("plot-pd") / "sweep");
  const fs::path o = d.parent_path() / "figs";
  std::string out, err;
  REQUIRE(plot(d.string() + " " + o.string() + " --phase-s 600", &out, &err) == 0);
  CAPTURE(err);
  for (const char* png : {"pd-adaptive-latency.png", "pd-adaptive-roles.png"}) {
    CAPTURE(png);
    REQUIRE(fs::exists(o / png));
    CHECK(fs::file_size(o / png) > 1000);
    CHECK(test::slurp(o / png).substr(1, 3) == "PNG");
    CHECK(out.find("wrote " + (o / png).string()) != std::string::npos);
  }
  // Nothing is left under a temporary name.
  size_t files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(o)) ++files;
  CHECK(files == 2);
  // The table: one line per variant and rate, in run order, with the lost reuse.
  CHECK(out.find("lost reuse (tok)") != std::string::npos);
  const std::vector<std::string> rows = test::squeezed_lines(out);
  REQUIRE(rows.size() >= 6);
  CHECK(rows[2] == "mixed 2 0.5 10.0 4000 100");
  CHECK(rows[5] == "online 4 2.50 20.0 7900 300");
}

TEST_CASE("plot_pd.py: a missing column or file exits 2 naming it; no matplotlib exits 3" *
          doctest::skip(isim::test::absent(plot_python().empty()))) {
  auto root = test::scratch("plot-pd-errors");
  auto d = sweep_dir(root / "sweep");
  std::string err;

  // results.csv without ttft_s.p95.
  auto bad = sweep_dir(root / "bad");
  test::write_file(bad / "results.csv",
                   "run_index,policy,variant,trace.rate_scale,e2e_s.mean,throughput_tokens_per_s\n"
                   "0,preserve,mixed,2,10,4000\n");
  CHECK(plot(bad.string() + " " + (root / "o").string(), nullptr, &err) == 2);
  CHECK(err.find((bad / "results.csv").string() + ": missing column(s): ttft_s.p95") !=
        std::string::npos);
  CHECK(!fs::exists(root / "o" / "pd-adaptive-latency.png"));

  // roles.csv without decode_waiting.
  test::write_file(d / "runs/3/roles.csv",
                   "t_s,mixed,prefill,decode,switching,"
                   "prefill_queued_tokens\n0,0,6,10,0,0\n");
  CHECK(plot(d.string() + " " + (root / "o").string(), nullptr, &err) == 2);
  CHECK(err.find((d / "runs/3/roles.csv").string() + ": missing column(s): decode_waiting") !=
        std::string::npos);

  // A planner variant's roles.csv is gone.
  fs::remove(d / "runs/3/roles.csv");
  CHECK(plot(d.string() + " " + (root / "o").string(), nullptr, &err) == 2);
  CHECK(err.find((d / "runs/3/roles.csv").string() + ": no such file") != std::string::npos);

  // No sweep folder at all.
  CHECK(plot((root / "nowhere").string() + " " + (root / "o").string(), nullptr, &err) == 2);
  CHECK(err.find((root / "nowhere").string() + ": no such folder") != std::string::npos);

  // A python whose matplotlib cannot be imported: exit 3 after the inputs are read.
  auto good = sweep_dir(root / "good");
  fs::create_directories(root / "nompl/matplotlib");
  test::write_file(root / "nompl/matplotlib/__init__.py", "raise ImportError('hidden')\n");
  CHECK(test::run_plot_script("plot_pd.py", good.string() + " " + (root / "o").string(), nullptr,
                              &err, "PYTHONPATH=" + (root / "nompl").string() + " ") == 3);
  CHECK(err.find("matplotlib is not installed") != std::string::npos);
}
