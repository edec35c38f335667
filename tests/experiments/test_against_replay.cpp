// validate --against aiperf | guidellm | vllm-bench: the replayed trace (conversations,
// intercepts, split turns), vLLM bench's drawn arrivals, and the whole command on each fixture,
// its simulated metrics worked out by hand on tests/data/profile-linear-small.yaml.
//
// The linear profile: a step of x batched tokens takes 2 + 0.5 x ms; KV blocks of 4 tokens;
// the engine's defaults keep prefix caching on. So a lone request of I input and O output
// tokens has TTFT 2 + I/2 ms and then O - 1 decode steps of 2.5 ms. A resumed turn finds the
// previous turn's full blocks in the prefix cache: of its context, the KV of every token but the
// last output (never fed back) was computed, and the full blocks of that are hits.
#include <doctest/doctest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "experiments/validate/against_aiperf.h"
#include "experiments/validate/against_vllm_bench.h"
#include "tests/cli_helpers.h"
#include "tests/test_paths.h"

using namespace isim;
namespace fs = std::filesystem;

namespace {

const std::string kLinear = test::data_dir() + "/profile-linear-small.yaml";

// The "sim" column of against.csv by metric.
std::map<std::string, double> sim_column(const fs::path& out) {
  std::map<std::string, double> m;
  const auto rows = test::squeezed_lines(test::slurp(out / "against.csv"));
  for (size_t i = 1; i < rows.size(); ++i) {
    const std::string& r = rows[i];
    const size_t a = r.find(','), b = r.find(',', a + 1), c = r.find(',', b + 1);
    m[r.substr(0, a)] = std::stod(r.substr(b + 1, c - b - 1));
  }
  return m;
}

int against(const std::string& kind, const std::string& path, const fs::path& out,
            std::string* so = nullptr, std::string* se = nullptr,
            const std::string& extra = " -p engine.gpu_blocks=256") {
  return test::run_bin("isim",
                       "validate --against " + kind + " " + path + " --profile " + kLinear +
                           " --out " + out.string() + extra,
                       so, se);
}

}  // namespace

TEST_CASE("bench_trace: a conversation that resends its history is one session of segments") {
  const exp::BenchRun run = exp::read_aiperf(test::data_dir() + "/aiperf-excerpt");
  const exp::BenchTrace bt = exp::bench_trace(run, 1);
  CHECK(bt.split_turns == 0);
  REQUIRE(bt.trace.size() == 2);
  const trace::Session& a = bt.trace[0];
  CHECK(a.id == "corr-conv-a");
  REQUIRE(a.segments.size() == 2);
  // Turn 1's prompt 16 = 8 + 3 (resent) + 5 new; the client waited 0.5 - (0 + 0.1) = 0.4 s.
  CHECK(a.segments[1].input == 5);
  REQUIRE(a.segments[0].intercept);
  CHECK(a.segments[0].intercept->kind == "client");
  CHECK(a.segments[0].intercept->duration_s == doctest::Approx(0.4));
  CHECK(bt.trace[1].arrival_s == doctest::Approx(1.0));
  // A later turn with a shorter prompt than the history is a request of its own.
  exp::BenchRun cut = run;
  cut.real[1].input_tokens = 10;  // < 8 + 3
  const exp::BenchTrace bc = exp::bench_trace(cut, 1);
  CHECK(bc.split_turns == 1);
  REQUIRE(bc.trace.size() == 3);
  CHECK(bc.trace[1].id == "corr-conv-a/turn-1");
  CHECK(bc.trace[1].arrival_s == doctest::Approx(0.5));
}

TEST_CASE("bench_arrivals: all at 0 at an infinite rate; vLLM's rescaled gamma gaps") {
  CHECK(exp::bench_arrivals(3, std::numeric_limits<double>::infinity(), 1, 1) ==
        std::vector<double>{0, 0, 0});
  for (double burst : {0.5, 1.0, 4.0}) {
    CAPTURE(burst);
    const auto t = exp::bench_arrivals(50, 10, burst, 7);
    // vLLM sends the first request after the first gap and rescales so that the last of the 50
    // goes out at 50 / 10 = 5 s exactly.
    CHECK(t.front() > 0);
    CHECK(std::is_sorted(t.begin(), t.end()));
    CHECK(t.back() == doctest::Approx(5.0).epsilon(1e-12));
    CHECK(exp::bench_arrivals(50, 10, burst, 7) == t);  // seeded: the same every run
    CHECK(exp::bench_arrivals(50, 10, burst, 8) != t);
  }
}

TEST_CASE("isim validate --against aiperf: the replay worked out by hand") {
  const fs::path out = test::scratch("against-aiperf") / "o";
  std::string so, se;
  REQUIRE(against("aiperf", test::data_dir() + "/aiperf-excerpt", out, &so, &se) == 0);
  // conv-a turn 0 (8 in, 3 out) at 0: TTFT 6 ms, last token 6 + 2 x 2.5 = 11 ms.
  // Turn 1 sent 0.4 s later (0.411 s): KV of 10 tokens computed, 8 (2 blocks) cached: prefill
  // 3 + 5 = 8 -> TTFT 6 ms, one decode: 8.5 ms. conv-b (12 in, 4 out) at 1.0 s: TTFT 8 ms,
  // 8 + 3 x 2.5 = 15.5 ms. TTFT [6, 6, 8]: avg 20/3, p90 6 + 0.8 x 2 = 7.6; latency
  // [11, 8.5, 15.5]: avg 35/3; ITL 2.5 each; duration 1.0155 s; 9 tokens / 1.0155 s.
  const auto m = sim_column(out);
  CHECK(m.at("time_to_first_token.avg") == doctest::Approx(20.0 / 3));
  CHECK(m.at("time_to_first_token.p90") == doctest::Approx(7.6));
  CHECK(m.at("inter_token_latency.avg") == doctest::Approx(2.5));
  CHECK(m.at("request_latency.avg") == doctest::Approx(35.0 / 3));
  CHECK(m.at("benchmark_duration") == doctest::Approx(1.0155));
  CHECK(m.at("output_token_throughput") == doctest::Approx(9 / 1.0155));
  CHECK(so.find("aiperf " + test::data_dir() +
                "/aiperf-excerpt: 3 requests compared (1 failed, not replayed)") !=
        std::string::npos);
  const auto j = nlohmann::json::parse(test::slurp(out / "against.json"));
  CHECK(j["against"] == "aiperf");
  CHECK(j["excluded"] == 1);
  CHECK(j["sim_completed"] == 3);
  CHECK(fs::exists(out / "trace.jsonl"));
  CHECK(fs::exists(out / "summary.json"));
  // Each real request beside its simulated turn, by user session (x_correlation_id) and turn: TTFT
  // 6, 6, 8 ms.
  const auto rows = test::squeezed_lines(test::slurp(out / "against_requests.csv"));
  REQUIRE(rows.size() == 4);
  CHECK(rows[1].starts_with("corr-conv-a,3,0.04,0.006,"));
  CHECK(rows[2].starts_with("corr-conv-a/turn-1,2,0.02,0.006,"));
  CHECK(rows[3].starts_with("corr-conv-b,4,0.05,0.008,"));
}

TEST_CASE("isim validate --against guidellm: the replay worked out by hand") {
  const fs::path out = test::scratch("against-guidellm") / "o";
  REQUIRE(against("guidellm", test::data_dir() + "/guidellm-excerpt.json", out) == 0);
  // r0 (8, 3) at 0: TTFT 6, last token 11 ms. c1 turn 0 (6, 2) at 0.2 s: TTFT 5, 7.5 ms.
  // c1 turn 1 after 0.6 - 0.245 = 0.355 s, at 0.5625 s: KV of 7 tokens, 4 (1 block) cached:
  // prefill 8 - 4 + 4 = 8 -> TTFT 6, 6 + 3 x 2.5 = 13.5 ms, done at 0.576 s.
  // TTFT mean 17/3; TPOT incl. first weighted: (11 + 7.5 + 13.5) / 9 = 32/9; ITL 2.5;
  // duration 0.576 s; 9 tokens / 0.576 s.
  const auto m = sim_column(out);
  CHECK(m.at("time_to_first_token_ms.mean") == doctest::Approx(17.0 / 3));
  CHECK(m.at("time_per_output_token_ms.mean") == doctest::Approx(32.0 / 9));
  CHECK(m.at("inter_token_latency_ms.mean") == doctest::Approx(2.5));
  CHECK(m.at("duration_s") == doctest::Approx(0.576));
  CHECK(m.at("output_tokens_per_s") == doctest::Approx(9 / 0.576));
}

TEST_CASE("isim validate --against vllm-bench: max_concurrency 1 at rate inf is one chain") {
  const fs::path out = test::scratch("against-vllm-bench") / "o";
  std::string so;
  REQUIRE(against("vllm-bench", test::data_dir() + "/vllm-bench-excerpt.json", out, &so) == 0);
  // (8, 3) at 0: TTFT 6, e2el 11; (12, 4) at 11 ms: 8, 15.5, done at 26.5; (6, 1) at 26.5:
  // 5, 5, done at 31.5 ms. TTFT mean 19/3; e2el mean 31.5/3 = 10.5; TPOT and ITL 2.5;
  // 3 requests / 0.0315 s.
  const auto m = sim_column(out);
  CHECK(m.at("mean_ttft_ms") == doctest::Approx(19.0 / 3));
  CHECK(m.at("mean_e2el_ms") == doctest::Approx(10.5));
  CHECK(m.at("mean_itl_ms") == doctest::Approx(2.5));
  CHECK(m.at("duration") == doctest::Approx(0.0315));
  CHECK(m.at("request_throughput") == doctest::Approx(3 / 0.0315));
  CHECK(so.find("note: max_concurrency 1 with an infinite rate: request i starts when request "
                "i - 1 finishes (1 in flight at most, as the real run)") != std::string::npos);
}

TEST_CASE("isim validate --against vllm-bench: drawn arrivals give byte-identical outputs") {
  const fs::path d = test::scratch("against-vllm-bench-rate");
  auto doc = nlohmann::json::parse(test::slurp(test::data_dir() + "/vllm-bench-excerpt.json"));
  doc["request_rate"] = 20.0;
  doc["burstiness"] = 0.5;
  doc["max_concurrency"] = nullptr;
  const std::string f = test::write_file(d / "r.json", doc.dump());
  REQUIRE(against("vllm-bench", f, d / "a") == 0);
  // The last of 3 requests goes out at exactly 3 / 20 = 0.15 s (vLLM's rescale), so the run,
  // timed from the start, ends at least 5 ms later (the shortest request alone, (6, 1)) and at
  // most 31.5 ms later (all three one after another).
  const auto m = sim_column(d / "a");
  CHECK(m.at("duration") >= 0.155 - 1e-9);
  CHECK(m.at("duration") <= 0.1815 + 1e-9);
  REQUIRE(against("vllm-bench", f, d / "b") == 0);
  CHECK(test::slurp(d / "a" / "against.csv") == test::slurp(d / "b" / "against.csv"));
  CHECK(test::slurp(d / "a" / "trace.jsonl") == test::slurp(d / "b" / "trace.jsonl"));
}

TEST_CASE("isim validate --against: refusals leave no output folder; usage names the kinds") {
  const fs::path d = test::scratch("against-refuse");
  std::string so, se;
  // The small profile's default activation reserve leaves no KV block: refused before --out.
  CHECK(against("aiperf", test::data_dir() + "/aiperf-excerpt", d / "o", &so, &se, "") == 2);
  CHECK(se.find("engine.activation_reserve_gib: 2 GiB (the default) leaves no room for a KV "
                "block") != std::string::npos);
  CHECK_FALSE(fs::exists(d / "o"));
  CHECK(test::run_bin("isim", "validate --against sglang x --profile p", nullptr, &se) == 2);
  CHECK(se.find("--against: unknown 'sglang'; valid: vllm, aiperf, guidellm, vllm-bench") !=
        std::string::npos);
  CHECK(test::run_bin("isim",
                      "validate --against aiperf " + test::data_dir() +
                          "/aiperf-excerpt --profile " + kLinear + " --benchmark 1 --out " +
                          (d / "b").string(),
                      nullptr, &se) == 2);
  CHECK(se.find("isim validate: --benchmark: only with --against guidellm") != std::string::npos);
  CHECK_FALSE(fs::exists(d / "b"));
  CHECK(test::run_bin("isim", "validate --against guidellm", nullptr, &se) == 2);
  CHECK(se.find("isim validate: needs FILE") != std::string::npos);
  REQUIRE(test::run_bin("isim", "validate --against aiperf --help", &so) == 0);
  CHECK(so.find("isim validate --against aiperf DIR --profile PROFILE.yaml") != std::string::npos);
  CHECK(so.find("isim validate --against vllm-bench FILE --profile P [--seed S]") !=
        std::string::npos);
}

TEST_CASE("isim validate --against vllm-bench: start_times, when saved, are the send times") {
  const fs::path d = test::scratch("against-vllm-bench-starts");
  auto doc = nlohmann::json::parse(test::slurp(test::data_dir() + "/vllm-bench-excerpt.json"));
  doc["start_times"] = {100.0, 100.5, 100.02, 100.6};  // the 4th request failed
  const std::string f = test::write_file(d / "s.json", doc.dump());
  const exp::BenchRun run = exp::read_vllm_bench(f);
  CHECK(run.send_times);
  // In send order: req-0 at 0, req-2 at 0.02, req-1 at 0.5.
  CHECK(run.session_ids == std::vector<std::string>{"req-0", "req-2", "req-1"});
  CHECK(run.real[1].send_s == doctest::Approx(0.02));
  CHECK(run.real[2].send_s == doctest::Approx(0.5));
  std::string so;
  REQUIRE(against("vllm-bench", f, d / "o", &so) == 0);
  // (8, 3) at 0: TTFT 6, done at 11 ms; (6, 1) at 20 ms: TTFT 5, done at 25 ms; (12, 4) at
  // 500 ms: TTFT 8, done at 515.5 ms. TTFT mean 19/3; duration 0.5155 s.
  const auto m = sim_column(d / "o");
  CHECK(m.at("mean_ttft_ms") == doctest::Approx(19.0 / 3));
  CHECK(m.at("duration") == doctest::Approx(0.5155));
  CHECK(so.find("note: send times from the file's start_times: replayed request by request") !=
        std::string::npos);
}
