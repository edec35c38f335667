// The plots' context and choices (issue 19, item 10): plot_context.json (GPU, model, workload and
// rate of the titles), the waste plot's rate (plot.waste_rate, or the highest rate where every
// policy keeps up), and legends of drawn artists only with fonts of at least 9 pt. The scripts
// report what they drew through ISIM_PLOT_REPORT (experiments/plots/plot_style.py), one JSON per
// PNG.
#include <doctest/doctest.h>

#include "tests/test_paths.h"

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiments/plots/plot_context.h"
#include "tests/cli_helpers.h"
#include "tests/experiments/plot_helpers.h"
#include "tests/experiments/sweep_fixtures.h"

using namespace isim;
namespace fs = std::filesystem;

namespace {

using test::plot_python;

// What the scripts drew, by PNG name, from the ISIM_PLOT_REPORT file.
std::map<std::string, nlohmann::json> report(const fs::path& file) {
  std::map<std::string, nlohmann::json> by_png;
  for (const auto& line : test::sweep::lines(test::slurp(file)))
    if (!line.empty()) {
      auto j = nlohmann::json::parse(line);
      by_png[j["file"].get<std::string>()] = j;
    }
  return by_png;
}

std::string env_report(const fs::path& file) {
  return "ISIM_PLOT_REPORT=" + file.string() + " ";
}

const char* kHeader =
    "run_index,policy,arrival.rate,seed,estimator,normalized_latency_s.mean,"
    "normalized_latency_s.p99,throughput_tokens_per_s,throughput_sessions_per_s,"
    "waste_share.active,waste_share.preserved,waste_share.recompute,waste_share.swap_stall,"
    "waste_share.free,ttft_s.mean";

// Three policies at 1, 2 and 4 sessions/s. Mean TTFT against 10x the policy's at rate 1:
// preserve 0.1, 0.2, 5 (5 > 1: overloaded at 4); oracle 0.1, 0.1, 0.2; history 0.1, 0.15, 0.9
// (0.9 <= 1). So every policy keeps up at 1 and 2 only, and the default waste rate is 2.
// recompute and swap_stall are 0 everywhere: no bar, so no legend entry.
std::string results_csv(const std::string& extra_header = "",
                        const std::vector<std::string>& extra = {}) {
  const std::vector<std::string> rows = {
      "0,preserve,1,1,,0.01,0.02,100,1,0.5,0.1,0,0,0.4,0.1",
      "1,preserve,2,1,,0.02,0.03,200,1.96,0.6,0.1,0,0,0.3,0.2",
      "2,preserve,4,1,,0.5,0.9,300,3.0,0.7,0.2,0,0,0.1,5",
      "3,min-waste,1,1,oracle,0.01,0.02,100,1,0.5,0.1,0,0,0.4,0.1",
      "4,min-waste,2,1,oracle,0.02,0.03,200,1.9,0.6,0.1,0,0,0.3,0.1",
      "5,min-waste,4,1,oracle,0.03,0.05,390,3.9,0.7,0.1,0,0,0.2,0.2",
      "6,min-waste,1,1,history,0.01,0.02,100,1,0.5,0.1,0,0,0.4,0.1",
      "7,min-waste,2,1,history,0.02,0.03,200,1.95,0.6,0.1,0,0,0.3,0.15",
      "8,min-waste,4,1,history,0.03,0.05,390,3.9,0.7,0.1,0,0,0.2,0.9"};
  std::string s = std::string(kHeader) + extra_header + "\n";
  for (size_t i = 0; i < rows.size(); ++i) s += rows[i] + (extra.empty() ? "" : extra[i]) + "\n";
  return s;
}

const char* kContext =
    R"j({"gpu":["A100-SXM4-80GB"],"model":["gpt-j-6b"],"workload":["infercept (mix)"],)j"
    R"j("rate":["1-4 sessions/s"]})j";

}  // namespace

TEST_CASE("plot_context: the workload's name and the rate text") {
  exp::TraceSpec t;
  t.from = "infercept";
  t.path = "/data/infercept-mix/merged_exp_uniform.json";
  CHECK(exp::workload_name(t) == "infercept (merged_exp_uniform)");
  t.from = "multiturn";
  t.path = "";
  CHECK(exp::workload_name(t) == "multiturn");

  exp::Experiment a, b, c;
  a.arrival.rate = 4;
  b.arrival.rate = 0.5;
  c.arrival.rate = 2;
  CHECK(exp::rate_text({&a, &b, &c}) == "0.5-4 sessions/s");
  CHECK(exp::rate_text({&c, &c}) == "2 sessions/s");
  exp::Experiment r;
  r.arrival.process = "replay";
  r.trace.rate_scale = 2;
  exp::Experiment r8 = r;
  r8.trace.rate_scale = 8;
  CHECK(exp::rate_text({&r, &r8}) == "the trace's arrival times x 2-8");
  exp::PlotContext ctx{{"H200"}, {"llama-3.1-8b"}, {"agents"}, {"1 sessions/s"}};
  CHECK(
      exp::plot_context_json(ctx) ==
      R"j({"gpu":["H200"],"model":["llama-3.1-8b"],"workload":["agents"],"rate":["1 sessions/s"]})j"
      "\n");
}

TEST_CASE("isim sweep writes plot_context.json from the profile, the trace and the rates") {
  auto d = test::scratch("plot-context");
  auto path = test::write_file(d / "s.yaml", test::sweep::spec_text());
  REQUIRE(test::sweep::run_isim("sweep " + path + " --out " + (d / "o").string()) == 0);
  // The InferCept profile's device and model names; a generator without a file; rates 0.5 and 2.
  CHECK(test::slurp(d / "o" / "plot_context.json") ==
        R"j({"gpu":["A100-SXM4-80GB"],"model":["gpt-j-6b"],"workload":["generator"],)j"
        R"j("rate":["0.5-2 sessions/s"]})j"
        "\n");
}

TEST_CASE("plot.waste_rate must be a swept arrival rate: exit 2 naming the key") {
  auto d = test::scratch("plot-waste-rate-bad");
  auto path = test::write_file(d / "s.yaml", test::sweep::spec_text("plot: {waste_rate: 3}\n"));
  std::string err;
  CHECK(test::sweep::run_isim("sweep " + path + " --out " + (d / "o").string(), nullptr, &err) ==
        2);
  CHECK(err.find(path + ":9: plot.waste_rate: 3 is not one of the swept arrival.rate values "
                        "(0.5, 2)") != std::string::npos);
  CHECK(!fs::exists(d / "o" / "results.csv"));  // refused before any run
  // The same from -p, and a value that is not a rate at all.
  CHECK(test::sweep::run_isim("sweep " + path + " -p plot.waste_rate=-1 --list", nullptr, &err) ==
        2);
  CHECK(err.find("plot.waste_rate: must be one of the swept arrival.rate values") !=
        std::string::npos);
  // A swept rate is accepted.
  CHECK(test::sweep::run_isim("sweep " + path + " -p plot.waste_rate=2 --list") == 0);
}

TEST_CASE("plot.py: waste.png at the highest rate where every policy keeps up" *
          doctest::skip(isim::test::absent(plot_python().empty()))) {
  auto d = test::scratch("plot-waste-rate");
  const std::string csv = test::write_file(d / "results.csv", results_csv());
  test::write_file(d / "plot_context.json", kContext);
  const fs::path rep = d / "report.jsonl";
  std::string err;
  CAPTURE(err);
  REQUIRE(test::run_plot_script("plot.py", csv + " " + (d / "o").string(), nullptr, &err,
                                env_report(rep)) == 0);
  auto r = report(rep);
  REQUIRE(r.count("waste.png"));
  const auto& w = r["waste.png"];
  REQUIRE(w["titles"].size() == 2);
  CHECK(w["titles"][0] ==
        "GPU memory-time breakdown\nGPU A100-SXM4-80GB | model gpt-j-6b | workload infercept "
        "(mix) | rate 2 sessions/s");
  CHECK(w["titles"][1] ==
        "at 2 sessions/s: the highest rate where every policy keeps up (mean TTFT within 10x of "
        "the lowest rate's)");
  // Only the shares that have bars are in the legend.
  CHECK(w["legend"] == nlohmann::json::array({"active", "preserved", "free"}));
  CHECK(w["undrawn"].empty());
  // The latency plot: one entry per policy label, in run order; its title names the rates.
  const auto& l = r["latency.png"];
  CHECK(l["legend"] ==
        nlohmann::json::array({"preserve", "min-waste (oracle)", "min-waste (history)"}));
  CHECK(l["titles"][0] ==
        "Normalized latency against arrival rate\nGPU A100-SXM4-80GB | model gpt-j-6b | "
        "workload infercept (mix) | rate 1-4 sessions/s");
  for (const auto& item : r) {  // not a structured binding: CAPTURE takes it by lambda
    const std::string& png = item.first;
    const auto& j = item.second;
    CAPTURE(png);
    CHECK(j["min_font_pt"].get<double>() >= 9.0);
    CHECK(j["undrawn"].empty());
  }

  SUBCASE("the overloaded column decides when it is there") {
    // min-waste (history) overloaded at 2 (though its TTFT would pass): the rate is 1.
    fs::remove(rep);
    fs::create_directories(d / "o2");
    const std::string csv2 = test::write_file(
        d / "o2" / "results.csv",
        results_csv(",overloaded", {",0", ",0", ",1", ",0", ",0", ",0", ",0", ",1", ",0"}));
    REQUIRE(test::run_plot_script("plot.py", csv2 + " " + (d / "o2").string(), nullptr, &err,
                                  env_report(rep)) == 0);
    auto r2 = report(rep);
    CHECK(r2["waste.png"]["titles"][1] ==
          "at 1 sessions/s: the highest rate where every policy keeps up (no run overloaded)");
    // No context file beside it: the title says so rather than guessing.
    CHECK(r2["waste.png"]["titles"][0] ==
          "GPU memory-time breakdown\nGPU not recorded | model not recorded | workload not "
          "recorded | rate 1 sessions/s");
  }
  SUBCASE("recompute.png: recomputed tokens and their GPU time, when some run recomputed") {
    CHECK(r.count("recompute.png") == 0);  // no recompute_gpu_s column
    for (const char* gpu_s : {"0", "1.5"}) {
      CAPTURE(gpu_s);
      fs::remove(rep);
      const fs::path o = d / (std::string("r") + gpu_s);
      fs::create_directories(o);
      std::vector<std::string> extra(9, std::string(",10,0"));
      extra[2] = std::string(",10,") + gpu_s;
      const std::string csv4 = test::write_file(
          o / "results.csv", results_csv(",recomputed_tokens,recompute_gpu_s", extra));
      REQUIRE(test::run_plot_script("plot.py", csv4 + " " + o.string(), nullptr, &err,
                                    env_report(rep)) == 0);
      auto r4 = report(rep);
      if (std::string(gpu_s) == "0") {
        CHECK(r4.count("recompute.png") == 0);
        continue;
      }
      REQUIRE(r4.count("recompute.png") == 1);
      CHECK(r4["recompute.png"]["titles"][0] ==
            "Recomputation against arrival rate\nGPU not recorded | model not recorded | "
            "workload not recorded | rate 1-4 sessions/s");
      CHECK(r4["recompute.png"]["legend"] ==
            nlohmann::json::array({"preserve", "min-waste (oracle)", "min-waste (history)"}));
    }
  }
  SUBCASE("a policy overloaded at every rate: the lowest rate, saying why") {
    // preserve overloaded at 1, 2 and 4: no rate where every policy keeps up.
    fs::remove(rep);
    fs::create_directories(d / "o3");
    const std::string csv3 = test::write_file(
        d / "o3" / "results.csv",
        results_csv(",overloaded", {",1", ",1", ",1", ",0", ",0", ",0", ",0", ",0", ",0"}));
    REQUIRE(test::run_plot_script("plot.py", csv3 + " " + (d / "o3").string(), nullptr, &err,
                                  env_report(rep)) == 0);
    CHECK(report(rep)["waste.png"]["titles"][1] ==
          "at 1 sessions/s: the lowest rate, as at every rate some policy does not keep up "
          "(keeping up: no run overloaded)");
  }
  SUBCASE("--waste-rate picks a swept rate; another exits 2 naming the key") {
    fs::remove(rep);
    REQUIRE(test::run_plot_script("plot.py", csv + " " + (d / "o").string() + " --waste-rate 4",
                                  nullptr, &err, env_report(rep)) == 0);
    CHECK(report(rep)["waste.png"]["titles"][1] ==
          "at 4 sessions/s: the chosen rate (plot.waste_rate)");
    CHECK(test::run_plot_script("plot.py", csv + " " + (d / "o").string() + " --waste-rate 3",
                                nullptr, &err) == 2);
    CHECK(err.find("--waste-rate (plot.waste_rate): 3 is not a swept arrival rate that every "
                   "policy ran (expected one of 1, 2, 4)") != std::string::npos);
  }
}

TEST_CASE("plot_plan.py: no legend entry for an undrawn Pareto line, fonts >= 9 pt" *
          doctest::skip(isim::test::absent(plot_python().empty()))) {
  auto d = test::scratch("plot-plan-legend");
  // preserve on h200 is both the cheapest and of the highest capacity: the front is that one
  // candidate, so there is no line to draw. a100 is infeasible (no GPUs): not drawn at all.
  const std::string csv = test::write_file(
      d / "plan.csv",
      "rank,deployment,gpu,policy,router,capacity_rps,capacity_max_rps,gpus,cost_per_hour,"
      "headroom_pct.ttft_s.p99\n"
      "1,h200,H200,preserve,session-affinity,26,27,2,7.58,10\n"
      "2,h100,H100,min-waste(estimator=history),session-affinity,19,19.5,3,8.97,5\n"
      "3,h100,H100,discard,session-affinity,8.5,8.75,6,17.94,2\n"
      "4,a100,A100,swap,session-affinity,2,2.5,,,\n");
  test::write_file(d / "plot_context.json",
                   R"j({"gpu":["H200","H100"],"model":["llama-3.1-8b"],)j"
                   R"j("workload":["generator (infercept-mix)"],"rate":["peak 50 sessions/s"]})j");
  const fs::path rep = d / "report.jsonl";
  std::string err;
  CAPTURE(err);
  REQUIRE(test::run_plot_script("plot_plan.py", csv + " " + (d / "o").string(), nullptr, &err,
                                env_report(rep)) == 0);
  auto r = report(rep);
  const auto& c = r["cost_capacity.png"];
  // The ringed front, the policies drawn (sorted), the deployments drawn (in plan order); no
  // swap and no a100, which have no point.
  CHECK(c["legend"] ==
        nlohmann::json::array({"Pareto front (one candidate)", "discard",
                               "min-waste(estimator=history)", "preserve", "h200", "h100"}));
  CHECK(c["undrawn"].empty());
  CHECK(c["titles"][0] ==
        "Cost against capacity\nGPU H200, H100 | model llama-3.1-8b\nworkload generator "
        "(infercept-mix) | rate peak 50 sessions/s");
  for (const auto& item : r) {
    const std::string& png = item.first;
    CAPTURE(png);
    CHECK(item.second["min_font_pt"].get<double>() >= 9.0);
  }
  CHECK(fs::exists(d / "o" / "slo_headroom.png"));
}
