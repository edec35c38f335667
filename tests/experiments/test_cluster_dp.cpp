// DP/EP groups in an experiment's cluster: (experiments/spec/cluster_spec.h, run.h): the keys,
// their bounds and errors, the checks against the profile, the resolved spec, and byte-identical
// outputs for any number of jobs.
#include <doctest/doctest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "core/input_error.h"
#include "experiments/run/run.h"
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
const char* kDpMinimal = "trace: {from: jsonl, path: t.jsonl}\nprofile: p.yaml\npolicy: swap\n";

std::string dp_moe_profile() {
  return test::data_dir() + "/profile-tables-small-moe.yaml";
}

// 40 generated sessions at 20/s on the tiny MoE profile, with `cluster` appended.
std::string dp_run_spec(const std::string& cluster) {
  return "name: dp\ntrace: {from: generator, sessions: 40, max_context: 64}\n"
         "arrival: {process: poisson, rate: 20}\nprofile: " +
         dp_moe_profile() +
         "\nengine: {gpu_blocks: 400, cpu_blocks: 0, max_num_batched_tokens: 256}\n"
         "policy: discard\n" +
         cluster;
}

}  // namespace

TEST_CASE("dp, ep, ep_overlap and expert_skew on a group: count x dp engine cores") {
  auto e = parse(std::string(kDpMinimal) +
                 "cluster:\n  replicas:\n    - {count: 2, dp: 4, ep: true, ep_overlap: 0.25, "
                 "expert_skew: 1.5}\n    - {count: 1}\n  router: dp-lb\n");
  REQUIRE(e.cluster.groups.size() == 2);
  const auto& g = e.cluster.groups[0];
  CHECK(g.par.dp == 4);
  CHECK(g.par.ep);
  CHECK(g.par.ep_overlap == 0.25);
  CHECK(g.par.expert_skew == 1.5);
  CHECK(e.cluster.groups[1].par.dp == 1);
  CHECK_FALSE(e.cluster.groups[1].parallel());
  CHECK(e.cluster.replicas() == 9);  // 2 groups of 4 cores, and one replica
  // The resolved spec records the keys and the links the all-to-all runs over.
  const YAML::Node r = exp::resolved_cluster(e.cluster);
  CHECK(r["replicas"][0]["dp"].as<int>() == 4);
  CHECK(r["replicas"][0]["ep"].as<bool>());
  CHECK(r["replicas"][0]["expert_skew"].as<double>() == 1.5);
  CHECK_FALSE(r["replicas"][1]["dp"]);
  CHECK(r["links"]["replicas_per_node"].as<int>() == 8);
}

TEST_CASE("every dp/ep error names the file, line and key") {
  const std::string m = std::string(kDpMinimal) + "cluster: {replicas: [{count: 1, ";
  CHECK(error_of(m + "dp: 0}]}\n") == "e.yaml:4: cluster.replicas[0].dp: must be >= 1");
  CHECK(error_of(m + "dp: 2000}]}\n") == "e.yaml:4: cluster.replicas[0].dp: must be <= 1024");
  CHECK(error_of(m + "dp: two}]}\n") ==
        "e.yaml:4: cluster.replicas[0].dp: expected an integer, got 'two'");
  CHECK(error_of(m + "ep: maybe}]}\n") ==
        "e.yaml:4: cluster.replicas[0].ep: expected true or false, got 'maybe'");
  CHECK(error_of(m + "ep_overlap: 1.5}]}\n") ==
        "e.yaml:4: cluster.replicas[0].ep_overlap: must be <= 1");
  CHECK(error_of(m + "expert_skew: 0.5}]}\n") ==
        "e.yaml:4: cluster.replicas[0].expert_skew: must be >= 1");
  CHECK(error_of(std::string(kDpMinimal) + "cluster: {replicas: [{count: 2000, dp: 1000}]}\n") ==
        "e.yaml:4: cluster.replicas[0].dp: count x dp must be <= 65536 engine cores (each engine "
        "core holds ~60 KB: ~4 GB at the limit)");
  CHECK(error_of(std::string(kDpMinimal) +
                 "cluster: {replicas: [{count: 1, dp: 2, role: prefill}, {count: 1, role: "
                 "decode}]}\n") ==
        "e.yaml:4: cluster.replicas[0].dp: DP/EP groups in a disaggregated fleet are not "
        "simulated; give roles to groups without dp and ep");
}

TEST_CASE("a group's dp and ep are checked against its profile, naming the key") {
  auto e = parse(std::string(kDpMinimal) + "cluster: {replicas: [{count: 1, dp: 3, ep: true}]}\n");
  const sim::Profile moe = sim::load_profile(dp_moe_profile());
  // 8 experts over 3 ranks.
  CHECK_THROWS_WITH_AS(exp::check_parallel(e, 0, moe),
                       "e.yaml: cluster.replicas[0].dp: 8 experts do not divide over dp 3 x tp 1 "
                       "= 3 EP ranks",
                       InputError);
  e.cluster.groups[0].par.dp = 4;
  CHECK_NOTHROW(exp::check_parallel(e, 0, moe));
  // A dense model: ep is an error, dp alone gives independent cores.
  const sim::Profile dense = sim::load_profile(test::data_dir() + "/profile-tables-small.yaml");
  CHECK_THROWS_WITH_AS(exp::check_parallel(e, 0, dense),
                       doctest::Contains("cluster.replicas[0].ep: the profile's model tiny is "
                                         "dense; expert parallelism needs a MoE model"),
                       InputError);
  e.cluster.groups[0].par.ep = false;
  CHECK_NOTHROW(exp::check_parallel(e, 0, dense));
  CHECK(exp::dp_spec(e.cluster.groups[0], dense, {}).group == -1);
  const auto dp = exp::dp_spec(e.cluster.groups[0], moe, {});
  CHECK(dp.group == 0);
  CHECK(dp.shape.cores == 4);
  CHECK(dp.shape.gpus_per_domain == 8);                    // 8 replicas per node at tp 1
  CHECK(dp.shape.intra.latency_us == doctest::Approx(3));  // NVLink's default
}

TEST_CASE("DP groups: byte-identical outputs for any number of jobs, lockstep in the summary" *
          doctest::test_suite("threads")) {
  auto d = test::scratch("cluster-dp-jobs");
  const std::string cl = "cluster:\n  replicas: [{count: 2, dp: 2, ep: true}]\n  router: dp-lb\n";
  auto spec = test::write_file(d / "s.yaml",
                               dp_run_spec(cl + "sweep:\n  seed: [1, 2]\n  cluster.router: [dp-lb, "
                                                "round-robin]\n"));
  auto s = exp::load_sweep(spec, {});
  exp::SweepOptions one, two;
  one.jobs = 1;
  two.jobs = 2;
  const auto a = exp::run_sweep(s, one);
  const auto b = exp::run_sweep(s, two);
  CHECK(a.csv() == b.csv());
  REQUIRE(a.rows.size() == 4);
  auto run = test::write_file(d / "r.yaml", dp_run_spec(cl));
  REQUIRE(test::run_bin("isim", "run " + run + " --out " + (d / "x").string()) == 0);
  REQUIRE(test::run_bin("isim", "run " + run + " --out " + (d / "y").string()) == 0);
  for (const char* f : {"summary.json", "sessions.csv", "timeseries.csv", "replicas.csv"})
    CHECK(test::slurp(d / "x/discard" / f) == test::slurp(d / "y/discard" / f));
  const auto j = nlohmann::json::parse(test::slurp(d / "x/discard/summary.json"));
  const auto& ls = j["cluster"]["lockstep"];
  CHECK(ls["groups"] == 2);
  CHECK(ls["core_steps"].get<int64_t>() == 2 * ls["steps"].get<int64_t>());
  CHECK(j["cluster"]["replicas"] == 4);
  CHECK(j["cluster"]["per_replica"].size() == 4);
}

TEST_CASE("a DP/EP group's profile spreads the routed experts over dp x tp GPUs") {
  auto e = parse(std::string(kDpMinimal) + "cluster: {replicas: [{count: 1, dp: 4, ep: true}]}\n");
  const sim::Profile moe = sim::load_profile(dp_moe_profile());
  CHECK(moe.model.ep == 1);
  const sim::Profile g = exp::group_profile(e.cluster.groups[0], moe, "here");
  CHECK(g.model.ep == 4);
  // 2 layers x 8 experts x 3 x 64 x 16 = 49,152 routed parameters of the 1e6, fp16: the GPU
  // holds (1e6 - 49,152) x 2 + 49,152 x 2 / 4 = 1,926,272 bytes.
  CHECK(g.model.weight_bytes_per_gpu() == doctest::Approx(1'926'272));
  CHECK(moe.model.weight_bytes_per_gpu() == doctest::Approx(2'000'000));
  // Without ep the experts are split 4 ways all the same (vLLM's MoE over DP x TP).
  e.cluster.groups[0].par.ep = false;
  CHECK(exp::group_profile(e.cluster.groups[0], moe, "here").model.ep == 4);
  // dp 1 without ep, or a profile made for another ep.
  e.cluster.groups[0].par.dp = 1;
  CHECK(exp::group_profile(e.cluster.groups[0], moe, "here").model.ep == 1);
  e.cluster.groups[0].par = {2, true, 0, 1};
  sim::Profile made = moe;
  made.model.ep = 8;
  CHECK_THROWS_WITH_AS(exp::group_profile(e.cluster.groups[0], made, "e.yaml: x.ep"),
                       "e.yaml: x.ep: the profile was made for ep 8 (model.ep), but the group "
                       "spreads the experts over dp 2 x tp 1 = 2 ranks; give a profile without "
                       "model.ep or with ep 2",
                       InputError);
}
