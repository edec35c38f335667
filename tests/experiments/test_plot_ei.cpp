// experiments/plots/plot_ei.py, the plots and tables of the Evolving Infra sweeps
// (experiments/specs/evolving-infra*.yaml, pd-adaptive.yaml, agent-kv.yaml), on a tiny
// synthetic sweep folder: both PNGs, the Markdown table of aggregate.csv, and its errors (a
// missing column or file: exit 2 naming it; no matplotlib: exit 3).
#include <doctest/doctest.h>

#include "tests/test_paths.h"

#include <filesystem>
#include <string>
#include <vector>

#include "tests/cli_helpers.h"
#include "tests/experiments/plot_helpers.h"

using namespace isim;
namespace fs = std::filesystem;

namespace {

using test::plot_python;

const char* kAggHeader =
    "policy,variant,arrival.users,estimator,seeds,request_latency_s.mean,"
    "request_latency_s.mean.ci95,request_ttft_s.p95,request_ttft_s.p95.ci95,itl_max_s.p99,"
    "itl_max_s.p99.ci95,turn_goodput.share,turn_goodput.share.ci95,"
    "lost_kv_reuse_tokens.total,lost_kv_reuse_tokens.total.ci95\n";

// Two variants (mixed; online, with roles.csv) at two user counts, three seeds each: results.csv
// lists the 12 runs, aggregate.csv their means; the first seed of each keeps windows.csv.
fs::path sweep_dir(const fs::path& d) {
  fs::create_directories(d / "runs");
  std::string results =
      "run_index,policy,variant,arrival.users,seed,estimator,request_latency_s.mean\n";
  int i = 0;
  for (const char* v : {"mixed", "online"})
    for (const char* u : {"8", "16"})
      for (int seed = 1; seed <= 3; ++seed, ++i) {
        results +=
            std::to_string(i) + ",preserve," + v + "," + u + "," + std::to_string(seed) + ",,1\n";
        const fs::path run = d / "runs" / std::to_string(i) / "preserve";
        fs::create_directories(run);
        test::write_file(run / "windows.csv",
                         "start_s,end_s,turns,request_ttft_s.mean,request_ttft_s.p50,"
                         "request_ttft_s.p95,request_ttft_s.p99,itl_max_s.p99,"
                         "request_latency_s.mean,turn_goodput.share,output_tokens\n"
                         "0,300,10,0.1,0.1,0.2,0.3,0.05,1,1,100\n"
                         "300,600,12,0.5,0.4,1.5,2,0.08,2,0.9,120\n");
        if (std::string(v) == "online")
          test::write_file(run / "roles.csv",
                           "t_s,mixed,prefill,decode,switching,prefill_queued_tokens,"
                           "decode_waiting\n0,0,2,2,0,0,0\n300,0,3,1,0,0,0\n");
      }
  test::write_file(d / "results.csv", results);
  test::write_file(d / "aggregate.csv", std::string(kAggHeader) +
                                            "preserve,mixed,8,,3,5.5,0.25,0.4,,0.3,0.01,0.9,,1e6,\n"
                                            "preserve,mixed,16,,3,8,1,2.5,0.5,0.5,,0.6,0.1,4e6,\n"
                                            "preserve,online,8,,3,5,,0.3,,0.1,,1,,2e6,\n"
                                            "preserve,online,16,,3,6,,0.9,,0.15,,0.95,,3e6,\n");
  return d;
}

int plot(const std::string& args, std::string* out = nullptr, std::string* err = nullptr) {
  return test::run_plot_script("plot_ei.py", args, out, err);
}

}  // namespace

TEST_CASE("plot_ei.py draws the latency and timeline PNGs and prints the aggregate's table" *
          doctest::skip(isim::test::absent(plot_python().empty()))) {
  auto d = sweep_dir(test::scratch("plot-ei") / "sweep");
  const fs::path o = d.parent_path() / "figs";
  fs::create_directories(o);
  std::string out, err;
  REQUIRE(plot(d.string() + " " + (o / "ei").string() + " --group arrival.users --phase-s 300",
               &out, &err) == 0);
  CAPTURE(err);
  for (const char* png : {"ei-latency.png", "ei-timeline.png"}) {
    CAPTURE(png);
    REQUIRE(fs::exists(o / png));
    CHECK(fs::file_size(o / png) > 1000);
    CHECK(test::slurp(o / png).substr(1, 3) == "PNG");
    CHECK(out.find("wrote " + (o / png).string()) != std::string::npos);
  }
  size_t files = 0;  // nothing left under a temporary name
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(o)) ++files;
  CHECK(files == 2);
  // The table: group, series, seeds, the four metrics as mean ± interval (3 decimals below
  // 100), lost reuse in millions of tokens; an empty interval prints the mean alone.
  CHECK(out.find("| arrival.users | variant | seeds | mean per-request latency |") !=
        std::string::npos);
  CHECK(out.find("| 8 | mixed | 3 | 5.500 ± 0.250 | 0.400 | 0.300 ± 0.010 | 0.900 | 1.000 |") !=
        std::string::npos);
  CHECK(out.find("| 16 | online | 3 | 6.000 | 0.900 | 0.150 | 0.950 | 3.000 |") !=
        std::string::npos);
}

TEST_CASE("plot_ei.py: a missing column or file exits 2 naming it; no matplotlib exits 3" *
          doctest::skip(isim::test::absent(plot_python().empty()))) {
  auto root = test::scratch("plot-ei-errors");
  std::string err;
  // No sweep folder.
  CHECK(plot((root / "nowhere").string() + " " + (root / "o").string(), nullptr, &err) == 2);
  CHECK(err.find((root / "nowhere").string() + ": no such folder") != std::string::npos);
  // No aggregate.csv (a sweep without seeds).
  auto d = sweep_dir(root / "sweep");
  fs::remove(d / "aggregate.csv");
  CHECK(plot(d.string() + " " + (root / "o").string(), nullptr, &err) == 2);
  CHECK(err.find((d / "aggregate.csv").string() + ": no such file") != std::string::npos);
  // An aggregate without itl_max_s.p99.
  test::write_file(d / "aggregate.csv",
                   "policy,variant,seeds,request_latency_s.mean,request_ttft_s.p95,"
                   "turn_goodput.share\npreserve,mixed,3,1,1,1\n");
  CHECK(plot(d.string() + " " + (root / "o").string(), nullptr, &err) == 2);
  CHECK(err.find((d / "aggregate.csv").string() + ": missing column(s): itl_max_s.p99") !=
        std::string::npos);
  // A cell that is not a number names its file, line and column.
  d = sweep_dir(root / "sweep2");
  std::string agg = test::slurp(d / "aggregate.csv");
  agg.replace(agg.find("5.5,"), 4, "x5,");
  test::write_file(d / "aggregate.csv", agg);
  CHECK(plot(d.string() + " " + (root / "o").string(), nullptr, &err) == 2);
  CHECK(err.find((d / "aggregate.csv").string() +
                 ":2: request_latency_s.mean: expected a number, got 'x5'") != std::string::npos);
  // A python whose matplotlib cannot be imported: exit 3 after the inputs are read.
  auto good = sweep_dir(root / "good");
  fs::create_directories(root / "nompl/matplotlib");
  test::write_file(root / "nompl/matplotlib/__init__.py", "raise ImportError('hidden')\n");
  CHECK(test::run_plot_script("plot_ei.py", good.string() + " " + (root / "o").string(), nullptr,
                              &err, "PYTHONPATH=" + (root / "nompl").string() + " ") == 3);
  CHECK(err.find("matplotlib is not installed") != std::string::npos);
}
