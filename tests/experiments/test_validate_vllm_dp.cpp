// isim validate --against vllm on runs with data_parallel_size > 1 (experiments/validate/
// validate_vllm.h, VllmLayout): the synthetic DP 2 x TP 1 expert-parallel run of
// tests/data/vllm-run-dp2-moe replayed on 2 engine cores in lockstep, every latency worked out
// by hand; a dense DP 2 run on 2 independent cores; and the errors that name meta.json's key.
//
// The MoE profile (tests/data/profile-tables-moe-small.yaml): 2 layers, dense(1) = 10 and
// dense(4) = 16 us, prefill attention(4, kv 0) = 4, decode attention(1, kv 4) = 1 + 2 x 4/100 =
// 1.08, lm_head(1) = 5, overhead 40; 8 experts, 2 a token, 16 wide (3 x 64 x 16 = 3072
// parameters, 6144 B in fp16); the roofline reaches 5e8 FLOP/s and 5e8 B/s. Links: NVLink 450
// GB/s, 3 us; 64 x 2 = 128 B a token.
//
// A group step (cluster/lockstep.h) = the slowest core's time without MoE + 2 layers x the
// group's MoE layer (sim/ep_cost.h). Its MoE layer over 2 EP ranks of 4 experts, T tokens in
// all, the busiest core sending t:
//   load L = T + sqrt(T x 2 x 1/2 x 1/2 x 6/7) / sqrt(pi) (mean T x 2 / 2, z for 2 ranks
//   1/sqrt(pi)); active A = 4 (1 - (3/4)^L); expert time max(A x 6144 B, 2 x 3072 x L FLOP) /
//   5e8; dispatch + combine 2 x (3 + t x 128 / 2 / 450e3) us.
//   T 5, t 4: L = 5.825889, FLOPs bound: 71.588524 us, comm 6.001138 us -> 77.589662 us.
//   T 2, t 1: L = 2.522338, FLOPs bound: 30.994490 us, comm 6.000284 us -> 36.994774 us.
// Without MoE: a 4-token prefill 2 x (16 + 4) + 5 + 40 = 85 us; a decode 2 x (10 + 1.08) + 45 =
// 67.16; vLLM's dummy batch (one token, no logits) 2 x 10 + 40 = 60.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "experiments/validate/validate_vllm.h"
#include "tests/cli_helpers.h"
#include "tests/input_error_text.h"
#include "tests/test_paths.h"

using namespace isim;
namespace fs = std::filesystem;
using test::error_of_call;

// Named, not anonymous: the unity build may join this file with the other validate tests.
namespace against_dp {

const std::string kDpRun = test::data_dir() + "/vllm-run-dp2-moe";
const std::string kMoeProfile = test::data_dir() + "/profile-tables-moe-small.yaml";

// The run folder with its meta.json edited; returns the folder.
fs::path edited_run(const std::string& name, const std::function<void(nlohmann::json&)>& edit) {
  const fs::path run = test::scratch(name) / "run";
  fs::create_directories(run);
  nlohmann::json m = nlohmann::json::parse(test::slurp(kDpRun + "/meta.json"));
  edit(m);
  test::write_file(run / "meta.json", m.dump(2));
  test::write_file(run / "requests.jsonl", test::slurp(kDpRun + "/requests.jsonl"));
  return run;
}

int validate(const std::string& run, const std::string& profile, const fs::path& out,
             std::string* so, std::string* se = nullptr, const std::string& extra = "") {
  return test::run_bin("isim",
                       "validate --against vllm " + run + " --profile " + profile + " --out " +
                           out.string() + " -p engine.activation_reserve_gib=0" + extra,
                       so, se);
}

// against_requests.csv: id -> {sim_ttft_s, sim_tpot_s, sim_e2e_s}.
std::map<std::string, std::vector<double>> sim_requests(const fs::path& out) {
  std::istringstream in(test::slurp(out / "against_requests.csv"));
  std::map<std::string, std::vector<double>> rows;
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string x; std::getline(ss, x, ',');) f.push_back(x);
    REQUIRE(f.size() == 8);
    rows[f[0]] = {std::stod(f[3]), std::stod(f[5]), std::stod(f[7])};
  }
  return rows;
}

constexpr double kMoe5 = 77.589662;  // us, one MoE layer of the group at T 5, t 4
constexpr double kMoe2 = 36.994774;  // at T 2, t 1

}  // namespace against_dp

using namespace against_dp;

TEST_CASE("against vllm, DP 2 x TP 1 expert parallel: 2 engine cores in lockstep, by hand") {
  const fs::path out = test::scratch("against-dp2-moe") / "out";
  std::string so, se;
  REQUIRE(validate(kDpRun, kMoeProfile, out, &so, &se) == 0);
  CAPTURE(so);
  CAPTURE(se);
  CHECK(so.find("\nlayout: DP 2 x TP 1, expert parallel: 2 engine cores in lockstep behind "
                "dp-lb, the experts over 2 EP ranks (each core with the settings above and its "
                "own KV cache)\n") != std::string::npos);
  CHECK(so.find("\nlockstep: 5 group steps, 4 of 10 core-steps ran vLLM's dummy batch; ") !=
        std::string::npos);
  CHECK(so.find("\nassumed: each MoE layer's dispatch and combine runs over the cluster's links: "
                "8 cores x tp 1 GPUs per NVLink domain at 450 GB/s and 3 us a transfer") !=
        std::string::npos);
  CHECK(so.find("  (both summed over the 2 engine cores, as vLLM's front end sums its cores' "
                "counts: the simulator's ") != std::string::npos);
  // Step 1 (t = 0): core 0 prefills bench-0, core 1 runs the dummy batch: 85 + 2 x kMoe5.
  // bench-1 arrives at 100 us; dp-lb sends it to core 1 (core 0 runs 1 request, core 1 none).
  // Step 2: core 0 decodes bench-0 (67.16), core 1 prefills bench-1 (85): T 5, t 4 again.
  // Step 3: core 0 has nothing (dummy, 60), core 1 decodes bench-1: 67.16 + 2 x kMoe2.
  // bench-2 (at 10 s) alone: steps 4 and 5 as 1 and 3, the dummy on core 1.
  const double prefill = 85 + 2 * kMoe5, decode = 67.16 + 2 * kMoe2;  // us
  const auto req = sim_requests(out);
  REQUIRE(req.size() == 3);
  CHECK(req.at("bench-0")[0] * 1e6 == doctest::Approx(prefill));
  CHECK(req.at("bench-0")[1] * 1e6 == doctest::Approx(prefill));
  CHECK(req.at("bench-0")[2] * 1e6 == doctest::Approx(2 * prefill));
  CHECK(req.at("bench-1")[0] * 1e6 == doctest::Approx(2 * prefill - 100));
  CHECK(req.at("bench-1")[1] * 1e6 == doctest::Approx(decode));
  CHECK(req.at("bench-1")[2] * 1e6 == doctest::Approx(2 * prefill + decode - 100));
  CHECK(req.at("bench-2")[0] * 1e6 == doctest::Approx(prefill));
  CHECK(req.at("bench-2")[1] * 1e6 == doctest::Approx(decode));

  const auto j = nlohmann::json::parse(test::slurp(out / "against.json"));
  const auto& l = j["layout"];
  CHECK(l["line"] ==
        "DP 2 x TP 1, expert parallel: 2 engine cores in lockstep behind dp-lb, the experts "
        "over 2 EP ranks");
  CHECK(l["data_parallel_size"] == 2);
  CHECK(l["expert_parallel"] == true);
  CHECK(l["lockstep"] == true);
  CHECK(l["router"] == "dp-lb");
  CHECK(l["engine_cores"] == 2);
  CHECK(l["steps"] == 5);
  CHECK(l["core_steps"] == 10);
  CHECK(l["dummy_core_steps"] == 4);
  // Waits: step 1 85 - 60, step 2 85 - 67.16, step 3 67.16 - 60, steps 4 and 5 as 1 and 3.
  CHECK(l["core_wait_s"].get<double>() * 1e6 == doctest::Approx(2 * 25 + (85 - 67.16) + 2 * 7.16));
  CHECK(l["moe_s"].get<double>() * 1e6 == doctest::Approx(3 * 2 * kMoe5 + 2 * 2 * kMoe2));
  // vLLM's 200 blocks are its 2 cores' sum: the second replay gives each core 100.
  CHECK(j["kv_cache"]["real_gpu_blocks"] == 200);
  CHECK(j["kv_cache"]["sim_gpu_blocks"] == 2 * l["sim_gpu_blocks_per_core"].get<int64_t>());
  REQUIRE(j["replays"].size() == 2);
  CHECK(j["replays"][1]["gpu_blocks"] == 200);
  CHECK(j["replays"][1]["error_kind"] == "latency");
  CHECK(j["summary"].get<std::string>().starts_with("latency error (at vLLM's 200 blocks): "));
  const auto s = nlohmann::json::parse(test::slurp(out / "at-vllm-blocks" / "summary.json"));
  CHECK(s["gpu_blocks"] == 200);
  CHECK(s["cluster"]["lockstep"]["groups"] == 1);
  CHECK(s["cluster"]["replicas"] == 2);
}

TEST_CASE("against vllm, the same run at DP 1 x TP 1: one engine, as before") {
  // Expert parallel over one rank has no effect (one GPU holds every expert): said so.
  const fs::path run = edited_run("against-dp1-moe-run", [](nlohmann::json& m) {
    m["engine_kwargs"]["data_parallel_size"] = 1;
  });
  const fs::path out = run.parent_path() / "out";
  std::string so;
  REQUIRE(validate(run.string(), kMoeProfile, out, &so) == 0);
  CAPTURE(so);
  CHECK(so.find("\nassumed: engine_kwargs.enable_expert_parallel true has no effect: "
                "data_parallel_size 1 x tensor_parallel_size 1 is one rank, which holds every "
                "expert\n") != std::string::npos);
  CHECK(so.find("\nlayout: ") == std::string::npos);
  CHECK(so.find("\nlockstep: ") == std::string::npos);
  const auto j = nlohmann::json::parse(test::slurp(out / "against.json"));
  CHECK_FALSE(j.contains("layout"));
  CHECK_FALSE(nlohmann::json::parse(test::slurp(out / "summary.json")).contains("cluster"));
  // bench-0 alone on the one engine: 85 us + 2 layers of the whole MoE at 4 tokens, 8 experts:
  // A = 8 (1 - (3/4)^4) = 5.46875, FLOPs 2 x 3072 x 4 x 2 / 5e8 = 98.304 us (bytes 67.2).
  CHECK(sim_requests(out).at("bench-0")[0] * 1e6 == doctest::Approx(85 + 2 * 98.304));
}

TEST_CASE("against vllm, dense DP 2: 2 independent engine cores behind dp-lb, by hand") {
  // The linear profile (T(x) = 2 + 0.5 x ms, 4-token blocks): a at 0 (4 in, 2 out), b at 1 ms
  // (8 in, 2 out). dp-lb sends b to core 1 (core 0 runs a): a prefills in 4 ms and decodes in
  // 2.5; b prefills in 6 ms from 1 ms and decodes in 2.5, nobody waiting for anybody. One engine
  // would batch b's prefill with a's decode at 4 ms: 6.5 ms, b's first token at 10.5 ms.
  const fs::path dir = test::scratch("against-dp2-dense"), run = dir / "run";
  fs::create_directories(run);
  nlohmann::json m = nlohmann::json::parse(test::slurp(kDpRun + "/meta.json"));
  m["model"] = "tiny";
  m["engine_kwargs"]["enable_expert_parallel"] = false;
  test::write_file(run / "meta.json", m.dump(2));
  test::write_file(
      run / "requests.jsonl",
      R"({"request_id": "a", "input_toks": 4, "output_toks": 2, "queued_ts": 100, )"
      R"("scheduled_ts": 100, "first_token_ts": 100.004, "last_token_ts": 100.0065})"
      "\n"
      R"({"request_id": "b", "input_toks": 8, "output_toks": 2, "queued_ts": 100.001, )"
      R"("scheduled_ts": 100.001, "first_token_ts": 100.007, "last_token_ts": 100.0095})"
      "\n");
  const fs::path out = dir / "out";
  std::string so, se;
  REQUIRE(validate(run.string(), test::data_dir() + "/profile-linear-small.yaml", out, &so, &se) ==
          0);
  CAPTURE(so);
  CAPTURE(se);
  CHECK(so.find("\nlayout: DP 2 x TP 1, dense model: 2 independent engine cores behind dp-lb "
                "(each core with the settings above and its own KV cache)\n") != std::string::npos);
  CHECK(so.find("\nlockstep: ") == std::string::npos);
  CHECK(so.find("dispatch and combine") == std::string::npos);
  const auto req = sim_requests(out);
  CHECK(req.at("a")[0] == doctest::Approx(0.004));
  CHECK(req.at("a")[2] == doctest::Approx(0.0065));
  CHECK(req.at("b")[0] == doctest::Approx(0.006));
  CHECK(req.at("b")[1] == doctest::Approx(0.0025));
  CHECK(req.at("b")[2] == doctest::Approx(0.0085));
  const auto j = nlohmann::json::parse(test::slurp(out / "against.json"));
  CHECK(j["layout"]["lockstep"] == false);
  CHECK(j["layout"]["engine_cores"] == 2);
  CHECK_FALSE(j["layout"].contains("steps"));
  const auto s = nlohmann::json::parse(test::slurp(out / "summary.json"));
  CHECK_FALSE(s["cluster"].contains("lockstep"));
  CHECK(s["cluster"]["router"] == "dp-lb");
  REQUIRE(s["cluster"]["per_replica"].size() == 2);
  CHECK(s["cluster"]["per_replica"][0]["admitted"] == 1);
  CHECK(s["cluster"]["per_replica"][1]["admitted"] == 1);
}

TEST_CASE("against vllm, DP: vLLM's block count is its cores' sum") {
  auto parsed = [](const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json m = nlohmann::json::parse(test::slurp(kDpRun + "/meta.json"));
    edit(m);
    return exp::parse_vllm_meta(m.dump(), "r/meta.json");
  };
  CHECK(parsed([](auto&) {}).num_gpu_blocks == 200);  // kv_cache: the front end's sum
  // The override is each core's: 2 x 70.
  const exp::VllmMeta o = parsed([](auto& m) {
    m.erase("kv_cache");
    m["engine_kwargs"]["block_size"] = 4;
    m["engine_kwargs"]["num_gpu_blocks_override"] = 70;
  });
  CHECK(o.num_gpu_blocks == 140);
  CHECK(std::find(o.assumptions.begin(), o.assumptions.end(),
                  "engine_kwargs.num_gpu_blocks_override 70 is each engine core's count: vLLM's "
                  "count is 140 over the 2 cores") != o.assumptions.end());
  // An odd sum: each core gets the share rounded down, and the replay says so.
  const fs::path run =
      edited_run("against-dp2-odd", [](auto& m) { m["kv_cache"]["num_gpu_blocks"] = 201; });
  std::string so;
  REQUIRE(validate(run.string(), kMoeProfile, run.parent_path() / "out", &so) == 0);
  CAPTURE(so);
  CHECK(so.find("\nassumed: kv_cache.num_gpu_blocks: vLLM's 201 GPU blocks over 2 engine cores: "
                "the replay at vLLM's count gives each core 100 (200 in all)\n") !=
        std::string::npos);
  CHECK(so.find("summary: latency error (at vLLM's 201 blocks): ") != std::string::npos);
}

TEST_CASE("against vllm, DP: what the replay cannot simulate names meta.json's key") {
  auto err = [](const std::function<void(nlohmann::json&)>& edit,
                const std::function<void(sim::Profile&)>& profile = {}) {
    nlohmann::json m = nlohmann::json::parse(test::slurp(kDpRun + "/meta.json"));
    edit(m);
    return error_of_call([&] {
      exp::VllmMeta meta = exp::parse_vllm_meta(m.dump(), "r/meta.json");
      sim::Profile p = sim::load_profile(kMoeProfile);
      if (profile) profile(p);
      exp::check_vllm_profile(meta, p, "p.yaml");
    });
  };
  CHECK(err([](auto&) {}) == "(no error)");
  CHECK(err([](auto& m) { m["engine_kwargs"]["data_parallel_size"] = 2000; }) ==
        "r/meta.json: engine_kwargs.data_parallel_size: 2000: at most 1024 engine cores are "
        "simulated");
  CHECK(err([](auto& m) { m["engine_kwargs"]["data_parallel_size"] = 3; }) ==
        "r/meta.json: engine_kwargs.enable_expert_parallel: true: tiny-moe's 8 experts do not "
        "divide over data_parallel_size 3 x tensor_parallel_size 1 = 3 EP ranks");
  // Without expert parallel the experts are split, not placed: 3 cores are fine.
  CHECK(err([](auto& m) {
          m["engine_kwargs"]["data_parallel_size"] = 3;
          m["engine_kwargs"]["enable_expert_parallel"] = false;
        }) == "(no error)");
  CHECK(err([](auto&) {}, [](sim::Profile& p) { p.tables.moe_roofline = {}; }) ==
        "r/meta.json: engine_kwargs.data_parallel_size: 2: the engine cores of MoE model "
        "tiny-moe step together through every MoE layer, whose cost needs a tables profile with "
        "forward.tables.moe_us or moe_roofline; the profile p.yaml has neither");
  // One core of tp 1: expert parallel has no effect, the one engine runs the MoE layer itself.
  CHECK(err([](auto& m) { m["engine_kwargs"]["data_parallel_size"] = 1; },
            [](sim::Profile& p) { p.tables.moe_roofline = {}; }) == "(no error)");
  // One core of tp 2 with expert parallel: its 2 ranks hold 4 experts each.
  CHECK(err(
            [](auto& m) {
              m["engine_kwargs"]["data_parallel_size"] = 1;
              m["engine_kwargs"]["tensor_parallel_size"] = 2;
            },
            [](sim::Profile& p) {
              p.model.tp = 2;
              p.tables.moe_roofline = {};
            }) ==
        "r/meta.json: engine_kwargs.enable_expert_parallel: true: the engine cores of MoE model "
        "tiny-moe step together through every MoE layer, whose cost needs a tables profile with "
        "forward.tables.moe_us or moe_roofline; the profile p.yaml has neither");
  CHECK(err([](auto& m) { m["engine_kwargs"]["pipeline_parallel_size"] = 2; })
            .starts_with("r/meta.json: engine_kwargs.pipeline_parallel_size: 2: pipeline "
                         "parallelism is not simulated yet"));
  // The verb exits 2 with the same line.
  const fs::path run =
      edited_run("against-dp3-ep", [](auto& m) { m["engine_kwargs"]["data_parallel_size"] = 3; });
  std::string se;
  CHECK(validate(run.string(), kMoeProfile, run.parent_path() / "out", nullptr, &se) == 2);
  CHECK(se.starts_with("isim: error: " + (run / "meta.json").string() +
                       ": engine_kwargs.enable_expert_parallel: true: tiny-moe's 8 experts"));
}

TEST_CASE("against vllm, DP: the experiment is one group of dp cores behind dp-lb") {
  exp::VllmMeta meta = exp::parse_vllm_meta(test::slurp(kDpRun + "/meta.json"), "m.json");
  exp::AgainstOptions o;
  o.profile = kMoeProfile;
  o.overrides = {"engine.gpu_blocks=77"};
  const auto one = exp::vllm_experiment(meta, o, "/t/trace.jsonl");
  CHECK_FALSE(one.cluster.given);
  exp::VllmLayout l;
  l.dp = 2;
  l.moe = true;
  l.ep = true;
  const auto e = exp::vllm_experiment(meta, o, "/t/trace.jsonl", l);
  REQUIRE(e.cluster.given);
  REQUIRE(e.cluster.groups.size() == 1);
  const auto& g = e.cluster.groups[0];
  CHECK(g.count == 1);
  CHECK(g.par.dp == 2);
  CHECK(g.par.ep);
  CHECK(e.cluster.router == "dp-lb");
  // Every core has the run's settings, then the overrides.
  CHECK(g.engine.max_num_seqs == 8);
  CHECK(g.engine.max_num_batched_tokens == 64);
  CHECK(g.engine.gpu_blocks == 77);
  CHECK(e.cluster.replicas() == 2);
}
