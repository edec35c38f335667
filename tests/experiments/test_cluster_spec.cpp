// The cluster: section of an experiment (experiments/spec/cluster_spec.h): parsing, -p overrides,
// every error a user can hit, a cluster of one giving the single-replica results, the fleet
// outputs, and determinism for any number of jobs.
#include <doctest/doctest.h>

#include <filesystem>
#include <map>

#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include "core/input_error.h"
#include "experiments/run/outputs.h"
#include "experiments/run/run.h"
#include "experiments/spec/engine_spec.h"
#include "experiments/spec/experiment.h"
#include "experiments/sweep/sweep.h"
#include "tests/cli_helpers.h"
#include "tests/spec_helpers.h"
#include "tests/test_paths.h"

using namespace isim;
namespace fs = std::filesystem;

namespace {

using test::error_of;
using test::parse;
// Lines 1-3; a cluster: section starts on line 4.
const char* kMinimal = "trace: {from: jsonl, path: t.jsonl}\nprofile: p.yaml\npolicy: swap\n";

std::string profile() {
  return test::source_dir() + "/calibrate/profiles/a100-80g-gptj-6b.infercept.yaml";
}
// 60 generated sessions at 2/s on GPT-J-6B / A100, with `extra` appended.
std::string run_spec(const std::string& extra) {
  return "name: c\ntrace: {from: generator, sessions: 60}\narrival: {process: poisson, rate: 2}\n"
         "profile: " +
         profile() + "\npolicy: preserve\n" + extra;
}

bool have_shared_data() {
  return fs::exists(test::shared_data() + "/infercept-mix/merged_exp_uniform.json");
}

}  // namespace

TEST_CASE("cluster: replicas N and a router; a spec without it is a cluster of one") {
  auto none = parse(kMinimal);
  CHECK_FALSE(none.cluster.given);
  CHECK(none.cluster.replicas() == 1);
  auto e = parse(std::string(kMinimal) + "cluster: {replicas: 4, router: kv-aware}\n");
  CHECK(e.cluster.given);
  REQUIRE(e.cluster.groups.size() == 1);
  CHECK(e.cluster.groups[0].count == 4);
  CHECK(e.cluster.replicas() == 4);
  CHECK(e.cluster.router == "kv-aware");
  auto d = parse(std::string(kMinimal) + "cluster: {replicas: 2}\n");
  CHECK(d.cluster.router == "session-affinity");  // the default
  // The resolved spec parses back to the same cluster.
  auto again = exp::parse_experiment(e.resolved(), "r.yaml", "/elsewhere");
  CHECK(again.cluster.given);
  CHECK(again.cluster.replicas() == 4);
  CHECK(again.cluster.router == "kv-aware");
}

TEST_CASE("heterogeneous groups override the experiment's engine key by key") {
  auto e =
      parse(std::string(kMinimal) +
            "engine: {max_num_seqs: 64, max_num_batched_tokens: 1024}\n"
            "cluster:\n"
            "  replicas:\n"
            "    - {name: big, count: 2, profile: big.yaml, tp: 2, engine: {max_num_seqs: 128}}\n"
            "    - {count: 3}\n"
            "  router: {name: power-of-two, seed: 9}\n");
  REQUIRE(e.cluster.groups.size() == 2);
  const auto& big = e.cluster.groups[0];
  CHECK(big.name == "big");
  CHECK(big.count == 2);
  CHECK(big.profile == "/base/big.yaml");
  CHECK(big.tp == 2);
  CHECK(big.engine.max_num_seqs == 128);
  CHECK(big.engine.max_num_batched_tokens == 1024);  // from the experiment's engine
  const auto& rest = e.cluster.groups[1];
  CHECK(rest.name == "group1");
  CHECK(rest.engine.max_num_seqs == 64);
  CHECK(e.cluster.replicas() == 5);
  CHECK(e.cluster.router == "power-of-two");
  CHECK(e.cluster.router_params.values.at("seed") == "9");
  auto again = exp::parse_experiment(e.resolved(), "r.yaml", "/elsewhere");
  REQUIRE(again.cluster.groups.size() == 2);
  CHECK(again.cluster.groups[0].engine.max_num_seqs == 128);
  CHECK(again.cluster.groups[1].engine.max_num_seqs == 64);
  CHECK(again.cluster.router_params.values.at("seed") == "9");
}

TEST_CASE("-p cluster.replicas and -p cluster.router work from the command line") {
  YAML::Node y = YAML::Load(kMinimal);
  exp::apply_override(y, "cluster.replicas=64");
  exp::apply_override(y, "cluster.router=kv-aware");
  auto e = exp::parse_experiment(y, "e.yaml", ".");
  CHECK(e.cluster.replicas() == 64);
  CHECK(e.cluster.router == "kv-aware");
}

TEST_CASE("every cluster error names the file, line and key") {
  const std::string m = kMinimal;
  CHECK(error_of(m + "cluster: {replicas: 0}\n") == "e.yaml:4: cluster.replicas: must be >= 1");
  CHECK(error_of(m + "cluster: {replicas: many}\n") ==
        "e.yaml:4: cluster.replicas: expected an integer >= 1 or a list of replica groups, got "
        "'many'");
  CHECK(error_of(m + "cluster: {replicas: []}\n") ==
        "e.yaml:4: cluster.replicas: expected an integer >= 1 or a non-empty list of replica "
        "groups");
  CHECK(error_of(m + "cluster: {replica: 2}\n") ==
        "e.yaml:4: cluster.replica: unknown key; valid keys: replicas, router, roles, links, "
        "split, switching, planner, kv_tiers");
  CHECK(error_of(m + "cluster: 4\n") ==
        "e.yaml:4: cluster: expected a map with keys replicas, router, roles, links, split, "
        "switching, planner, kv_tiers, got '4'");
  CHECK(error_of(m + "cluster: {router: random}\n") ==
        "e.yaml:4: cluster.router: unknown router 'random'; valid: dp-lb, kv-aware, least-loaded, "
        "power-of-two, round-robin, session-affinity");
  CHECK(error_of(m + "cluster: {router: {name: kv-aware, temperature: 1}}\n") ==
        "e.yaml:4: cluster.router.temperature: unknown parameter; router 'kv-aware' takes "
        "overlap_weight");
  CHECK(error_of(m + "cluster: {router: {name: power-of-two, seed: x}}\n") ==
        "e.yaml:4: cluster.router.seed: expected a non-negative integer, got 'x'");
  CHECK(error_of(m + "cluster: {router: {seed: 1}}\n") ==
        "e.yaml:4: cluster.router.name: missing router name");
  CHECK(error_of(m + "cluster: {replicas: [{count: 0}]}\n") ==
        "e.yaml:4: cluster.replicas[0].count: must be >= 1");
  CHECK(error_of(m + "cluster: {replicas: [{name: a}]}\n") ==
        "e.yaml:4: cluster.replicas[0].count: missing (expected an integer >= 1)");
  CHECK(error_of(m + "cluster: {replicas: [{count: 1, gpus: 2}]}\n") ==
        "e.yaml:4: cluster.replicas[0].gpus: unknown key; valid keys: name, count, profile, tp, "
        "engine, role, dp, ep, ep_overlap, expert_skew");
  CHECK(error_of(m + "cluster: {replicas: [{count: 1, tp: 0}]}\n") ==
        "e.yaml:4: cluster.replicas[0].tp: must be >= 1");
  CHECK(error_of(m + "cluster: {replicas: [{count: 1, engine: {max_num_seqs: 0}}]}\n") ==
        "e.yaml:4: cluster.replicas[0].engine.max_num_seqs: must be > 0");
  CHECK(error_of(m + "cluster: {replicas: [{count: 1, engine: {seqs: 2}}]}\n") ==
        "e.yaml:4: cluster.replicas[0].engine.seqs: unknown key; valid keys: scheduler, "
        "max_num_seqs, max_num_batched_tokens, gpu_memory_utilization, activation_reserve_gib, "
        "swap_space_gib, gpu_blocks, cpu_blocks, prefix_caching, kv_capacity, "
        "long_prefill_token_threshold, max_num_partial_prefills, max_long_partial_prefills, "
        "watermark, reserve_full_isl, async_scheduling, coalesce_decode, kv_manager");
  CHECK(error_of(m + "cluster: {replicas: [{name: a, count: 1}, {name: a, count: 2}]}\n") ==
        "e.yaml:4: cluster.replicas[1].name: 'a' names two groups");
  CHECK(error_of(m + "executor: live-cpu\ncluster: {replicas: 2}\n") ==
        "e.yaml:5: cluster: live executors run on one replica only (executor live-cpu)");
}

TEST_CASE("a group's tp must be its profile's") {
  auto e = parse(std::string(kMinimal) + "cluster: {replicas: [{count: 2, tp: 4}]}\n");
  e.profile = profile();
  CHECK_THROWS_WITH_AS(exp::load_group_profiles(e, sim::load_profile(e.profile)),
                       doctest::Contains("cluster.replicas[0].tp: 4 GPUs per replica, but the "
                                         "profile "),
                       InputError);
}

TEST_CASE("cluster: {replicas: 1} gives the single-replica results, plus the fleet parts") {
  auto d = test::scratch("cluster-one");
  auto plain = test::write_file(d / "plain.yaml", run_spec(""));
  auto one = test::write_file(d / "one.yaml", run_spec("cluster: {replicas: 1}\n"));
  REQUIRE(test::run_bin("isim", "run " + plain + " --out " + (d / "p").string()) == 0);
  REQUIRE(test::run_bin("isim", "run " + one + " --out " + (d / "o").string()) == 0);
  // Without cluster: no replicas.csv and no replica columns; with it, both.
  CHECK_FALSE(fs::exists(d / "p/preserve/replicas.csv"));
  CHECK(fs::exists(d / "o/preserve/replicas.csv"));
  auto sp = nlohmann::json::parse(test::slurp(d / "p/preserve/summary.json"));
  auto so = nlohmann::json::parse(test::slurp(d / "o/preserve/summary.json"));
  CHECK_FALSE(sp.contains("cluster"));
  REQUIRE(so.contains("cluster"));
  CHECK(so["cluster"]["replicas"] == 1);
  CHECK(so["cluster"]["migrations"] == 0);
  CHECK(so["lost_kv_reuse_tokens"]["total"] == sp["recomputed_tokens"]);
  so.erase("cluster");
  so.erase("lost_kv_reuse_tokens");
  CHECK(so == sp);
  CHECK(test::slurp(d / "o/preserve/timeseries.csv") ==
        test::slurp(d / "p/preserve/timeseries.csv"));
  const auto sess = test::slurp(d / "o/preserve/sessions.csv");
  CHECK(sess.substr(0, sess.find('\n')).find(",replica_first,replica_last,migrations") !=
        std::string::npos);
}

TEST_CASE("a fleet's outputs are byte-identical run to run and for any number of jobs" *
          doctest::test_suite("threads")) {
  auto d = test::scratch("cluster-jobs");
  auto spec = test::write_file(d / "s.yaml",
                               run_spec("cluster: {replicas: 3}\n"
                                        "sweep:\n  seed: [1, 2]\n  cluster.router: [power-of-two, "
                                        "round-robin]\n"));
  auto s = exp::load_sweep(spec, {});
  exp::SweepOptions one, two;
  one.jobs = 1;
  two.jobs = 2;
  auto a = exp::run_sweep(s, one);
  auto b = exp::run_sweep(s, two);
  CHECK(a.csv() == b.csv());
  REQUIRE(a.rows.size() == 4);
  const auto& h = a.header;
  CHECK(std::find(h.begin(), h.end(), "cluster.busy_imbalance") != h.end());
  CHECK(std::find(h.begin(), h.end(), "lost_kv_reuse_tokens.migration") != h.end());
  // Two runs of the same fleet experiment write the same files.
  auto run = test::write_file(d / "r.yaml", run_spec("cluster: {replicas: 3}\n"));
  REQUIRE(test::run_bin("isim", "run " + run + " --out " + (d / "x").string()) == 0);
  REQUIRE(test::run_bin("isim", "run " + run + " --out " + (d / "y").string()) == 0);
  for (const char* f : {"summary.json", "sessions.csv", "timeseries.csv", "replicas.csv"})
    CHECK(test::slurp(d / "x/preserve" / f) == test::slurp(d / "y/preserve" / f));
}

TEST_CASE("InferCept mix, preserve, 4 replicas: session-affinity keeps the KV where it is" *
          doctest::skip(isim::test::absent(!have_shared_data()))) {
  // 400 sessions of the real mix at 4 sessions/s (1 per replica), A100-80GB / GPT-J-6B.
  auto e = exp::load_experiment(
      test::source_dir() + "/experiments/specs/quickstart.yaml",
      {"trace.draw=400", "arrival.rate=4", "policy=preserve", "cluster.replicas=4"});
  auto in = exp::prepare(e);
  e.cluster.router = "session-affinity";
  auto aff = exp::run_policy(e, in, e.policies[0], /*check_invariants=*/true);
  e.cluster.router = "round-robin";
  auto rr = exp::run_policy(e, in, e.policies[0], /*check_invariants=*/true);
  // Preserve keeps every paused session's KV and the GPUs have room: a session that returns to
  // its replica recomputes nothing; one that moves recomputes its whole context there.
  CHECK(aff.fleet.migrations == 0);
  CHECK(aff.summary.counters.recomputed_tokens == 0);
  CHECK(rr.fleet.migrations > 0);
  CHECK(rr.summary.counters.lost_reuse[static_cast<size_t>(sim::LostCause::kMigration)] ==
        rr.summary.counters.recomputed_tokens);
  CHECK(rr.summary.counters.recomputed_tokens > 0);
  MESSAGE("recomputed tokens: session-affinity " << aff.summary.counters.recomputed_tokens
                                                 << ", round-robin "
                                                 << rr.summary.counters.recomputed_tokens);
}

TEST_CASE("cluster.kv_tiers: read, defaulted, resolved for managers that use tiers, and checked") {
  const std::string m = kMinimal;
  auto parse = [](const std::string& text) {
    return exp::parse_experiment(YAML::Load(text), "e.yaml", ".");
  };
  auto e = parse(m +
                 "engine: {kv_manager: global-lru}\n"
                 "cluster: {replicas: 2, kv_tiers: {pool: {capacity_gib: 64}, "
                 "fetch_threshold_tokens: 256}}\n");
  const auto& t = e.cluster.disagg.tiers;
  CHECK(t.pool.capacity_gib == 64);
  CHECK(t.pool.link.gbps == 50);           // the default NIC
  CHECK(t.node_cpu.capacity_gib == 1024);  // the default: half of a DGX H200's 2 TB
  CHECK(t.node_cpu.link.gbps == 55);
  CHECK(t.fetch_threshold_tokens == 256);
  const YAML::Node r = e.resolved();
  CHECK(r["cluster"]["kv_tiers"]["pool"]["capacity_gib"].as<double>() == 64);
  CHECK(r["cluster"]["kv_tiers"]["node_cpu"]["latency_us"].as<double>() == doctest::Approx(10));
  CHECK(r["cluster"]["links"]["replicas_per_node"].as<int>() == 8);
  auto again = exp::parse_experiment(e.resolved(), "r.yaml", "/elsewhere");
  CHECK(again.cluster.disagg.tiers == t);
  // A fleet whose managers use no tiers records none (its outputs stay as they were).
  CHECK_FALSE(parse(m + "cluster: {replicas: 2}\n").resolved()["cluster"]["kv_tiers"]);
  CHECK(error_of(m + "cluster: {kv_tiers: {disk: {}}}\n") ==
        "e.yaml:4: cluster.kv_tiers.disk: unknown key; valid keys: node_cpu, pool, "
        "fetch_threshold_tokens");
  CHECK(error_of(m + "cluster: {kv_tiers: {pool: {capacity_gib: -1}}}\n") ==
        "e.yaml:4: cluster.kv_tiers.pool.capacity_gib: must be >= 0");
  CHECK(error_of(m + "cluster: {kv_tiers: {node_cpu: {gbps: 0}}}\n") ==
        "e.yaml:4: cluster.kv_tiers.node_cpu.gbps: must be > 0");
  CHECK(error_of(m + "cluster: {kv_tiers: {fetch_threshold_tokens: -5}}\n") ==
        "e.yaml:4: cluster.kv_tiers.fetch_threshold_tokens: must be >= 0");
}

TEST_CASE("engine.kv_manager takes parameters: {name, PARAM: VALUE}, checked by the manager") {
  const std::string m = kMinimal;
  auto e = exp::parse_experiment(
      YAML::Load(m + "engine: {kv_manager: {name: agent-aware, pool_after_s: 30}}\n"), "e.yaml",
      ".");
  CHECK(e.engine.kv_manager == "agent-aware");
  CHECK(e.engine.kv_manager_params == std::map<std::string, std::string>{{"pool_after_s", "30"}});
  const auto kv = exp::make_kv_manager(e.engine);
  bool pool_after = false;
  for (const auto& [k, v] : kv->describe())
    pool_after = pool_after || (k == "pool_after_s" && v == "30");
  CHECK(pool_after);
  const YAML::Node r = e.resolved();
  CHECK(r["engine"]["kv_manager"]["name"].as<std::string>() == "agent-aware");
  CHECK(r["engine"]["kv_manager"]["pool_after_s"].as<std::string>() == "30");
  CHECK(exp::parse_experiment(r, "r.yaml", ".").engine.kv_manager_params ==
        e.engine.kv_manager_params);
  CHECK(error_of(m + "engine: {kv_manager: {name: agent-aware, pool_after_s: soon}}\n") ==
        "e.yaml:4: engine.kv_manager.pool_after_s: expected a number, got 'soon'");
  CHECK(error_of(m + "engine: {kv_manager: {name: global-lru, depth: 2}}\n") ==
        "e.yaml:4: engine.kv_manager.depth: unknown parameter; kv manager 'global-lru' takes no "
        "parameters");
  CHECK(error_of(m + "engine: {kv_manager: {pool_after_s: 3}}\n") ==
        "e.yaml:4: engine.kv_manager.name: missing kv manager name");
}
