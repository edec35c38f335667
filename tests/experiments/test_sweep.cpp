// Sweeps: expansion order, validation of swept keys and values, results.csv (columns, values,
// determinism across --jobs). Shards, merge, the isim sweep CLI and the plot script:
// test_sweep_cli.cpp.
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

namespace {

std::string sweep_error(const std::string& text, const std::vector<std::string>& overrides = {}) {
  auto d = test::scratch("errors");
  auto path = test::write_file(d / "s.yaml", text);
  try {
    exp::load_sweep(path, overrides);
  } catch (const InputError& e) {
    std::string msg = e.what();
    // Messages start with the spec's path; make them comparable.
    if (msg.rfind(path, 0) == 0) msg = "s.yaml" + msg.substr(path.size());
    return msg;
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("a sweep runs policies outermost, then the keys in file order, values in list order") {
  auto d = test::scratch("expand");
  auto s = exp::load_sweep(test::write_file(d / "s.yaml", spec_text()), {});
  REQUIRE(s.runs.size() == 2 * 2 * 3);
  const char* policies[] = {"discard", "swap"};
  const double rates[] = {0.5, 2};
  size_t i = 0;
  for (const char* p : policies)
    for (double rate : rates)
      for (uint64_t seed = 1; seed <= 3; ++seed, ++i) {
        const auto& r = s.runs[i];
        CAPTURE(i);
        CHECK(r.index == i);
        REQUIRE(r.experiment.policies.size() == 1);
        CHECK(r.policy().name == p);
        CHECK(r.experiment.arrival.rate == rate);
        CHECK(r.experiment.seed == seed);
        CHECK(r.experiment.arrival.seed == seed);
        CHECK(r.experiment.sweep.empty());
        CHECK(r.estimator.empty());
        REQUIRE(r.point.size() == 2);
        CHECK(r.point[0].first == "arrival.rate");
        CHECK(r.point[1].first == "seed");
      }
  CHECK(s.runs[3].label() == "policy=discard arrival.rate=2 seed=1");
  CHECK(s.runs[11].label() == "policy=swap arrival.rate=2 seed=3");
  // The base keeps the spec as written.
  CHECK(s.base.policies.size() == 2);
  REQUIRE(s.base.sweep.size() == 2);
  CHECK(s.base.sweep[0].line == 7);
  CHECK(s.base.sweep[1].values == std::vector<std::string>{"1", "2", "3"});
  // The resolved spec keeps the sweep.
  auto again = exp::parse_experiment(s.base.resolved(), "r.yaml", d.string());
  REQUIRE(again.sweep.size() == 2);
  CHECK(again.sweep[0].key == "arrival.rate");
  CHECK(again.sweep[0].values == std::vector<std::string>{"0.5", "2"});
  CHECK(!again.has_plot);
  auto plotted = exp::load_sweep(
      test::write_file(d / "pl.yaml", spec_text("plot: {latency_target_s: 0.25}\n")), {});
  auto back = exp::parse_experiment(plotted.base.resolved(), "r.yaml", d.string());
  CHECK(back.has_plot);
  CHECK(back.plot.latency_target_s == 0.25);

  SUBCASE("without sweep: one run per policy") {
    std::string t = spec_text();
    t = t.substr(0, t.find("sweep:"));
    auto one = exp::load_sweep(test::write_file(d / "p.yaml", t), {});
    REQUIRE(one.runs.size() == 2);
    CHECK(one.runs[1].label() == "policy=swap");
  }
  SUBCASE("-p overrides the base, and -p sweep.KEY replaces a list") {
    auto o =
        exp::load_sweep(d / "s.yaml", {"policy=swap", "sweep.seed=[7, 8]", "trace.sessions=10"});
    REQUIRE(o.runs.size() == 4);
    CHECK(o.runs[0].policy().name == "swap");
    CHECK(o.runs[3].label() == "policy=swap arrival.rate=2 seed=8");
    CHECK(o.runs[3].experiment.trace.sessions == 10);
  }
  SUBCASE("a policy with an estimator is its own value of the policy dimension") {
    REQUIRE(policy::policy_registry().contains("min-waste"));  // a builtin policy
    std::string t = spec_text();
    auto at = t.find("policies: [discard, swap]");
    t.replace(at, 25,
              "policies: [discard, {name: min-waste, estimator: oracle}, "
              "{name: min-waste, estimator: history}]");
    auto m = exp::load_sweep(test::write_file(d / "m.yaml", t), {});
    REQUIRE(m.runs.size() == 18);
    CHECK(m.runs[6].estimator == "oracle");
    CHECK(m.runs[12].estimator == "history");
    CHECK(m.runs[12].label() == "policy=min-waste estimator=history arrival.rate=0.5 seed=1");
  }
}

TEST_CASE("swept keys and values are validated like -p and named sweep.<key>") {
  CHECK(sweep_error(spec_text("  arrival.rat: [1]\n")) ==
        "s.yaml:9: sweep.arrival.rat = 1: arrival.rat: unknown key; valid keys: process, rate, "
        "users, sessions_per_user, stagger_s, max_delay_s, advance_min, advance_max, "
        "salt_copies, phases, cycles");
  CHECK(sweep_error(spec_text("  engine.max_num_seqs: [8, -1]\n")) ==
        "s.yaml:9: sweep.engine.max_num_seqs = -1: engine.max_num_seqs: must be > 0");
  CHECK(sweep_error(spec_text("  engine.scheduler: [chunked, fifo]\n")) ==
        "s.yaml:9: sweep.engine.scheduler = fifo: engine.scheduler: unknown scheduler 'fifo'; "
        "valid: chunked, vllm-v0, vllm-v1");
  CHECK(sweep_error(spec_text("  trace.from.x: [1]\n")) ==
        "s.yaml:9: sweep.trace.from.x = 1: 'trace.from' is 'generator', not a map or a list");
  CHECK(sweep_error(spec_text("  engine.max_num_seqs: 8\n")) ==
        "s.yaml:9: sweep.engine.max_num_seqs: expected a non-empty list of values, e.g. [1, 2]");
  CHECK(sweep_error(spec_text("  engine.max_num_seqs: [8, 8]\n")) ==
        "s.yaml:9: sweep.engine.max_num_seqs[1]: '8' listed twice");
  CHECK(sweep_error(spec_text("  engine.max_num_seqs: [[8]]\n")) ==
        "s.yaml:9: sweep.engine.max_num_seqs[0]: expected a scalar value, got a list");
  CHECK(sweep_error(spec_text("  policy.estimator: [oracle]\n"))
            .find("s.yaml:9: sweep.policy.estimator: policies are swept by listing them under "
                  "policies:") == 0);
  CHECK(sweep_error(spec_text("plot: {latency_target_s: 0}\n")) ==
        "s.yaml:9: plot.latency_target_s: must be > 0 seconds per token");
  CHECK(sweep_error(spec_text("plot: {target: 1}\n")) ==
        "s.yaml:9: plot.target: unknown key; valid keys: latency_target_s, waste_rate");
  CHECK(sweep_error(spec_text(), {"arrival.rate=3"}) ==
        "-p arrival.rate: this key is swept (sweep.arrival.rate); override its list instead, e.g. "
        "-p 'sweep.arrival.rate=[1, 2]'");
  std::string no_rate = spec_text("plot: {}\n");
  no_rate.replace(no_rate.find("  arrival.rate: [0.5, 2]\n"), 24, "");
  CHECK(sweep_error(no_rate) ==
        "s.yaml: plot: the plots are against arrival rate (or a multi-turn trace's think time); "
        "add arrival.rate to sweep: (e.g. arrival.rate: [1, 2, 4])");
}

TEST_CASE("isim run refuses a sweep spec and points to isim sweep") {
  auto d = test::scratch("run-refuses");
  auto path = test::write_file(d / "s.yaml", spec_text());
  CHECK_THROWS_WITH_AS(
      exp::load_experiment(path, {}),
      (path + ":6: sweep: this spec is a sweep; run it with `isim sweep " + path + "`").c_str(),
      InputError);
  std::string err;
  CHECK(run_isim("run " + path + " --out " + (d / "o").string(), nullptr, &err) == 2);
  CHECK(err.find("run it with `isim sweep " + path + "`") != std::string::npos);
  CHECK(!fs::exists(d / "o"));
  // A -p that adds a sweep is refused as well.
  auto plain = test::write_file(d / "p.yaml", spec_text().substr(0, spec_text().find("sweep:")));
  CHECK_NOTHROW(exp::load_experiment(plain, {}));
  CHECK_THROWS_AS(exp::load_experiment(plain, {"sweep={seed: [1, 2]}"}), InputError);
}

TEST_CASE("results.csv has every summary metric, flattened, with the run's exact values") {
  auto d = test::scratch("columns");
  auto s = exp::load_sweep(test::write_file(d / "s.yaml", spec_text()), {});
  auto h = exp::results_header(s);
  REQUIRE(h.size() > 5);
  CHECK(std::vector<std::string>(h.begin(), h.begin() + 5) ==
        std::vector<std::string>{"run_index", "policy", "arrival.rate", "seed", "estimator"});
  std::set<std::string> cols(h.begin(), h.end());
  CHECK(cols.size() == h.size());  // no column twice (summary.json's "policy" is dropped)
  for (const char* c :
       {"normalized_latency_s.mean", "normalized_latency_s.p99", "ttft_s.p50", "e2e_s.max",
        "throughput_tokens_per_s", "throughput_sessions_per_s", "decisions.swap",
        "waste_share.active", "waste_share.preserved", "waste_share.recompute",
        "waste_share.swap_stall", "waste_share.free", "waste_block_seconds.total",
        "recomputed_tokens", "swapped_out_bytes", "gpu_blocks", "profile_extrapolations"})
    CHECK(cols.count(c) == 1);

  // Every leaf of summary.json, and nothing else, after the five run columns.
  size_t leaves = 0;
  std::function<void(const nlohmann::ordered_json&)> count = [&](const nlohmann::ordered_json& j) {
    for (const auto& [k, v] : j.items()) v.is_object() ? count(v) : void(++leaves);
  };
  count(exp::summary_json(sim::Summary{}, "x"));
  CHECK(h.size() == 5 + leaves - 1);

  // Run 4 (discard, rate 2, seed 2) run by hand gives the same numbers, shortest round-trip.
  // Shard 3/12 holds runs 4 and 9: FNV-1a 64 of their keys is 2 modulo 12 (computed apart).
  exp::SweepOptions o;
  o.shard = exp::parse_shard("3/12");
  auto res = exp::run_sweep(s, o);
  REQUIRE(res.rows.size() == 2);
  CHECK(res.indices == std::vector<size_t>{4, 9});
  const auto& run = s.runs[4];
  auto in = exp::prepare(run.experiment);
  auto r = exp::run_policy(run.experiment, in, run.policy());
  auto col = [&](const std::string& name) {
    for (size_t c = 0; c < h.size(); ++c)
      if (h[c] == name) return res.rows[0][c];
    return std::string("(missing)");
  };
  CHECK(col("run_index") == "4");
  CHECK(col("policy") == "discard");
  CHECK(col("arrival.rate") == "2");
  CHECK(col("seed") == "2");
  CHECK(col("estimator") == "");
  CHECK(col("normalized_latency_s.p99") == fmt::format("{}", r.summary.normalized_latency.p99));
  CHECK(std::stod(col("normalized_latency_s.p99")) == r.summary.normalized_latency.p99);
  CHECK(col("recomputed_tokens") == std::to_string(r.summary.counters.recomputed_tokens));
  CHECK(col("finished") == "40");
  CHECK(r.summary.counters.recomputed_tokens > 0);
  double tot = r.summary.waste.total();
  CHECK(std::stod(col("waste_share.free")) == r.summary.waste.free / tot);
}

TEST_CASE("results.csv is byte-identical for any number of jobs" * doctest::test_suite("threads")) {
  auto d = test::scratch("jobs");
  auto path = test::write_file(d / "s.yaml", spec_text());
  auto s = exp::load_sweep(path, {});
  exp::SweepOptions one, four;
  one.jobs = 1;
  four.jobs = 4;
  std::vector<size_t> order;
  four.on_done = [&](const exp::SweepProgress& p) {
    order.push_back(p.run.index);
    CHECK(p.done == order.size());
    CHECK(p.total == 12);
  };
  auto a = exp::run_sweep(s, one);
  auto b = exp::run_sweep(s, four);
  CHECK(order.size() == 12);
  REQUIRE(a.rows.size() == 12);
  CHECK(a.csv() == b.csv());
  // The rows differ where the runs do (so equality above is not vacuous).
  CHECK(a.rows[0] != a.rows[1]);
  CHECK(a.rows[0][1] == "discard");
  CHECK(a.rows[6][1] == "swap");
  for (size_t i = 0; i < 12; ++i) CHECK(a.indices[i] == i);

  // The binary too.
  std::string err1, err4;
  REQUIRE(run_isim("sweep " + path + " --jobs 1 --out " + (d / "j1").string(), nullptr, &err1) ==
          0);
  REQUIRE(run_isim("sweep " + path + " --jobs 4 --out " + (d / "j4").string(), nullptr, &err4) ==
          0);
  auto csv1 = test::slurp(d / "j1/results.csv");
  CHECK(csv1 == a.csv());
  // Every file the two runs wrote (results.csv, plots when matplotlib is there), byte for byte.
  auto files = [](const fs::path& root) {
    std::map<std::string, std::string> out;
    for (const auto& f : fs::recursive_directory_iterator(root))
      if (f.is_regular_file()) out[fs::relative(f.path(), root).string()] = test::slurp(f.path());
    return out;
  };
  const auto f1 = files(d / "j1"), f4 = files(d / "j4");
  CHECK(f1.count("results.csv") == 1);
  CHECK(f1 == f4);
  // stderr is not a terminal here: one line per finished run.
  size_t progress = 0;
  for (const auto& l : lines(err4))
    if (l.rfind("[", 0) == 0 && l.find("/12] policy=") != std::string::npos &&
        l.rfind(" s") == l.size() - 2)
      ++progress;
  CHECK(progress == 12);
  CHECK(err1.find("[1/12] policy=discard arrival.rate=0.5 seed=1: ") != std::string::npos);
}
