// isim validate --against vllm (experiments/validate/validate_vllm.h): the real side's metrics by
// hand on a 3-request fake run, the simulated side of the same run by hand on a linear profile,
// every meta.json and timeseries.csv error a user can hit, the dataset's prefix hashes, and the
// verb on the shared RTX 4090 run (structure only; accuracy is reported, never asserted).
#include <doctest/doctest.h>

#include "tests/test_paths.h"

#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/sha256.h"
#include "experiments/sweep/sweep.h"
#include "experiments/validate/validate_vllm.h"
#include "sim/scheduler.h"
#include "tests/cli_helpers.h"
#include "tests/experiments/vllm_meta_fixture.h"
#include "tests/input_error_text.h"
#include "traces/jsonl.h"

using namespace isim;
namespace fs = std::filesystem;
using test::error_of_call;

namespace {

// a: queued 100, first 101, last 105, 5 outputs -> TTFT 1, TPOT 4/4 = 1, e2e 5
// b: queued 101, first 103, last 104, 3 outputs -> TTFT 2, TPOT 1/2 = 0.5, e2e 3
// c: queued 102, first 106, last 106, 1 output  -> TTFT 4, TPOT undefined, e2e 4
const char* kRequests =
    R"({"request_id": "bench-0", "input_toks": 4, "output_toks": 5, "queued_ts": 100, )"
    R"("scheduled_ts": 100, "first_token_ts": 101, "last_token_ts": 105})"
    "\n"
    R"({"request_id": "bench-1", "input_toks": 8, "output_toks": 3, "queued_ts": 101, )"
    R"("scheduled_ts": 102, "first_token_ts": 103, "last_token_ts": 104})"
    "\n"
    R"({"request_id": "bench-2", "input_toks": 2, "output_toks": 1, "queued_ts": 102, )"
    R"("scheduled_ts": 104, "first_token_ts": 106, "last_token_ts": 106})"
    "\n";

// DIR/run/{meta.json, requests.jsonl, timeseries.csv}; returns DIR/run.
fs::path fake_run(const std::string& name,
                  const nlohmann::json& meta = isim::test::tiny_vllm_meta()) {
  const fs::path run = test::scratch(name) / "run";
  fs::create_directories(run);
  test::write_file(run / "meta.json", meta.dump(2));
  test::write_file(run / "requests.jsonl", kRequests);
  test::write_file(run / "timeseries.csv", "t,running,waiting\n1.0,2,1\n2.0,0,0\n");
  return run;
}

std::string profile() {
  return test::data_dir() + "/profile-linear-small.yaml";
}

double metric(const std::vector<std::pair<std::string, double>>& m, const std::string& name) {
  for (const auto& [k, v] : m)
    if (k == name) return v;
  FAIL("no metric " << name);
  return 0;
}

std::string scheduler() {
  return sim::scheduler_registry().contains(exp::kAgainstVllmScheduler) ? exp::kAgainstVllmScheduler
                                                                        : "chunked";
}

bool have_shared_run() {
  return fs::exists(test::shared_data() + "/llmservingsim/vllm-RTX4090-llama-3.1-8b/meta.json");
}

}  // namespace

TEST_CASE("against vllm: the real side's metrics, by hand") {
  const auto run = exp::load_vllm_run(fake_run("against-real").string());
  REQUIRE(run.requests.size() == 3);
  REQUIRE(run.has_timeseries);
  CHECK(run.timeseries.size() == 2);
  CHECK(run.timeseries[0].running == 2);
  const auto lat = exp::real_latencies(run.requests);
  CHECK(lat[1].ttft_s == 2);
  CHECK(lat[1].tpot_s == 0.5);
  CHECK(lat[2].tpot_s < 0);  // one output token: undefined
  const auto m = exp::latency_metrics(lat);
  REQUIRE(m.size() == 12);
  CHECK(metric(m, "ttft_s.mean") == doctest::Approx(7.0 / 3));
  CHECK(metric(m, "ttft_s.p50") == 2);  // nearest rank: ceil(0.5 * 3) = 2nd of 1, 2, 4
  CHECK(metric(m, "ttft_s.p90") == 4);
  CHECK(metric(m, "ttft_s.p99") == 4);
  CHECK(metric(m, "tpot_s.mean") == 0.75);
  CHECK(metric(m, "tpot_s.p50") == 0.5);
  CHECK(metric(m, "tpot_s.p99") == 1);
  CHECK(metric(m, "e2e_s.mean") == 4);
  CHECK(metric(m, "e2e_s.p50") == 4);
  CHECK(metric(m, "e2e_s.p99") == 5);
  CHECK(metric(m, "makespan_s") == 6);                 // 106 - 100
  CHECK(metric(m, "throughput_tokens_per_s") == 1.5);  // 9 tokens / 6 s
}

TEST_CASE("against vllm: sim latencies come from finished session records") {
  sim::SessionRecord a, b;
  a.id = "x";
  a.status = "finished";
  a.arrival_s = 1;
  a.finish_s = 3;
  a.ttft_s = 0.5;
  a.tpot_s = 0.25;
  a.e2e_s = 2;
  a.output_tokens = 7;
  b.id = "y";
  b.status = "skipped";
  const auto l = exp::sim_latencies({a, b});
  REQUIRE(l.size() == 1);
  CHECK(l[0].id == "x");
  CHECK(l[0].start_s == 1);
  CHECK(l[0].finish_s == 3);
  CHECK(l[0].ttft_s == 0.5);
  CHECK(l[0].tpot_s == 0.25);
  CHECK(l[0].e2e_s == 2);
  CHECK(l[0].output == 7);
  CHECK(exp::AgainstMetric{"m", 2, 3}.error() == 0.5);
  CHECK(exp::AgainstMetric{"m", 0, 0}.error() == 0);
  CHECK(exp::AgainstMetric{"m", 0, 1}.error() == std::numeric_limits<double>::infinity());
  CHECK(exp::against_csv({{"ttft_s.mean", 2, 3}}) ==
        "metric,real,sim,error\nttft_s.mean,2,3,0.5\n");
}

TEST_CASE("against vllm: the experiment takes the run's engine settings, then the overrides") {
  auto meta = exp::parse_vllm_meta(isim::test::tiny_vllm_meta().dump(), "m.json");
  meta.long_prefill_token_threshold = 32;
  meta.async_scheduling = true;
  exp::AgainstOptions o;
  o.profile = profile();
  o.scheduler = "chunked";
  o.overrides = {"engine.gpu_blocks=77"};
  const auto e = exp::vllm_experiment(meta, o, "/t/trace.jsonl");
  CHECK(e.trace.from == "jsonl");
  CHECK(e.trace.path == "/t/trace.jsonl");
  CHECK(e.arrival.process == "replay");
  REQUIRE(e.policies.size() == 1);
  CHECK(e.policies[0].name == "discard");
  CHECK(e.engine.scheduler == "chunked");
  CHECK(e.engine.max_num_seqs == 8);
  CHECK(e.engine.max_num_batched_tokens == 64);
  CHECK(e.engine.gpu_memory_utilization == 0.9);
  CHECK(e.engine.prefix_caching);
  CHECK(e.engine.long_prefill_token_threshold == 32);
  CHECK(e.engine.async_scheduling);
  CHECK(e.engine.gpu_blocks == 77);  // only from the override: never from the run
  CHECK(e.engine.timeseries_interval_s == 1);
}

TEST_CASE("against vllm: meta.json errors name the file and the key path") {
  auto err = [](const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json m = isim::test::tiny_vllm_meta();
    edit(m);
    return error_of_call([&] { exp::parse_vllm_meta(m.dump(), "r/meta.json"); });
  };
  CHECK(err([](auto&) {}) == "(no error)");
  CHECK(err([](auto& m) { m["kv_cache"].erase("block_size"); }) ==
        "r/meta.json: kv_cache.block_size: missing");
  // kv_cache is optional (test_validate_vllm_partial.cpp); one that is there is read strictly.
  CHECK(err([](auto& m) { m.erase("kv_cache"); }) == "(no error)");
  CHECK(err([](auto& m) { m["kv_cache"] = 3; }) ==
        "r/meta.json: kv_cache: expected an object (holding gpu_memory_utilization), got 3");
  CHECK(err([](auto& m) { m["engine_kwargs"]["max_num_seqs"] = "8"; }) ==
        "r/meta.json: engine_kwargs.max_num_seqs: expected an integer >= 1, got \"8\"");
  CHECK(err([](auto& m) { m["kv_cache"]["gpu_memory_utilization"] = 1.5; }) ==
        "r/meta.json: kv_cache.gpu_memory_utilization: expected a fraction in (0, 1], got 1.5");
  CHECK(err([](auto& m) { m["kv_cache"]["enable_prefix_caching"] = 1; }) ==
        "r/meta.json: kv_cache.enable_prefix_caching: expected true or false, got 1");
  CHECK(err([](auto& m) { m["kv_cache"]["num_gpu_blocks"] = nullptr; }) == "(no error)");
  CHECK(err([](auto& m) { m["resolved_config"]["scheduler_config"].erase("async_scheduling"); }) ==
        "r/meta.json: resolved_config.scheduler_config.async_scheduling: missing");
  CHECK(err([](auto& m) {
          m["resolved_config"]["scheduler_config"]["max_num_partial_prefills"] = 0;
        }) ==
        "r/meta.json: resolved_config.scheduler_config.max_num_partial_prefills: expected an "
        "integer >= 1, got 0");
  CHECK(err([](auto& m) { m["schema_version"] = 2; }) ==
        "r/meta.json: schema_version: expected 1, got 2");
  CHECK(err([](auto& m) { m["dataset_hash"] = "abc"; }) ==
        "r/meta.json: dataset_hash: expected a sha256 (64 lowercase hex digits), got \"abc\"");
  CHECK(error_of_call([] {
          exp::parse_vllm_meta("{", "r/meta.json");
        }).starts_with("r/meta.json: <json>: [json.exception.parse_error"));
}

TEST_CASE("against vllm: timeseries.csv errors name file, line and column") {
  auto err = [](const std::string& text) {
    std::istringstream in(text);
    return error_of_call([&] { exp::parse_vllm_timeseries(in, "ts.csv"); });
  };
  CHECK(err("t,running,waiting,kv\n1,2,3,0.5\n") == "(no error)");
  CHECK(err("") == "ts.csv:1: header: missing");
  CHECK(err("t,running\n") == "ts.csv:1: waiting: missing column (header: t,running)");
  CHECK(err("t,running,waiting\n1,2\n") == "ts.csv:2: <row>: 2 fields, but the header has 3");
  CHECK(err("t,running,waiting\n1,2,3\nx,1,1\n") ==
        "ts.csv:3: t: expected a finite number, got 'x'");
  CHECK(err("t,running,waiting\n1,2.5,3\n") ==
        "ts.csv:2: running: expected a count, an integer from 0 to 1000000000, got '2.5'");
  // A count past int64 was cast to it (undefined behaviour; found by tests/fuzz).
  CHECK(err("t,running,waiting\n1,9223372036854775807,1\n") ==
        "ts.csv:2: running: expected a count, an integer from 0 to 1000000000, got "
        "'9223372036854775807'");
  CHECK(err("t,running,waiting\n1,1000000000,1e9\n") == "(no error)");
}

TEST_CASE("against vllm: the verb replays the run and compares it, by hand on a linear profile") {
  const fs::path run = fake_run("against-cli");
  const fs::path out = run.parent_path() / "out";
  std::string so, se;
  const int rc = test::run_bin("isim",
                               "validate --against vllm " + run.string() + " --profile " +
                                   profile() + " --scheduler chunked --out " + out.string() +
                                   " -p engine.activation_reserve_gib=0",
                               &so, &se);
  CAPTURE(so);
  CAPTURE(se);
  REQUIRE(rc == 0);
  CHECK(so.find("note: the run's dataset workloads/d.jsonl is not at") != std::string::npos);
  CHECK(so.find("KV cache: vLLM sized 100 GPU blocks of 4 tokens; the simulator derived") !=
        std::string::npos);
  for (const char* f : {"against.csv", "against.json", "against_requests.csv", "sessions.csv",
                        "summary.json", "timeseries.csv", "trace.jsonl"})
    CHECK(fs::exists(out / f));
  const auto j = nlohmann::json::parse(test::slurp(out / "against.json"));
  CHECK(j["requests"] == 3);
  CHECK(j["sim_finished"] == 3);
  CHECK(j["prefix_hashes"] == false);
  std::map<std::string, std::pair<double, double>> m;
  for (const auto& row : j["metrics"]) m[row["metric"]] = {row["real"], row["sim"]};
  CHECK(m.size() == 13);
  CHECK(m["ttft_s.mean"].first == doctest::Approx(7.0 / 3));
  CHECK(m["gpu_blocks"].first == 100);
  // Arrivals 0, 1 and 2 s never overlap; T(x) = 2 + 0.5x ms. bench-0: a 4-token prefill (4 ms)
  // gives its first token, 4 decodes of 2.5 ms follow; bench-1: 6 ms, then 2 x 2.5 ms;
  // bench-2: a 2-token prefill (3 ms) and done.
  CHECK(m["ttft_s.p99"].second == doctest::Approx(0.006));
  CHECK(m["ttft_s.mean"].second == doctest::Approx((0.004 + 0.006 + 0.003) / 3));
  CHECK(m["tpot_s.mean"].second == doctest::Approx(0.0025));
  CHECK(m["e2e_s.mean"].second == doctest::Approx((0.014 + 0.011 + 0.003) / 3));
  CHECK(m["makespan_s"].second == doctest::Approx(2.003));
  const std::string req = test::slurp(out / "against_requests.csv");
  CHECK(req.starts_with(
      "id,output_tokens,real_ttft_s,sim_ttft_s,real_tpot_s,sim_tpot_s,real_e2e_s,sim_e2e_s\n"
      "bench-0,5,1,"));
  CHECK(req.find("\nbench-2,1,4,0.003,,,4,0.003\n") != std::string::npos);
  // The plot is drawn wherever matplotlib is, and is a note (never a failure) elsewhere.
  if (exp::find_plot_python().empty()) {
    CHECK(so.find("against.png not drawn") != std::string::npos);
  } else {
    CHECK(fs::file_size(out / "against.png") > 0);
    CHECK_FALSE(fs::exists(out / "against.png.tmp.png"));
  }
}

TEST_CASE("against vllm: the dataset's prefix hashes are used only when its sha256 matches") {
  const fs::path run = fake_run("against-dataset");
  const std::string dataset =
      R"({"input_toks": 4, "output_toks": 5, "arrival_time_ns": 0, "input_tok_ids": [1, 2, 3, 4]})"
      "\n"
      R"({"input_toks": 8, "output_toks": 3, "arrival_time_ns": 1, "input_tok_ids": [1, 2, 3, 4, 5, 6, 7, 8]})"
      "\n"
      R"({"input_toks": 2, "output_toks": 1, "arrival_time_ns": 2, "input_tok_ids": [9, 9]})"
      "\n";
  test::write_file(run.parent_path() / "d.jsonl", dataset);
  exp::VllmRun r = exp::load_vllm_run(run.string());
  const auto wrong = exp::vllm_run_trace(r);
  CHECK_FALSE(wrong.prefix_hashes);
  CHECK(wrong.note.find("its sha256 differs from meta.json dataset_hash") != std::string::npos);
  CHECK(wrong.trace[0].prefix.empty());

  r.meta.dataset_hash = sha256_hex(dataset);
  const auto right = exp::vllm_run_trace(r);
  CHECK(right.prefix_hashes);
  CHECK(right.note.find("(sha256 matches meta.json dataset_hash)") != std::string::npos);
  REQUIRE(right.trace.size() == 3);
  CHECK(right.trace[0].prefix.block_tokens == 16);
  CHECK(right.trace[0].prefix.hashes.size() == 1);
  CHECK(right.trace[1].prefix.hashes.size() == 1);  // 8 tokens: one partial 16-token block
  CHECK(right.trace[1].prefix.hashes != right.trace[0].prefix.hashes);
  CHECK(right.trace[0].arrival_s == 0);  // arrivals stay the run's own (queued_ts)
  CHECK(right.trace[2].arrival_s == 2);

  // A dataset line whose lengths differ from its request is an error naming both.
  test::write_file(
      run.parent_path() / "d.jsonl",
      R"({"input_toks": 3, "output_toks": 5, "arrival_time_ns": 0, "input_tok_ids": [1, 2, 3]})"
      "\n");
  r.meta.dataset_hash = sha256_file_hex((run.parent_path() / "d.jsonl").string());
  const std::string d = (run.parent_path() / "d.jsonl").string();
  CHECK(error_of_call([&] { exp::vllm_run_trace(r); }) ==
        (run / "requests.jsonl").string() +
            ":1: request_id: bench-0 has 4 input and 5 output tokens, but its dataset line in " +
            d + " has 3 and 5");
}

TEST_CASE("against vllm: bad input exits 2 naming the file and the key") {
  auto run_with = [](const std::string& name, const nlohmann::json& meta,
                     const std::string& extra = "") {
    const fs::path run = fake_run(name, meta);
    std::string err;
    const int rc = test::run_bin("isim",
                                 "validate --against vllm " + run.string() + " --profile " +
                                     profile() + " --scheduler chunked --out " +
                                     (run.parent_path() / "out").string() + extra,
                                 nullptr, &err);
    return std::make_pair(rc, err + "|" + (run / "meta.json").string());
  };
  nlohmann::json m = isim::test::tiny_vllm_meta();
  m["kv_cache"]["block_size"] = 16;
  auto [rc, err] = run_with("against-block", m);
  CHECK(rc == 2);
  const std::string meta_path = err.substr(err.find('|') + 1);
  CHECK(err.starts_with("isim: error: " + meta_path +
                        ": kv_cache.block_size: the run used 16-token blocks, but the profile " +
                        profile() + " has kv.block_tokens 4\n"));
  // Refused before any output (issue 36: trace.jsonl used to be written first).
  CHECK_FALSE(fs::exists(fs::path(meta_path).parent_path().parent_path() / "out"));
  m = isim::test::tiny_vllm_meta();
  m["engine_kwargs"]["tensor_parallel_size"] = 2;
  std::tie(rc, err) = run_with("against-tp", m);
  CHECK(rc == 2);
  CHECK(err.find(": engine_kwargs.tensor_parallel_size: the run used tp 2, but the profile ") !=
        std::string::npos);
  m = isim::test::tiny_vllm_meta();
  m["kv_cache"].erase("enable_prefix_caching");
  std::tie(rc, err) = run_with("against-missing", m);
  CHECK(rc == 2);
  CHECK(err.starts_with("isim: error: " + err.substr(err.find('|') + 1) +
                        ": kv_cache.enable_prefix_caching: missing\n"));
  std::tie(rc, err) =
      run_with("against-override", isim::test::tiny_vllm_meta(), " -p engine.max_num_seqs=0");
  CHECK(rc == 2);
  CHECK(err.find("engine.max_num_seqs: must be > 0") != std::string::npos);
  std::string e2;
  CHECK(test::run_bin("isim", "validate --against sglang x --profile p", nullptr, &e2) == 2);
  CHECK(e2.find("--against: unknown 'sglang'; valid: vllm") != std::string::npos);
  CHECK(test::run_bin("isim",
                      "validate --against vllm /nonexistent-run --profile p --scheduler chunked",
                      nullptr, &e2) == 2);
  CHECK(e2 ==
        "isim: error: /nonexistent-run: not a folder (expected a vLLM run: meta.json, "
        "requests.jsonl)\n");
  CHECK(test::run_bin("isim", "validate --against vllm /nonexistent-run", nullptr, &e2) == 2);
  CHECK(e2.find("needs --profile PROFILE.yaml") != std::string::npos);
  // Every build registers the default scheduler (vllm-v1), so without --scheduler the verb
  // takes it and goes on to read the run (check_scheduler's refusal is for a build without it).
  REQUIRE(sim::scheduler_registry().contains(exp::kAgainstVllmScheduler));
  CHECK(test::run_bin("isim", "validate --against vllm /nonexistent-run --profile p", nullptr,
                      &e2) == 2);
  CHECK(e2 ==
        "isim: error: /nonexistent-run: not a folder (expected a vLLM run: meta.json, "
        "requests.jsonl)\n");
}

TEST_CASE("against vllm: the shared RTX 4090 run end to end (structure, not accuracy)" *
          doctest::skip(isim::test::absent(!have_shared_run()))) {
  const std::string run = test::shared_data() + "/llmservingsim/vllm-RTX4090-llama-3.1-8b";
  const fs::path out = test::scratch("against-shared");
  std::string so, se;
  const int rc =
      test::run_bin("isim",
                    "validate --against vllm " + run + " --profile " + test::source_dir() +
                        "/calibrate/profiles/rtx4090-llama-3.1-8b.llmservingsim.yaml --scheduler " +
                        scheduler() + " --out " + out.string(),
                    &so, &se);
  CAPTURE(se);
  REQUIRE(rc == 0);
  MESSAGE(so);
  CHECK(so.find("(sha256 matches meta.json dataset_hash)") != std::string::npos);
  const auto j = nlohmann::json::parse(test::slurp(out / "against.json"));
  CHECK(j["requests"] == 300);
  CHECK(j["sim_finished"] == 300);
  CHECK(j["kv_cache"]["real_gpu_blocks"] == 2588);
  std::vector<std::string> names;
  for (const auto& row : j["metrics"]) {
    names.push_back(row["metric"]);
    CHECK(row["real"].get<double>() > 0);
    CHECK(row["sim"].get<double>() > 0);
  }
  CHECK(names == std::vector<std::string>{"ttft_s.mean", "ttft_s.p50", "ttft_s.p90", "ttft_s.p99",
                                          "tpot_s.mean", "tpot_s.p50", "tpot_s.p99", "e2e_s.mean",
                                          "e2e_s.p50", "e2e_s.p99", "throughput_tokens_per_s",
                                          "makespan_s", "gpu_blocks"});
  const std::string csv = test::slurp(out / "against.csv");
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 14);
  const auto summary = nlohmann::json::parse(test::slurp(out / "summary.json"));
  CHECK(summary["finished"] == 300);
  CHECK(summary["prefix_lookup_tokens"].get<int64_t>() > 0);
}
