// experiments/plots/plot_agent_kv.py, the plot of the KV manager sweep
// (experiments/specs/agent-kv.yaml), on a tiny hand-written results.csv: the PNG, the averaged
// table, and its errors (exit 2 naming the missing column or file).
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
    "run_index,policy,variant,cluster.replicas,ttft_s.p95,lost_kv_reuse_tokens.intercept,"
    "lost_kv_reuse_tokens.preemption,lost_kv_reuse_tokens.idle_eviction,"
    "lost_kv_reuse_tokens.migration,lost_kv_reuse_tokens.role_switch,"
    "lost_kv_reuse_tokens.prefix_eviction\n";

int plot(const std::string& args, std::string* out = nullptr, std::string* err = nullptr) {
  return test::run_plot_script("plot_agent_kv.py", args, out, err);
}

}  // namespace

TEST_CASE("plot_agent_kv.py draws lost reuse by cause and P95 TTFT, averaging seeds" *
          doctest::skip(isim::test::absent(plot_python().empty()))) {
  const fs::path d = test::scratch("plot-agent-kv");
  // local at 2 replicas has two seeds: its means are (10 + 30) / 2 = 20 s and 3 M + 1 M tokens.
  test::write_file(d / "results.csv", std::string(kHeader) +
                                          "0,preserve,local,2,10,0,0,2000000,1000000,0,0\n"
                                          "1,preserve,local,2,30,0,0,4000000,1000000,0,0\n"
                                          "2,preserve,agent-aware,2,5,0,0,1000000,500000,0,0\n");
  std::string out, err;
  REQUIRE(plot((d / "results.csv").string() + " " + (d / "kv.png").string(), &out, &err) == 0);
  CAPTURE(err);
  REQUIRE(fs::exists(d / "kv.png"));
  CHECK(test::slurp(d / "kv.png").substr(1, 3) == "PNG");
  CHECK(!fs::exists(d / "kv.png.partial.png"));
  const std::vector<std::string> rows = test::squeezed_lines(out);
  REQUIRE(rows.size() >= 3);
  CHECK(rows[1] == "local 2 20.0 nan 4.0");
  CHECK(rows[2] == "agent-aware 2 5.0 nan 1.5");
}

TEST_CASE("plot_agent_kv.py: categories on the x axis, a series column, and mean e2e" *
          doctest::skip(isim::test::absent(plot_python().empty()))) {
  const fs::path d = test::scratch("plot-agent-kv-series");
  // Two categories in run order (r8-u16 before r32-u64, not sorted), two managers.
  test::write_file(d / "results.csv",
                   "run_index,policy,variant,engine.kv_manager,ttft_s.p95,e2e_s.mean,"
                   "lost_kv_reuse_tokens.intercept,lost_kv_reuse_tokens.preemption,"
                   "lost_kv_reuse_tokens.idle_eviction,lost_kv_reuse_tokens.migration,"
                   "lost_kv_reuse_tokens.role_switch,lost_kv_reuse_tokens.prefix_eviction\n"
                   "0,preserve,r8-u16,local,4,100,0,0,3000000,0,0,0\n"
                   "1,preserve,r8-u16,agent-aware,2,90,0,0,1000000,0,0,0\n"
                   "2,preserve,r32-u64,local,8,120,0,0,5000000,2000000,0,0\n"
                   "3,preserve,r32-u64,agent-aware,6,110,0,0,2000000,0,0,0\n");
  std::string out, err;
  REQUIRE(plot((d / "results.csv").string() + " " + (d / "kv.png").string() +
                   " --axis variant --series engine.kv_manager",
               &out, &err) == 0);
  CAPTURE(err);
  CHECK(fs::exists(d / "kv.png"));
  const std::vector<std::string> rows = test::squeezed_lines(out);
  REQUIRE(rows.size() >= 5);
  CHECK(rows[1] == "local r8-u16 4.0 100.0 3.0");
  CHECK(rows[2] == "agent-aware r8-u16 2.0 90.0 1.0");
  CHECK(rows[3] == "local r32-u64 8.0 120.0 7.0");
  CHECK(rows[4] == "agent-aware r32-u64 6.0 110.0 2.0");
}

TEST_CASE("plot_agent_kv.py: a missing column or file exits 2 naming it" *
          doctest::skip(isim::test::absent(plot_python().empty()))) {
  const fs::path d = test::scratch("plot-agent-kv-errors");
  test::write_file(d / "results.csv", "run_index,policy,variant,cluster.replicas\n0,p,local,2\n");
  std::string err;
  CHECK(plot((d / "results.csv").string() + " " + (d / "kv.png").string(), nullptr, &err) == 2);
  CHECK(err.find((d / "results.csv").string() + ": missing column(s): ttft_s.p95") !=
        std::string::npos);
  CHECK(!fs::exists(d / "kv.png"));
  CHECK(plot((d / "none.csv").string() + " " + (d / "kv.png").string(), nullptr, &err) == 2);
  CHECK(err.find((d / "none.csv").string() + ": no such file") != std::string::npos);
}
