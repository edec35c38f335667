// Goodput, overload and empty not-applicable cells through the isim binary: `isim run`'s
// summary.json, sessions.csv, table and warning; `isim sweep`'s results.csv columns, its
// per-policy table and goodput.png.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "experiments/sweep/sweep.h"
#include "experiments/sweep/sweep_report.h"
#include "tests/cli_helpers.h"
#include "tests/experiments/plot_helpers.h"
#include "tests/experiments/sweep_fixtures.h"
#include "tests/test_paths.h"

using namespace isim;
namespace fs = std::filesystem;
using test::sweep::run_isim;

namespace {

// `n` sessions of `input` prompt tokens and `output` tokens, `gap` s apart (as JSONL).
std::string sessions(int n, double gap, int input, int output, const std::string& tail = "") {
  std::string t;
  for (int i = 0; i < n; ++i)
    t += "{\"id\":\"s" + std::to_string(i) + "\",\"arrival_s\":" + std::to_string(gap * i) +
         ",\"segments\":[{\"input\":" + std::to_string(input) +
         ",\"output\":" + std::to_string(output) + "}]}\n";
  return t + tail;
}

std::string spec(const std::string& trace, const std::string& extra,
                 const std::string& profile = test::sweep::profile()) {
  return "name: g\ntrace: {from: jsonl, path: " + trace +
         "}\narrival: {process: replay}\nprofile: " + profile + "\npolicy: preserve\n" + extra;
}

std::string linear_profile() {
  return test::data_dir() + "/profile-linear-small.yaml";
}

// The linear profile's 2 GiB GPU holds KV only without the default 2 GiB activation reserve.
const std::string kLinearEngine = "engine: {activation_reserve_gib: 0}\n";

size_t col(const std::vector<std::string>& header, const std::string& name) {
  for (size_t i = 0; i < header.size(); ++i)
    if (header[i] == name) return i;
  FAIL("no column " << name);
  return 0;
}

// The three sessions of the run test, on the linear test profile (T(x) = 2 ms + 0.5 ms x x,
// vllm-v0, no step overhead); no two overlap, so the busy window is the sum of their iterations:
//   one  (0 s):   prefill 20 tokens, 12 ms; done.                                       12 ms
//   two  (0.1 s): prefill 20, 12 ms; 2 decodes of T(1) = 2.5 ms.                        17 ms
//   tool (0.2 s): prefill 20, 12 ms; 1 decode, 2.5 ms; paused 100 s; then
//     preserve: prefill 1 + 5 = 6 tokens (its KV kept), 5 ms; 1 decode, 2.5 ms:         22 ms
//     discard:  prefill 22 + 5 = 27 tokens (its 21 KV tokens rebuilt), 15.5 ms; 2.5 ms: 32.5 ms
// Busy window: preserve 51 ms, discard 61.5 ms. TTFTs are at most 15.5 ms (< 5 s); the tool
// session's e2e is 100.022 s (preserve) or 100.0325 s (discard): it misses e2e_s 50, meets 200.
const std::string kThree =
    R"({"id":"one","arrival_s":0,"segments":[{"input":20,"output":1}]})"
    "\n"
    R"({"id":"two","arrival_s":0.1,"segments":[{"input":20,"output":3}]})"
    "\n"
    R"({"id":"tool","arrival_s":0.2,"segments":[{"input":20,"output":2,)"
    R"("intercept":{"kind":"tool","duration_s":100}},{"input":5,"output":2}]})"
    "\n";

}  // namespace

TEST_CASE("isim run: per-session SLO, goodput in summary.json, meets_slo and empty cells") {
  const auto d = test::scratch("goodput-run");
  // "one": 1 output token (no TPOT, no resume: empty cells). "tool": a 100 s intercept, so its
  // e2e exceeds 50 s and it misses the e2e limit. "two": 3 output tokens, done within a second.
  const std::string trace = test::write_file(d / "t.jsonl", kThree);
  const auto path = test::write_file(
      d / "e.yaml", spec(trace, "slo: {e2e_s: 50, ttft_s: 5}\n" + kLinearEngine, linear_profile()));
  std::string out, err;
  REQUIRE(run_isim("run " + path + " --out " + (d / "o").string(), &out, &err) == 0);
  const auto j = nlohmann::json::parse(test::slurp(d / "o/preserve/summary.json"));
  CHECK(j["slo"] == nlohmann::json({{"e2e_s", 50}, {"ttft_s", 5}}));
  CHECK(j["goodput"]["sessions"] == 2);
  CHECK(j["goodput"]["share"].get<double>() == doctest::Approx(2.0 / 3.0));
  // On the linear profile the busy window is 51 ms (worked out at kThree, above): 2 sessions
  // met over 0.051 s.
  CHECK(j["busy_window_s"].get<double>() == doctest::Approx(0.051).epsilon(1e-9));
  CHECK(j["goodput"]["per_s"].get<double>() == doctest::Approx(2.0 / 0.051).epsilon(1e-9));
  CHECK(j["overloaded"] == false);
  // The busy window leaves out the 100 s tool call: the makespan is over 100 s, it is not.
  CHECK(j["makespan_s"].get<double>() == doctest::Approx(100.222).epsilon(1e-9));
  // The table gains the goodput columns: 66.7% of sessions.
  CHECK(out.find("slo.met") != std::string::npos);
  CHECK(out.find(" 66.7 ") != std::string::npos);

  const auto rows = isim::read_csv(test::slurp(d / "o/preserve/sessions.csv"), "sessions.csv");
  REQUIRE(rows.size() == 4);
  const auto& h = rows[0].fields;
  const auto& one = rows[1].fields;
  CHECK(one[0] == "one");
  CHECK(one[col(h, "tpot_s")].empty());         // one output token: no TPOT
  CHECK(one[col(h, "resume_ttft_s")].empty());  // no intercept: no resume
  CHECK(!one[col(h, "ttft_s")].empty());
  CHECK(one[col(h, "meets_slo")] == "1");
  CHECK(rows[2].fields[col(h, "meets_slo")] == "1");
  CHECK(rows[3].fields[0] == "tool");
  CHECK(rows[3].fields[col(h, "meets_slo")] == "0");
  CHECK(!rows[3].fields[col(h, "resume_ttft_s")].empty());
  for (const auto& r : rows)
    for (const auto& f : r.fields) CHECK(f != "-1");

  // Without an SLO: meets_slo is empty, goodput null, the table has no goodput column.
  const auto plain = test::write_file(d / "p.yaml", spec(trace, ""));
  REQUIRE(run_isim("run " + plain + " --out " + (d / "p").string(), &out) == 0);
  const auto k = nlohmann::json::parse(test::slurp(d / "p/preserve/summary.json"));
  CHECK(k["slo"] == nlohmann::json::object());
  CHECK(k["goodput"]["sessions"].is_null());
  CHECK(out.find("slo.met") == std::string::npos);
  const auto prow = isim::read_csv(test::slurp(d / "p/preserve/sessions.csv"), "sessions.csv");
  CHECK(prow[1].fields[col(prow[0].fields, "meets_slo")].empty());

  // A bad limit from -p exits 2 and names the -p argument.
  REQUIRE(run_isim("run " + path + " -p slo.ttft_s=0 --out " + (d / "x").string(), &out, &err) ==
          2);
  CHECK(err.find("-p slo.ttft_s=0") != std::string::npos);
  CHECK(err.find("slo.ttft_s: must be a finite upper limit in (0, 4000000000]") !=
        std::string::npos);
}

TEST_CASE("isim run warns of an overloaded run, and not of one that keeps up") {
  const auto d = test::scratch("overload-run");
  // 60 sessions of 1,500 prompt tokens, 100 per second: GPT-J-6B on an A100 prefills such a
  // prompt in well over 10 ms, so it serves far fewer than 100 per second and the queue grows.
  const auto fast = test::write_file(d / "fast.jsonl", sessions(60, 0.01, 1500, 4));
  const auto slow = test::write_file(d / "slow.jsonl", sessions(60, 1.0, 1500, 4));
  const std::string metrics = "metrics: {timeseries_interval_s: 0.01}\n";
  std::string out, err;
  REQUIRE(run_isim("run " + test::write_file(d / "f.yaml", spec(fast, metrics)) + " --out " +
                       (d / "f").string(),
                   &out, &err) == 0);
  CHECK(err.find("warning: preserve: overloaded: the queue of waiting sessions grew by") !=
        std::string::npos);
  CHECK(nlohmann::json::parse(test::slurp(d / "f/preserve/summary.json"))["overloaded"] == true);
  REQUIRE(run_isim("run " + test::write_file(d / "s.yaml", spec(slow, metrics)) + " --out " +
                       (d / "s").string(),
                   &out, &err) == 0);
  CHECK(err.find("overloaded") == std::string::npos);
  CHECK(nlohmann::json::parse(test::slurp(d / "s/preserve/summary.json"))["overloaded"] == false);
}

TEST_CASE("sweep_table: one line per run in run order, goodput columns only with an SLO") {
  exp::SweepResults r;
  r.header = {"run_index",
              "policy",
              "arrival.rate",
              "estimator",
              "normalized_latency_s.p99",
              "goodput.share",
              "goodput.per_s",
              "throughput_sessions_per_s",
              "overloaded"};
  r.rows = {{"0", "discard", "1", "", "0.03126", "0.875", "2.5", "3", "0"},
            {"1", "discard", "8", "", "", "0.25", "1", "4.56789", "1"},
            {"2", "min-waste", "1", "history", "0.0123", "1", "2.75", "2.75", "0"}};
  CHECK(exp::sweep_table(r) ==
        "policy               arrival.rate  norm.p99  slo.met%  goodput/s  sess/s  overloaded\n"
        "discard                         1    0.0313      87.5      2.500   3.000\n"
        "discard                         8         -      25.0      1.000   4.568         yes\n"
        "min-waste (history)             1    0.0123     100.0      2.750   2.750\n");
  for (auto& row : r.rows) row[5] = row[6] = "";  // no SLO
  CHECK(exp::sweep_table(r) ==
        "policy               arrival.rate  norm.p99  sess/s  overloaded\n"
        "discard                         1    0.0313   3.000\n"
        "discard                         8         -   4.568         yes\n"
        "min-waste (history)             1    0.0123   2.750\n");
  r.rows.clear();
  CHECK(exp::sweep_table(r).empty());
}

TEST_CASE("isim sweep: results.csv's goodput columns, by hand") {
  const auto d = test::scratch("goodput-sweep-exact");
  const std::string trace = test::write_file(d / "t.jsonl", kThree);
  const std::string s = "name: gx\ntrace: {from: jsonl, path: " + trace +
                        "}\narrival: {process: replay}\nprofile: " + test::data_dir() +
                        "/profile-linear-small.yaml\npolicies: [preserve, discard]\n"
                        "slo: {ttft_s: 5, e2e_s: 50}\n" +
                        kLinearEngine + "sweep:\n  slo.e2e_s: [50, 200]\n";
  std::string out, err;
  REQUIRE(run_isim("sweep " + test::write_file(d / "s.yaml", s) + " --jobs 1 --out " +
                       (d / "o").string(),
                   &out, &err) == 0);
  const auto rows = isim::read_csv(test::slurp(d / "o/results.csv"), "results.csv");
  REQUIRE(rows.size() == 5);
  const auto& h = rows[0].fields;
  // policy, e2e limit -> sessions met, busy window (s)
  struct Want {
    std::string policy, e2e;
    double met, busy;
  };
  const std::vector<Want> want = {{"preserve", "50", 2, 0.051},
                                  {"preserve", "200", 3, 0.051},
                                  {"discard", "50", 2, 0.0615},
                                  {"discard", "200", 3, 0.0615}};
  for (const auto& w : want) {
    CAPTURE(w.policy);
    CAPTURE(w.e2e);
    const std::vector<std::string>* row = nullptr;
    for (size_t i = 1; i < rows.size(); ++i)
      if (rows[i].fields[col(h, "policy")] == w.policy &&
          rows[i].fields[col(h, "slo.e2e_s")] == w.e2e)
        row = &rows[i].fields;
    REQUIRE(row != nullptr);
    CHECK(std::stod((*row)[col(h, "goodput.share")]) == doctest::Approx(w.met / 3).epsilon(1e-9));
    CHECK(std::stod((*row)[col(h, "goodput.per_s")]) ==
          doctest::Approx(w.met / w.busy).epsilon(1e-9));
    // Three arrivals 0.1 s apart at 1 s samples: too few samples to judge, never overloaded.
    CHECK((*row)[col(h, "overloaded")] == "0");
  }
}

TEST_CASE("isim sweep: which arrival rate is overloaded") {
  // 60 sessions of 1,500 prompt tokens and 4 outputs, Poisson arrivals. GPT-J-6B on an A100
  // prefills such a prompt in tens of ms, so it serves a few dozen per second at most: at 100/s
  // the queue grows through the arrivals (overloaded); at 0.5/s each session is done long before
  // the next arrives on average, and the queue does not grow.
  const auto d = test::scratch("goodput-sweep-rates");
  const std::string trace = test::write_file(d / "big.jsonl", sessions(60, 1.0, 1500, 4));
  const std::string s =
      "name: gr\ntrace: {from: jsonl, path: " + trace +
      "}\narrival: {process: poisson, rate: 1}\nprofile: " + test::sweep::profile() +
      "\npolicies: [discard, swap]\nmetrics: {timeseries_interval_s: 0.05}\n"
      "slo: {ttft_s: 2}\nsweep:\n  arrival.rate: [0.5, 100]\n";
  std::string out, err;
  REQUIRE(run_isim("sweep " + test::write_file(d / "s.yaml", s) + " --jobs 1 --out " +
                       (d / "o").string(),
                   &out, &err) == 0);
  const auto rows = isim::read_csv(test::slurp(d / "o/results.csv"), "results.csv");
  REQUIRE(rows.size() == 5);
  const auto& h = rows[0].fields;
  const size_t over = col(h, "overloaded"), rate = col(h, "arrival.rate");
  for (size_t i = 1; i < rows.size(); ++i) {
    const auto& f = rows[i].fields;
    CAPTURE(f[col(h, "policy")]);
    CAPTURE(f[rate]);
    CHECK(f[over] == (f[rate] == "100" ? "1" : "0"));
  }
  // The table: after the results line, a header and one line per run, policies outermost; its
  // numbers are results.csv's, rounded, and "yes" marks exactly the overloaded runs.
  const auto lines = test::sweep::lines(out);
  size_t at = 0;
  while (at < lines.size() && lines[at].rfind("policy ", 0) != 0) ++at;
  REQUIRE(at + 4 < lines.size());
  const auto squeezed = test::squeezed_lines(out);
  const size_t share = col(h, "goodput.share");
  for (size_t i = 1; i <= 4; ++i) {
    const auto& f = rows[i].fields;
    CAPTURE(squeezed[at + i]);
    CHECK(squeezed[at + i].rfind(f[col(h, "policy")] + " " + f[rate] + " ", 0) == 0);
    const std::string pct = fmt::format("{:.1f}", 100 * std::stod(f[share]));
    CHECK(squeezed[at + i].find(" " + pct + " ") != std::string::npos);
    CHECK((f[rate] == "100") == (squeezed[at + i].find(" yes") != std::string::npos));
  }
}

TEST_CASE("isim sweep: goodput.png" *
          doctest::skip(isim::test::absent(test::plot_python().empty()))) {
  const auto d = test::scratch("goodput-sweep");
  std::string s = test::sweep::spec_head("gs");
  s += "  arrival.rate: [0.5, 50]\n";
  s += "plot: {}\nslo: {ttft_s: 2, normalized_latency_s: 0.1}\n";
  const auto path = test::write_file(d / "s.yaml", s);
  std::string out, err;
  REQUIRE(run_isim("sweep " + path + " --jobs 1 --out " + (d / "o").string(), &out, &err) == 0);
  REQUIRE(fs::exists(d / "o/goodput.png"));
  CHECK(test::slurp(d / "o/goodput.png").substr(1, 3) == "PNG");
  CHECK(out.find("plot: " + (d / "o/goodput.png").string()) != std::string::npos);
}
