// Sweeps: expansion order, validation of swept keys and values, results.csv (columns, values,
// determinism across --jobs), shards and merge, the isim sweep CLI and the plot script.
#include <doctest/doctest.h>

#include <map>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "experiments/outputs.h"
#include "experiments/run.h"
#include "experiments/sweep.h"
#include "policies/builtin.h"
#include "tests/cli_helpers.h"
#include "tests/test_paths.h"
#include "traces/input_error.h"

using namespace isim;
namespace fs = std::filesystem;

namespace {

std::string profile() {
  return test::source_dir() + "/calibrate/profiles/a100-80g-gptj-6b.infercept.yaml";
}

// A small sweep spec: 40 generated sessions, two baseline policies, rates x seeds.
std::string spec_text(const std::string& extra = "") {
  std::string s = "name: small\n";                  // line 1
  s += "trace: {from: generator, sessions: 40}\n";  // 2
  s += "arrival: {process: poisson, rate: 1}\n";    // 3
  s += "profile: " + profile() + "\n";              // 4
  s += "policies: [discard, swap]\n";               // 5
  s += "sweep:\n";                                  // 6
  s += "  arrival.rate: [0.5, 2]\n";                // 7
  s += "  seed: [1, 2, 3]\n";                       // 8
  s += extra;
  return s;
}

// Runs the isim binary; returns its exit code, with stdout and stderr captured when asked.
int run_isim(const std::string& args, std::string* out = nullptr, std::string* err = nullptr) {
  return test::run_bin("isim", args, out, err);
}

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

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> v;
  std::stringstream ss(text);
  for (std::string l; std::getline(ss, l);) v.push_back(l);
  return v;
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
        "users, sessions_per_user, stagger_s, max_delay_s, advance_min, advance_max");
  CHECK(sweep_error(spec_text("  engine.max_num_seqs: [8, -1]\n")) ==
        "s.yaml:9: sweep.engine.max_num_seqs = -1: engine.max_num_seqs: must be > 0");
  CHECK(sweep_error(spec_text("  engine.scheduler: [chunked, fifo]\n")) ==
        "s.yaml:9: sweep.engine.scheduler = fifo: engine.scheduler: unknown scheduler 'fifo'; "
        "valid: chunked, vllm-v0, vllm-v1");
  CHECK(sweep_error(spec_text("  trace.from.x: [1]\n")) ==
        "s.yaml:9: sweep.trace.from.x = 1: 'trace.from' is not a map");
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
        "s.yaml:9: plot.target: unknown key; valid keys: latency_target_s");
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
  exp::SweepOptions o;
  o.shard = exp::parse_shard("5/12");
  auto res = exp::run_sweep(s, o);
  REQUIRE(res.rows.size() == 1);
  CHECK(res.indices[0] == 4);
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

TEST_CASE("results.csv is byte-identical for any number of jobs" *
          doctest::test_suite("threads")) {
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

TEST_CASE("shards merged give the unsharded results.csv") {
  auto d = test::scratch("shards");
  auto path = test::write_file(d / "s.yaml", spec_text());
  REQUIRE(run_isim("sweep " + path + " --jobs 2 --out " + (d / "all").string()) == 0);
  for (int k = 1; k <= 3; ++k) {
    auto out = d / fmt::format("k{}", k);
    REQUIRE(run_isim(fmt::format("sweep {} --shard {}/3 --out {}", path, k, out.string())) == 0);
    auto recs = exp::read_csv(test::slurp(out / "results.csv"), "shard");
    REQUIRE(recs.size() == 1 + 4);
    for (size_t r = 1; r < recs.size(); ++r)
      CHECK(std::stoul(recs[r].fields[0]) % 3 == static_cast<size_t>(k - 1));
  }
  std::string out;
  // Shards in any order.
  REQUIRE(run_isim("sweep merge " + (d / "m.csv").string() + " " + (d / "k3/results.csv").string() +
                       " " + (d / "k1/results.csv").string() + " " +
                       (d / "k2/results.csv").string(),
                   &out) == 0);
  CHECK(out.find("merged 3 file(s), 12 run(s)") != std::string::npos);
  CHECK(test::slurp(d / "m.csv") == test::slurp(d / "all/results.csv"));

  std::vector<size_t> missing;
  auto text = exp::merge_results({(d / "k1/results.csv").string(), (d / "k3/results.csv").string()},
                                 &missing);
  CHECK(missing == std::vector<size_t>{1, 4, 7, 10});
  CHECK(lines(text).size() == 1 + 8);
}

TEST_CASE("isim sweep merge refuses inconsistent shards with exit 2") {
  auto d = test::scratch("merge-errors");
  auto path = test::write_file(d / "s.yaml", spec_text());
  REQUIRE(run_isim("sweep " + path + " --shard 1/2 --out " + (d / "a").string()) == 0);
  REQUIRE(run_isim("sweep " + path + " --shard 2/2 -p 'sweep.seed=[1, 2]' --out " +
                   (d / "b").string()) == 0);
  REQUIRE(run_isim("sweep " + path +
                   " --shard 2/2 -p 'sweep.arrival.rate=[1]' -p "
                   "'sweep.engine.max_num_seqs=[4, 8, 16]' --out " +
                   (d / "c").string()) == 0);
  auto a = (d / "a/results.csv").string();
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
  }
  SUBCASE("a missing input, and too few arguments") {
    CHECK(run_isim("sweep merge " + (d / "m.csv").string() + " " + (d / "none.csv").string(),
                   nullptr, &err) == 2);
    CHECK(err.find("none.csv: cannot open") != std::string::npos);
    CHECK(run_isim("sweep merge " + (d / "m.csv").string(), nullptr, &err) == 2);
    CHECK(err.find("merge needs OUT.csv and at least one input") != std::string::npos);
  }
  SUBCASE("an incomplete merge warns about the missing runs") {
    // a: runs 0, 2, ..., 10; b, shard 2 of 2 of an 8-run sweep: runs 1, 3, 5, 7.
    auto b = (d / "b/results.csv").string();
    CHECK(run_isim("sweep merge " + (d / "m.csv").string() + " " + a + " " + b, nullptr, &err) ==
          0);
    CHECK(err.find("warning: 1 run index(es) missing: 9 ") != std::string::npos);
    CHECK(lines(test::slurp(d / "m.csv")).size() == 1 + 10);
  }
}

TEST_CASE("CSV fields are quoted only when needed and read back") {
  CHECK(exp::csv_field("swap") == "swap");
  CHECK(exp::csv_field("a,b") == "\"a,b\"");
  CHECK(exp::csv_field("say \"hi\"") == "\"say \"\"hi\"\"\"");
  auto recs = exp::read_csv("a,\"b,c\",\"d\"\"e\"\n\"multi\nline\",,x\r\nlast", "f.csv");
  REQUIRE(recs.size() == 3);
  CHECK(recs[0].fields == std::vector<std::string>{"a", "b,c", "d\"e"});
  CHECK(recs[1].line == 2);
  CHECK(recs[1].fields == std::vector<std::string>{"multi\nline", "", "x"});
  CHECK(recs[2].line == 4);
  CHECK(recs[2].fields == std::vector<std::string>{"last"});
  CHECK_THROWS_WITH_AS(exp::read_csv("a\n\"open", "f.csv"), "f.csv:2: unterminated quoted field",
                       InputError);
}

TEST_CASE("--shard K/N") {
  auto s = exp::parse_shard("2/3");
  CHECK(s.k == 2);
  CHECK(s.n == 3);
  CHECK(s.contains(1));
  CHECK(s.contains(4));
  CHECK(!s.contains(2));
  CHECK(exp::parse_shard("1/1").whole());
  for (const char* bad : {"0/3", "4/3", "3", "/3", "2/", "a/b", "-1/3", "1/0"})
    CHECK_THROWS_WITH_AS(
        exp::parse_shard(bad),
        (std::string("--shard ") + bad + ": expected K/N with 1 <= K <= N (e.g. 2/4)").c_str(),
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
  CHECK(lines(out) == std::vector<std::string>{"    1  policy=discard arrival.rate=0.5 seed=2",
                                               "    6  policy=swap arrival.rate=0.5 seed=1",
                                               "   11  policy=swap arrival.rate=2 seed=3"});
  CHECK(!fs::exists(d / "results"));
  CHECK(run_isim("sweep", nullptr, &err) == 2);
  CHECK(err.find("needs EXPERIMENT.yaml") != std::string::npos);
  CHECK(run_isim("sweep x.yaml --shard 3/2", nullptr, &err) == 2);
  CHECK(err.find("--shard 3/2: expected K/N") != std::string::npos);
  CHECK(run_isim("sweep x.yaml --jobs 0", nullptr, &err) == 2);
  CHECK(err.find("--jobs: expected an integer >= 1 (worker threads), got '0'") !=
        std::string::npos);
  // Not SIZE_MAX: a negative count is refused, naming the flag.
  CHECK(run_isim("sweep " + path + " --list --jobs -1", nullptr, &err) == 2);
  CHECK(err.find("--jobs: expected an integer >= 1 (worker threads), got '-1'") !=
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
