// `sweep.variants` (experiments/spec/sweep_variants.h): named bundles of overrides as one sweep
// dimension; its position among the sweep keys, the overrides each run gets, the results.csv
// `variant` column, label(), the resolved spec, and every error with its exact message.
#include <doctest/doctest.h>

#include <filesystem>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "core/input_error.h"
#include "experiments/sweep/sweep.h"
#include "tests/cli_helpers.h"
#include "tests/experiments/sweep_fixtures.h"
#include "tests/test_paths.h"

using namespace isim;
namespace fs = std::filesystem;

namespace {

// Lines 1-6 of every spec here; `sweep` follows from line 7.
std::string head() {
  return test::sweep::spec_head("variants");
}

const char* kVariants =
    "  variants:\n"                                                            // 7
    "    - {name: small, set: {engine.max_num_seqs: 8, arrival.rate: 0.5}}\n"  // 8
    "    - name: big\n"                                                        // 9
    "      set:\n"                                                             // 10
    "        engine.max_num_seqs: 64\n"                                        // 11
    "        arrival.rate: 2\n"                                                // 12
    "    - {name: fewer, set: {trace.sessions: 20}}\n";                        // 13

exp::Sweep load(const std::string& sweep, const std::vector<std::string>& overrides = {}) {
  auto d = test::scratch("variants");
  return exp::load_sweep(test::write_file(d / "s.yaml", head() + sweep), overrides);
}

// The error of loading head() + `sweep`, its path shortened to s.yaml.
std::string error_of(const std::string& sweep, const std::vector<std::string>& overrides = {}) {
  auto d = test::scratch("variant-errors");
  auto path = test::write_file(d / "s.yaml", head() + sweep);
  try {
    exp::load_sweep(path, overrides);
  } catch (const InputError& e) {
    std::string msg = e.what();
    if (msg.rfind(path, 0) == 0) msg = "s.yaml" + msg.substr(path.size());
    return msg;
  }
  return "(no error)";
}

// `variants:` with this text after it (on line 7), then `seed: [1, 2]`.
std::string variants_error(const std::string& rest) {
  return error_of("  variants:" + rest + "  seed: [1, 2]\n");
}

using Run = std::tuple<std::string, std::string, uint64_t>;  // policy, variant, seed

std::vector<Run> runs_of(const exp::Sweep& s) {
  std::vector<Run> v;
  for (const auto& r : s.runs) {
    std::string variant;
    for (const auto& [k, val] : r.point)
      if (k == "variant") variant = val;
    v.emplace_back(r.policy().name, variant, r.experiment.seed);
  }
  return v;
}

}  // namespace

TEST_CASE("variants are one sweep dimension at their position among the keys") {
  SUBCASE("before another key: each variant's seeds in turn") {
    auto s = load(std::string(kVariants) + "  seed: [1, 2]\n");
    CHECK(runs_of(s) == std::vector<Run>{{"discard", "small", 1},
                                         {"discard", "small", 2},
                                         {"discard", "big", 1},
                                         {"discard", "big", 2},
                                         {"discard", "fewer", 1},
                                         {"discard", "fewer", 2},
                                         {"swap", "small", 1},
                                         {"swap", "small", 2},
                                         {"swap", "big", 1},
                                         {"swap", "big", 2},
                                         {"swap", "fewer", 1},
                                         {"swap", "fewer", 2}});
    for (size_t i = 0; i < s.runs.size(); ++i) CHECK(s.runs[i].index == i);
    CHECK(s.runs[3].point ==
          std::vector<std::pair<std::string, std::string>>{{"variant", "big"}, {"seed", "2"}});
    CHECK(s.runs[3].label() == "policy=discard variant=big seed=2");
    CHECK(s.runs[10].label() == "policy=swap variant=fewer seed=1");
    REQUIRE(s.base.sweep.size() == 2);
    CHECK(s.base.sweep[0].key == "variants");
    CHECK(s.base.sweep[0].line == 7);
    CHECK(s.base.sweep[0].values == std::vector<std::string>{"small", "big", "fewer"});
    CHECK(s.base.sweep[0].variants[1].lines == std::vector<int>{11, 12});
  }
  SUBCASE("after another key: each seed's variants in turn") {
    auto s = load("  seed: [1, 2]\n" + std::string(kVariants));
    CHECK(runs_of(s) == std::vector<Run>{{"discard", "small", 1},
                                         {"discard", "big", 1},
                                         {"discard", "fewer", 1},
                                         {"discard", "small", 2},
                                         {"discard", "big", 2},
                                         {"discard", "fewer", 2},
                                         {"swap", "small", 1},
                                         {"swap", "big", 1},
                                         {"swap", "fewer", 1},
                                         {"swap", "small", 2},
                                         {"swap", "big", 2},
                                         {"swap", "fewer", 2}});
    CHECK(s.runs[4].label() == "policy=discard seed=2 variant=big");
  }
  SUBCASE("-p sweep.variants replaces the list") {
    auto s = load(std::string(kVariants), {"sweep.variants=[{name: one, set: {seed: 9}}]"});
    REQUIRE(s.runs.size() == 2);
    CHECK(s.runs[1].label() == "policy=swap variant=one");
    CHECK(s.runs[1].experiment.seed == 9);
  }
}

TEST_CASE("a variant applies all of its set, and only its set, to each of its runs") {
  auto s = load(kVariants);
  REQUIRE(s.runs.size() == 6);
  const auto& base_seqs = s.base.engine.max_num_seqs;
  REQUIRE(base_seqs != 8);
  REQUIRE(base_seqs != 64);
  for (size_t p = 0; p < 2; ++p) {
    const auto& small = s.runs[3 * p].experiment;
    const auto& big = s.runs[3 * p + 1].experiment;
    const auto& fewer = s.runs[3 * p + 2].experiment;
    CHECK(small.engine.max_num_seqs == 8);
    CHECK(small.arrival.rate == 0.5);
    CHECK(small.trace.sessions == 40);
    CHECK(big.engine.max_num_seqs == 64);
    CHECK(big.arrival.rate == 2);
    CHECK(fewer.engine.max_num_seqs == base_seqs);  // the spec's, not the previous variant's
    CHECK(fewer.arrival.rate == 1);
    CHECK(fewer.trace.sessions == 20);
    for (const auto* e : {&small, &big, &fewer}) CHECK(e->sweep.empty());
  }
  // The resolved spec keeps the variants, and reads back the same.
  auto again = exp::parse_experiment(s.base.resolved(), "r.yaml", ".");
  REQUIRE(again.sweep.size() == 1);
  CHECK(again.sweep[0].values == s.base.sweep[0].values);
  CHECK(again.sweep[0].variants[0].set == s.base.sweep[0].variants[0].set);
  CHECK(again.sweep[0].variants[1].set ==
        std::vector<std::pair<std::string, std::string>>{{"engine.max_num_seqs", "64"},
                                                         {"arrival.rate", "2"}});
}

TEST_CASE("variants set a fleet's roles and planner together, maps included") {
  // The product of cluster.roles and cluster.planner would pair mixed with online, an error.
  auto s = load(
      "  variants:\n"
      "    - {name: mixed, set: {cluster.replicas: 4}}\n"
      "    - {name: static-1:3, set: {cluster: {replicas: 4, roles: \"1:3\"}}}\n"
      "    - name: online\n"
      "      set: {cluster.replicas: 4, cluster.planner: {name: online, interval_s: 7},\n"
      "            cluster.roles: \"1:3\"}\n");
  REQUIRE(s.runs.size() == 6);
  const auto& mixed = s.runs[0].experiment.cluster;
  const auto& fixed = s.runs[1].experiment.cluster;
  const auto& online = s.runs[2].experiment.cluster;
  CHECK(mixed.replicas() == 4);
  CHECK_FALSE(mixed.disagg.enabled);
  CHECK(fixed.disagg.enabled);
  CHECK(fixed.disagg.planner == "static");
  CHECK(online.disagg.enabled);
  CHECK(online.disagg.planner == "online");
  CHECK(online.disagg.planner_params.values.at("interval_s") == "7");
  CHECK(s.base.sweep[0].variants[2].set[1].second == "{name: online, interval_s: 7}");
  CHECK(s.runs[5].label() == "policy=swap variant=online");
  // A variant's keys set the fleet, so results.csv has the fleet columns.
  auto h = exp::results_header(s);
  CHECK(std::set<std::string>(h.begin(), h.end()).count("cluster.busy_imbalance") == 1);
}

TEST_CASE("results.csv has a variant column holding the variant's name") {
  auto s = load(std::string(kVariants) + "  seed: [1, 2]\n");
  auto h = exp::results_header(s);
  REQUIRE(h.size() > 5);
  CHECK(std::vector<std::string>(h.begin(), h.begin() + 5) ==
        std::vector<std::string>{"run_index", "policy", "variant", "seed", "estimator"});
  exp::SweepOptions o;
  // Shard 1/12 holds runs 3 (discard, big, seed 2), 4 and 7: FNV-1a 64 of their keys is 0
  // modulo 12 (computed apart).
  o.shard = exp::parse_shard("1/12");
  auto res = exp::run_sweep(s, o);
  REQUIRE(res.rows.size() == 3);
  CHECK(res.indices == std::vector<size_t>{3, 4, 7});
  CHECK(std::vector<std::string>(res.rows[0].begin(), res.rows[0].begin() + 5) ==
        std::vector<std::string>{"3", "discard", "big", "2", ""});
}

TEST_CASE("isim sweep --list shows variant=NAME; a bad variant exits 2") {
  auto d = test::scratch("variants-cli");
  auto good = test::write_file(d / "s.yaml", head() + kVariants);
  std::string out, err;
  REQUIRE(test::run_bin("isim", "sweep " + good + " --list --shard 2/3", &out) == 0);
  CHECK(out == "    5  policy=swap variant=fewer\n");  // key hash = 1 modulo 3
  auto bad = test::write_file(d / "b.yaml", head() + "  variants: [{name: a}]\n");
  CHECK(test::run_bin("isim", "sweep " + bad + " --list", nullptr, &err) == 2);
  CHECK(err.find(bad + ":7: sweep.variants[0].set: missing") != std::string::npos);
}

TEST_CASE("variants: the shape of the list and of each entry") {
  const std::string shape = "{name: NAME, set: {dotted.key: value, ...}}";
  CHECK(variants_error(" 3\n") ==
        "s.yaml:7: sweep.variants: expected a non-empty list of " + shape + ", got '3'");
  CHECK(variants_error("\n") ==
        "s.yaml:7: sweep.variants: expected a non-empty list of " + shape + ", got nothing (null)");
  CHECK(variants_error(" []\n") ==
        "s.yaml:7: sweep.variants: expected a non-empty list of " + shape);
  CHECK(variants_error(" {name: a, set: {seed: 1}}\n") ==
        "s.yaml:7: sweep.variants: expected a non-empty list of " + shape + ", got a map");
  CHECK(variants_error("\n    - mixed\n") ==
        "s.yaml:8: sweep.variants[0]: expected a map " + shape + ", got 'mixed'");
  CHECK(variants_error(" [{set: {trace.sessions: 20}}]\n") ==
        "s.yaml:7: sweep.variants[0].name: missing (expected a variant name)");
  CHECK(variants_error(" [{name: [a], set: {trace.sessions: 20}}]\n") ==
        "s.yaml:7: sweep.variants[0].name: expected a variant name, got a list");
  CHECK(variants_error(" [{name: \"\", set: {trace.sessions: 20}}]\n") ==
        "s.yaml:7: sweep.variants[0].name: expected a non-empty name without quotes or newlines");
  CHECK(variants_error(" [{name: a}]\n") ==
        "s.yaml:7: sweep.variants[0].set: missing (expected a map of dotted keys to values, e.g. "
        "{cluster.roles: mixed})");
  CHECK(variants_error(" [{name: a, set: mixed}]\n") ==
        "s.yaml:7: sweep.variants[0].set: expected a map of dotted keys to values, e.g. "
        "{cluster.roles: mixed}, got 'mixed'");
  CHECK(variants_error(" [{name: a, set: {}}]\n") ==
        "s.yaml:7: sweep.variants[0].set: empty; a variant sets at least one key");
  CHECK(variants_error(" [{name: a, label: x, set: {trace.sessions: 20}}]\n") ==
        "s.yaml:7: sweep.variants[0].label: unknown key; valid keys: name, set");
  CHECK(variants_error("\n    - {name: a, set: {trace.sessions: 20}}\n"
                       "    - {name: a, set: {trace.sessions: 30}}\n") ==
        "s.yaml:9: sweep.variants[1].name: 'a' is also the name of sweep.variants[0]");
}

TEST_CASE("variants: the keys a variant may set") {
  auto one = [](const std::string& set) {
    return variants_error("\n    - {name: a, set: {" + set + "}}\n");
  };
  CHECK(one("seed: 3") ==
        "s.yaml:8: sweep.variants[0].set.seed: sweep.seed sweeps this key too; a key is set by "
        "variants or swept, not both");
  CHECK(error_of("  arrival.rate: [1, 2]\n  variants:\n"
                 "    - {name: a, set: {arrival: {process: poisson, rate: 3}}}\n") ==
        "s.yaml:9: sweep.variants[0].set.arrival: sweep.arrival.rate sweeps this key too; a key "
        "is set by variants or swept, not both");
  CHECK(one("policy.estimator: oracle") ==
        "s.yaml:8: sweep.variants[0].set.policy.estimator: policies are swept by listing them "
        "under policies:, not by a variant");
  CHECK(one("policies: [swap]") ==
        "s.yaml:8: sweep.variants[0].set.policies: policies are swept by listing them under "
        "policies:, not by a variant");
  CHECK(one("sweep.seed: [4]") ==
        "s.yaml:8: sweep.variants[0].set.sweep.seed: 'sweep' cannot be set by a variant");
  CHECK(one("plot: {}") ==
        "s.yaml:8: sweep.variants[0].set.plot: 'plot' cannot be set by a variant");
  CHECK(one("arrival..rate: 2") ==
        "s.yaml:8: sweep.variants[0].set.arrival..rate: expected a dotted key such as "
        "cluster.roles");
  CHECK(one("trace.sessions: 20, trace.sessions: 30") ==
        "s.yaml:8: sweep.variants[0].set.trace.sessions: duplicate key");
  CHECK(error_of(kVariants, {"engine.max_num_seqs=4"}) ==
        "-p engine.max_num_seqs: sweep.variants[0].set.engine.max_num_seqs sets this key "
        "(small); change it in the variants instead");
  CHECK(error_of(kVariants, {"arrival.process=poisson"}) == "(no error)");
}

TEST_CASE("variants: a bad value names sweep.variants[I].set.KEY and the value") {
  auto one = [](const std::string& set) {
    return variants_error(
        "\n    - {name: ok, set: {trace.sessions: 20}}\n"
        "    - {name: a, set: {" +
        set + "}}\n");
  };
  CHECK(one("engine.max_num_seqs: -1") ==
        "s.yaml:9: sweep.variants[1].set.engine.max_num_seqs = -1: engine.max_num_seqs: must be "
        "> 0");
  CHECK(one("arrival.rat: 1") ==
        "s.yaml:9: sweep.variants[1].set.arrival.rat = 1: arrival.rat: unknown key; valid keys: "
        "process, rate, users, sessions_per_user, stagger_s, max_delay_s, advance_min, "
        "advance_max, salt_copies, phases, cycles");
  CHECK(one("trace.from.x: 1") ==
        "s.yaml:9: sweep.variants[1].set.trace.from.x = 1: "
        "'trace.from' is 'generator', not a map or a list");
  // The key named is the first whose overrides so far fail, on its own line.
  CHECK(variants_error("\n    - name: a\n      set:\n        engine.max_num_seqs: 8\n"
                       "        engine.scheduler: fifo\n        arrival.rate: 2\n") ==
        "s.yaml:11: sweep.variants[0].set.engine.scheduler = fifo: engine.scheduler: unknown "
        "scheduler 'fifo'; valid: chunked, vllm-v0, vllm-v1");
  // Keys valid only together are checked together: online needs the roles listed after it.
  CHECK(error_of("  variants:\n    - {name: pd, set: {cluster.replicas: 4, cluster.planner: "
                 "online, cluster.roles: \"1:3\"}}\n") == "(no error)");
  CHECK(error_of("  variants:\n    - {name: bad, set: {cluster.replicas: 4, cluster.planner: "
                 "online}}\n") ==
        "s.yaml:8: sweep.variants[0].set.cluster.planner = online: cluster.planner: needs a "
        "disaggregated fleet (cluster.roles)");
  // A value valid alone but not with another key's value is the run's error.
  // Like any sweep value, a variant is checked alone on the spec first.
  CHECK(error_of("  cluster.replicas: [4, 2]\n  variants:\n"
                 "    - {name: pd, set: {cluster.roles: \"1:3\"}}\n") ==
        "s.yaml:9: sweep.variants[0].set.cluster.roles = 1:3: cluster.roles: expected prefill + "
        "decode + mixed = 1 (the replica count), got 1 + 3 + 0 = 4");
  // A variant valid alone but not with another key's value is the run's error.
  CHECK(error_of("  executor: [sim, live-cpu]\n  variants:\n"
                 "    - {name: fleet, set: {cluster.replicas: 2}}\n") ==
        "s.yaml: sweep run 1 (policy=discard executor=live-cpu variant=fleet): cluster: live "
        "executors run on one replica only (executor live-cpu)");
}

TEST_CASE("results.csv of mixed and disaggregated variants: every row as wide as the header") {
  auto s = load(
      "  variants:\n"
      "    - {name: mixed, set: {cluster.replicas: 4}}\n"
      "    - {name: static-1:3, set: {cluster: {replicas: 4, roles: \"1:3\"}}}\n");
  auto h = exp::results_header(s);
  size_t planner = 0;
  for (size_t i = 0; i < h.size(); ++i)
    if (h[i] == "cluster.disagg.planner") planner = i;
  REQUIRE(planner > 0);
  CHECK(h.back() == "cluster.disagg.restart_cached_tokens");  // the disagg columns come last
  exp::SweepOptions o;
  auto res = exp::run_sweep(s, o);
  REQUIRE(res.rows.size() == 4);  // discard, swap x mixed, static-1:3
  for (const auto& row : res.rows) {
    CAPTURE(row[0]);
    CHECK(row.size() == h.size());
    CHECK(row[planner] == (row[2] == "mixed" ? "" : "static"));
  }
  // Without a disaggregated run, no disagg columns.
  auto plain = load("  variants:\n    - {name: mixed, set: {cluster.replicas: 4}}\n");
  auto ph = exp::results_header(plain);
  CHECK(std::set<std::string>(ph.begin(), ph.end()).count("cluster.disagg.planner") == 0);
}
