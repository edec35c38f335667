// Sweeps from the command line: merging results.csv files, CSV quoting, --shard, failing runs,
// --keep-runs, --list, and the plot script (with and without matplotlib).
#include <doctest/doctest.h>

#include <map>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "core/input_error.h"
#include "experiments/run/outputs.h"
#include "experiments/run/run.h"
#include "experiments/sweep/sweep.h"
#include "policies/builtin.h"
#include "tests/cli_helpers.h"
#include "tests/experiments/sweep_fixtures.h"
#include "tests/test_paths.h"

using namespace isim;
using namespace isim::test::sweep;
namespace fs = std::filesystem;

TEST_CASE("isim sweep merge refuses inconsistent shards with exit 2") {
  // results.csv files cut by hand from unsharded runs (sharded runs write journals now; the
  // CSV merge remains for files of older shards).
  auto d = test::scratch("merge-errors");
  auto path = test::write_file(d / "s.yaml", spec_text());
  REQUIRE(run_isim("sweep " + path + " --out " + (d / "all").string()) == 0);
  REQUIRE(run_isim("sweep " + path + " -p 'sweep.seed=[1, 2]' --out " + (d / "eight").string()) ==
          0);
  REQUIRE(run_isim("sweep " + path +
                   " -p 'sweep.arrival.rate=[1]' -p "
                   "'sweep.engine.max_num_seqs=[4, 8, 16]' --out " +
                   (d / "c").string()) == 0);
  // a: runs 0, 2, ..., 10 of the 12-run sweep; b: runs 1, 3, 5, 7 of the 8-run one.
  auto keep = [&](const fs::path& from, const fs::path& to, int parity) {
    auto ls = lines(test::slurp(from));
    std::string text = ls[0] + "\n";
    for (size_t r = 1; r < ls.size(); ++r)
      if (static_cast<int>(r - 1) % 2 == parity) text += ls[r] + "\n";
    return test::write_file(to, text);
  };
  auto a = keep(d / "all/results.csv", d / "a.csv", 0);
  keep(d / "eight/results.csv", d / "b.csv", 1);
  std::string err;

  SUBCASE("a run index twice") {
    CHECK(run_isim("sweep merge " + (d / "m.csv").string() + " " + a + " " + a, nullptr, &err) ==
          2);
    CHECK(err.find(a + ":2: run_index 0 is also at " + a + ":2") != std::string::npos);
  }
  SUBCASE("headers differ") {
    auto c = (d / "c/results.csv").string();
    CHECK(run_isim("sweep merge " + (d / "m.csv").string() + " " + a + " " + c, nullptr, &err) ==
          2);
    CHECK(err.find(c + ":1: header differs from " + a +
                   "'s at column 5: 'engine.max_num_seqs' vs "
                   "'estimator'") != std::string::npos);
  }
  SUBCASE("not a results file") {
    auto bad = test::write_file(d / "bad.csv", "x,y\n1,2\n");
    CHECK(run_isim("sweep merge " + (d / "m.csv").string() + " " + bad, nullptr, &err) == 2);
    CHECK(err.find(bad + ":1: expected a results.csv header starting with run_index") !=
          std::string::npos);
  }
  SUBCASE("a short row and a bad index") {
    auto text = test::slurp(a);
    auto shortrow = test::write_file(d / "short.csv", text + "99,swap\n");
    CHECK(run_isim("sweep merge " + (d / "m.csv").string() + " " + shortrow, nullptr, &err) == 2);
    CHECK(err.find(shortrow + ":8: expected ") != std::string::npos);
    auto h = text.substr(0, text.find('\n') + 1);
    auto row = lines(text)[1];
    auto badix = test::write_file(d / "badix.csv", h + "x" + row.substr(row.find(',')) + "\n");
    CHECK(run_isim("sweep merge " + (d / "m.csv").string() + " " + badix, nullptr, &err) == 2);
    CHECK(err.find(badix + ":2: run_index: expected a non-negative integer, got 'x'") !=
          std::string::npos);
    // Found by tests/fuzz: an index of 18 digits made the missing-runs list take all memory.
    auto huge = test::write_file(d / "huge.csv",
                                 h + "999999999999999999" + row.substr(row.find(',')) + "\n");
    CHECK(run_isim("sweep merge " + (d / "m.csv").string() + " " + huge, nullptr, &err) == 2);
    CHECK(err.find(huge + ":2: run_index 999999999999999999: a sweep has at most 1000000 runs "
                          "(0..999999)") != std::string::npos);
  }
  SUBCASE("a missing input, and too few arguments") {
    CHECK(run_isim("sweep merge " + (d / "m.csv").string() + " " + (d / "none.csv").string(),
                   nullptr, &err) == 2);
    CHECK(err.find("none.csv: cannot open") != std::string::npos);
    CHECK(run_isim("sweep merge " + (d / "m.csv").string(), nullptr, &err) == 2);
    CHECK(err.find("merge needs OUT.csv and at least one input") != std::string::npos);
  }
  SUBCASE("an incomplete merge is refused, naming the missing runs, and writes nothing") {
    auto b = (d / "b.csv").string();
    CHECK(run_isim("sweep merge " + (d / "m.csv").string() + " " + a + " " + b, nullptr, &err) ==
          2);
    CHECK(err.find("isim: error: 1 run index(es) below the highest one given (10) are missing: 9 "
                   "(a shard not merged?); nothing was written to " +
                   (d / "m.csv").string()) != std::string::npos);
    CHECK(!fs::exists(d / "m.csv"));
  }
}

TEST_CASE("CSV fields are quoted only when needed and read back") {
  CHECK(isim::csv_field("swap") == "swap");
  CHECK(isim::csv_field("a,b") == "\"a,b\"");
  CHECK(isim::csv_field("say \"hi\"") == "\"say \"\"hi\"\"\"");
  auto recs = isim::read_csv("a,\"b,c\",\"d\"\"e\"\n\"multi\nline\",,x\r\nlast", "f.csv");
  REQUIRE(recs.size() == 3);
  CHECK(recs[0].fields == std::vector<std::string>{"a", "b,c", "d\"e"});
  CHECK(recs[1].line == 2);
  CHECK(recs[1].fields == std::vector<std::string>{"multi\nline", "", "x"});
  CHECK(recs[2].line == 4);
  CHECK(recs[2].fields == std::vector<std::string>{"last"});
  CHECK_THROWS_WITH_AS(isim::read_csv("a\n\"open", "f.csv"), "f.csv:2: unterminated quoted field",
                       InputError);
}

TEST_CASE("--shard K/N") {
  auto s = exp::parse_shard("2/3");
  CHECK(s.k == 2);
  CHECK(s.n == 3);
  exp::SweepRun r;
  r.key_hash = 7;  // 7 % 3 == 1: shard 2/3
  CHECK(s.contains(r));
  r.key_hash = 9;
  CHECK(!s.contains(r));
  CHECK(exp::parse_shard("1/1").whole());
  for (const char* bad : {"0/3", "4/3", "3", "/3", "2/", "a/b", "-1/3", "1/0"})
    CHECK_THROWS_WITH_AS(
        exp::parse_shard(bad),
        (std::string("--shard ") + bad + ": expected K/N with 1 <= K <= N (e.g. 2/4), or auto")
            .c_str(),
        InputError);
}

TEST_CASE("a failing run stops the sweep with the lowest failing run's error") {
  auto d = test::scratch("failing");
  std::string t = spec_text();
  t.replace(t.find("  seed: [1, 2, 3]\n"), 18,
            "  profile: [" + profile() + ", /nonexistent/p.yaml]\n");
  auto s = exp::load_sweep(test::write_file(d / "s.yaml", t), {});
  REQUIRE(s.runs.size() == 8);
  exp::SweepOptions o;
  o.jobs = 4;
  CHECK_THROWS_WITH_AS(exp::run_sweep(s, o),
                       doctest::Contains("sweep run 1 (policy=discard arrival.rate=0.5 "
                                         "profile=/nonexistent/p.yaml): /nonexistent/p.yaml"),
                       InputError);
}

TEST_CASE("--keep-runs writes each run's files under runs/<index>/") {
  auto d = test::scratch("keep");
  auto path = test::write_file(d / "s.yaml", spec_text());
  REQUIRE(run_isim("sweep " + path + " -p 'sweep.seed=[1]' --keep-runs --out " +
                   (d / "o").string()) == 0);
  for (int i = 0; i < 4; ++i)
    for (const char* f : {"summary.json", "sessions.csv", "timeseries.csv", "config.resolved.yaml"})
      CHECK(fs::file_size(d / "o/runs" / std::to_string(i) / f) > 0);
  CHECK(test::slurp(d / "o/runs/3/summary.json").find("\"policy\": \"swap\"") != std::string::npos);
  // Without it, only results.csv.
  REQUIRE(run_isim("sweep " + path + " -p 'sweep.seed=[1]' --out " + (d / "p").string()) == 0);
  CHECK(!fs::exists(d / "p/runs"));
  CHECK(fs::exists(d / "p/results.csv"));
}

TEST_CASE("isim sweep --list prints the runs of the shard; usage errors exit 2") {
  auto d = test::scratch("list");
  auto path = test::write_file(d / "s.yaml", spec_text());
  std::string out, err;
  REQUIRE(run_isim("sweep " + path + " --list --shard 2/5", &out) == 0);
  // The runs whose key's FNV-1a 64 is 1 modulo 5 (computed apart).
  CHECK(lines(out) == std::vector<std::string>{"    1  policy=discard arrival.rate=0.5 seed=2",
                                               "    3  policy=discard arrival.rate=2 seed=1"});
  CHECK(!fs::exists(d / "results"));
  CHECK(run_isim("sweep", nullptr, &err) == 2);
  CHECK(err.find("needs EXPERIMENT.yaml") != std::string::npos);
  CHECK(run_isim("sweep x.yaml --shard 3/2", nullptr, &err) == 2);
  CHECK(err.find("--shard 3/2: expected K/N") != std::string::npos);
  CHECK(run_isim("sweep x.yaml --jobs 0", nullptr, &err) == 2);
  CHECK(err.find("--jobs: expected an integer in 1..1024 (worker threads), got '0'") !=
        std::string::npos);
  // Not SIZE_MAX: a negative count is refused, naming the flag.
  CHECK(run_isim("sweep " + path + " --list --jobs -1", nullptr, &err) == 2);
  CHECK(err.find("--jobs: expected an integer in 1..1024 (worker threads), got '-1'") !=
        std::string::npos);
}

TEST_CASE("plot.py draws the three PNGs when matplotlib is there" *
          doctest::skip(isim::test::absent(exp::find_plot_python().empty()))) {
  std::string py = exp::find_plot_python();
  auto d = test::scratch("plot");
  auto path = test::write_file(d / "s.yaml", spec_text("plot: {latency_target_s: 0.1}\n"));
  std::string out;
  REQUIRE(run_isim("sweep " + path + " --out " + (d / "o").string(), &out) == 0);
  for (const char* png : {"latency.png", "throughput.png", "waste.png"}) {
    CAPTURE(png);
    REQUIRE(fs::exists(d / "o" / png));
    CHECK(fs::file_size(d / "o" / png) > 1000);
    CHECK(test::slurp(d / "o" / png).substr(1, 3) == "PNG");
    CHECK(out.find("plot: " + (d / "o" / png).string()) != std::string::npos);
  }
  // A shard does not plot (its rows are partial).
  REQUIRE(run_isim("sweep " + path + " --shard 1/2 --out " + (d / "s").string()) == 0);
  CHECK(!fs::exists(d / "s/latency.png"));
  CHECK(!fs::exists(d / "s/results.csv"));

  // Missing columns: exit 2 with the names.
  auto bad = test::write_file(d / "bad.csv", "run_index,policy,seed\n0,swap,1\n");
  std::string cmd = py + " " + exp::plot_script_path() + " " + bad + " " + (d / "x").string() +
                    " 2> " + (d / "err.txt").string();
  int rc = std::system(cmd.c_str());
  CHECK((WIFEXITED(rc) ? WEXITSTATUS(rc) : -1) == 2);
  CHECK(test::slurp(d / "err.txt").find("missing column(s): normalized_latency_s.mean") !=
        std::string::npos);
  CHECK(test::slurp(d / "err.txt").find("arrival.rate (the plots are against arrival rate") !=
        std::string::npos);
}

TEST_CASE("without a python that has matplotlib, isim sweep writes results.csv and exits 2") {
  auto d = test::scratch("no-python");
  auto path = test::write_file(d / "s.yaml", spec_text("plot: {latency_target_s: 0.1}\n"));
  std::string bogus = (d / "no-such-python3").string();
  ::setenv("ISIM_PYTHON", bogus.c_str(), 1);
  std::string tried;
  CHECK(exp::find_plot_python(&tried).empty());
  CHECK(tried == bogus);
  std::string err;
  int rc = run_isim("sweep " + path + " --out " + (d / "o").string(), nullptr, &err);
  ::unsetenv("ISIM_PYTHON");
  CHECK(rc == 2);
  CHECK(err.find("plot: no python3 with matplotlib (tried " + bogus +
                 "; install Debian's python3-matplotlib or set ISIM_PYTHON); results.csv was "
                 "written") != std::string::npos);
  CHECK(lines(test::slurp(d / "o/results.csv")).size() == 1 + 12);
  CHECK(!fs::exists(d / "o/latency.png"));
}
