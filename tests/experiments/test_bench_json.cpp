// bench.json, vLLM bench serve's result JSON (experiments/run/bench_json.h), field by field on a
// run whose token times are worked out by hand: the two-session schedule of
// tests/cluster/test_turn_metrics.cpp (round profile: T(x) = 10 ms + 1 ms per batched token,
// vllm-v0, preserve) plus a session that can never fit. Expected values by hand.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cluster/simulation.h"
#include "experiments/run/bench_json.h"
#include "policies/builtin.h"
#include "tests/sim_fixtures.h"

using namespace isim;
using isim::test::seg;

namespace {

// a: arrives at 0, prompt 8, 3 outputs, a 0.5 s intercept, 4 returned tokens, 2 outputs.
// b: arrives at 20 ms, prompt 20, 3 outputs. huge: arrives at 300 ms, prompt 100: 102 tokens of
// context never fit 20 blocks of 4 (80 tokens), so it is skipped when it arrives.
// The schedule (test_turn_metrics.cpp, huge takes no part in it):
//   a0: sent 0,     tokens at 18, 29, 71 ms      ttft 18, e2el 71, gaps {11, 42}
//   b0: sent 20,    tokens at 59, 71, 82 ms      ttft 39, e2el 62, gaps {12, 11}
//   a1: sent 571 (intercept end), prompt 8 + 3 + 4 = 15, tokens at 586, 597 ms
//                                                ttft 15, e2el 26, gaps {11}
trace::Trace bench_trace() {
  return {trace::Session{"a", 0.0, {seg(8, 3, "qa", 0.5), seg(4, 2)}},
          trace::Session{"b", 0.020, {seg(20, 3)}}, trace::Session{"huge", 0.300, {seg(100, 2)}}};
}

sim::EngineConfig bench_engine() {
  sim::EngineConfig c;
  c.gpu_blocks = 20;
  c.cpu_blocks = 100;
  c.max_num_batched_tokens = 64;
  return c;
}

struct BenchRun {
  cluster::RunResult r = test::run(bench_trace(), "preserve", bench_engine());
  exp::BenchMeta meta() const {
    exp::BenchMeta m;
    m.label = m.policy = "preserve";
    m.model_id = "round";
    m.seed = 5;
    m.request_rate = "2.0";
    m.burstiness = "1.0";
    return m;
  }
  std::string text(const exp::BenchGoodput& g) const {
    return exp::bench_json_text(r, exp::failed_requests(bench_trace(), r), g, meta());
  }
};

double ms(double x) {
  return x / 1000;
}

}  // namespace

TEST_CASE("bench.json: every field of a hand-computed run, in vLLM's key order") {
  BenchRun run;
  exp::BenchGoodput g;  // vLLM --goodput ttft:20 tpot:20
  g.ttft_ms = 20;
  g.tpot_ms = 20;
  const std::string text = run.text(g);
  const auto j = nlohmann::ordered_json::parse(text);
  std::vector<std::string> keys;
  for (const auto& [k, v] : j.items()) keys.push_back(k);
  CHECK(keys == std::vector<std::string>{"date",
                                         "endpoint_type",
                                         "backend",
                                         "label",
                                         "model_id",
                                         "tokenizer_id",
                                         "num_prompts",
                                         "isim",
                                         "request_rate",
                                         "burstiness",
                                         "max_concurrency",
                                         "duration",
                                         "completed",
                                         "failed",
                                         "total_input_tokens",
                                         "total_output_tokens",
                                         "request_throughput",
                                         "request_goodput",
                                         "output_throughput",
                                         "total_token_throughput",
                                         "input_lens",
                                         "output_lens",
                                         "ttfts",
                                         "itls",
                                         "latencies",
                                         "start_times",
                                         "errors",
                                         "max_output_tokens_per_s",
                                         "max_concurrent_requests",
                                         "rtfx",
                                         "mean_ttft_ms",
                                         "median_ttft_ms",
                                         "std_ttft_ms",
                                         "p99_ttft_ms",
                                         "mean_tpot_ms",
                                         "median_tpot_ms",
                                         "std_tpot_ms",
                                         "p99_tpot_ms",
                                         "mean_itl_ms",
                                         "median_itl_ms",
                                         "std_itl_ms",
                                         "p99_itl_ms",
                                         "mean_e2el_ms",
                                         "median_e2el_ms",
                                         "std_e2el_ms",
                                         "p99_e2el_ms"});
  CHECK(j["date"].is_null());
  CHECK(j["backend"] == "isim");
  CHECK(j["label"] == "preserve");
  CHECK(j["model_id"] == "round");
  CHECK(j["tokenizer_id"].is_null());
  CHECK(j["request_rate"] == 2.0);
  CHECK(j["burstiness"] == 1.0);
  CHECK(j["max_concurrency"].is_null());
  CHECK(j["isim"]["goodput_ms"].dump() == R"({"ttft":20.0,"tpot":20.0})");
  // Requests by send time: a0 (0), b0 (20 ms), huge (300 ms, refused), a1 (571 ms).
  CHECK(j["num_prompts"] == 4);
  CHECK(j["completed"] == 3);
  CHECK(j["failed"] == 1);
  // duration: t = 0 to the last end, a1's last token at 597 ms (huge ended at 300 ms).
  CHECK(j["duration"].get<double>() == doctest::Approx(0.597).epsilon(1e-12));
  CHECK(j["total_input_tokens"] == 8 + 20 + 15);  // completed requests only: 43
  CHECK(j["total_output_tokens"] == 3 + 3 + 2);   // 8
  CHECK(j["request_throughput"].get<double>() == doctest::Approx(3 / 0.597));       // 5.025
  CHECK(j["output_throughput"].get<double>() == doctest::Approx(8 / 0.597));        // 13.40
  CHECK(j["total_token_throughput"].get<double>() == doctest::Approx(51 / 0.597));  // 85.43
  // Good: ttft <= 20 ms and TPOT <= 20 ms. a0: TPOT (71 - 18) / 2 = 26.5: no. b0: ttft 39: no.
  // a1: ttft 15, TPOT (26 - 15) / 1 = 11: yes. 1 / 0.597 s.
  CHECK(j["request_goodput"].get<double>() == doctest::Approx(1 / 0.597));
  CHECK(j["input_lens"] == nlohmann::ordered_json{8, 20, 100, 15});
  CHECK(j["output_lens"] == nlohmann::ordered_json{3, 3, 0, 2});
  const std::vector<double> ttfts = j["ttfts"], lat = j["latencies"], start = j["start_times"];
  const std::vector<double> want_ttft = {ms(18), ms(39), 0, ms(15)};
  const std::vector<double> want_lat = {ms(71), ms(62), 0, ms(26)};
  const std::vector<double> want_start = {0, ms(20), ms(300), ms(571)};
  for (size_t i = 0; i < 4; ++i) {
    CHECK(ttfts[i] == doctest::Approx(want_ttft[i]).epsilon(1e-9));
    CHECK(lat[i] == doctest::Approx(want_lat[i]).epsilon(1e-9));
    CHECK(start[i] == doctest::Approx(want_start[i]).epsilon(1e-9));
  }
  const std::vector<std::vector<double>> itls = j["itls"];
  const std::vector<std::vector<double>> want_itls = {
      {ms(11), ms(42)}, {ms(12), ms(11)}, {}, {ms(11)}};
  REQUIRE(itls.size() == 4);
  for (size_t i = 0; i < 4; ++i) {
    REQUIRE(itls[i].size() == want_itls[i].size());
    for (size_t k = 0; k < itls[i].size(); ++k)
      CHECK(itls[i][k] == doctest::Approx(want_itls[i][k]).epsilon(1e-9));
  }
  CHECK(j["errors"] ==
        nlohmann::ordered_json{"", "",
                               "session huge skipped: its context reaches 102 tokens but "
                               "the GPU holds 80 (20 blocks of 4, 0 reserved for decodes)",
                               ""});
  CHECK(j["max_output_tokens_per_s"] == 8.0);  // all 8 tokens in the first second
  CHECK(j["max_concurrent_requests"] == 2);    // a0 [0, 71) and b0 [20, 82) overlap
  CHECK(j["rtfx"] == 0.0);
  const auto stat = [&](const char* k) { return j[k].get<double>(); };
  // TTFT {18, 39, 15} ms: mean 24; deviations -6, 15, -9: std sqrt(342 / 3) = sqrt(114);
  // sorted {15, 18, 39}: median 18, p99 h = 1.98: 18 + 0.98 x 21 = 38.58.
  CHECK(stat("mean_ttft_ms") == doctest::Approx(24));
  CHECK(stat("median_ttft_ms") == doctest::Approx(18));
  CHECK(stat("std_ttft_ms") == doctest::Approx(std::sqrt(114.0)));
  CHECK(stat("p99_ttft_ms") == doctest::Approx(38.58));
  // TPOT {26.5, 11.5, 11} ms: mean 49 / 3; deviations 61/6, -29/6, -32/6: squares sum
  // (3721 + 841 + 1024) / 36 = 5586 / 36, std sqrt(5586 / 36 / 3); median 11.5;
  // p99 11.5 + 0.98 x 15 = 26.2.
  CHECK(stat("mean_tpot_ms") == doctest::Approx(49.0 / 3));
  CHECK(stat("median_tpot_ms") == doctest::Approx(11.5));
  CHECK(stat("std_tpot_ms") == doctest::Approx(std::sqrt(5586.0 / 36 / 3)));
  CHECK(stat("p99_tpot_ms") == doctest::Approx(26.2));
  // ITL over every gap {11, 42, 12, 11, 11} ms: mean 87 / 5 = 17.4; deviations -6.4 (x3),
  // -5.4, 24.6: squares 122.88 + 29.16 + 605.16 = 757.2, std sqrt(151.44); sorted
  // {11, 11, 11, 12, 42}: median 11, p99 h = 3.96: 12 + 0.96 x 30 = 40.8.
  CHECK(stat("mean_itl_ms") == doctest::Approx(17.4));
  CHECK(stat("median_itl_ms") == doctest::Approx(11));
  CHECK(stat("std_itl_ms") == doctest::Approx(std::sqrt(151.44)));
  CHECK(stat("p99_itl_ms") == doctest::Approx(40.8));
  // E2EL {71, 62, 26} ms: mean 53; deviations 18, 9, -27: std sqrt(1134 / 3) = sqrt(378);
  // median 62; p99 62 + 0.98 x 9 = 70.82.
  CHECK(stat("mean_e2el_ms") == doctest::Approx(53));
  CHECK(stat("median_e2el_ms") == doctest::Approx(62));
  CHECK(stat("std_e2el_ms") == doctest::Approx(std::sqrt(378.0)));
  CHECK(stat("p99_e2el_ms") == doctest::Approx(70.82));
  // The same run gives the same bytes.
  CHECK(BenchRun().text(g) == text);
}

TEST_CASE("bench.json: no goodput limit gives request_goodput null; whole floats keep .0") {
  BenchRun run;
  const std::string text = run.text(exp::BenchGoodput{});
  CHECK(nlohmann::json::parse(text)["request_goodput"].is_null());
  CHECK(text.find("\n  \"request_goodput\": null,\n") != std::string::npos);
  CHECK(text.find("\n  \"rtfx\": 0.0,\n") != std::string::npos);
  CHECK(text.find("\n  \"max_output_tokens_per_s\": 8.0,\n") != std::string::npos);
  CHECK(text.find("\n  \"isim\": {\"policy\":\"preserve\",\"seed\":5,\"request\":\"one turn: one "
                  "LLM call of a session\",\"goodput_ms\":{},\"slo_not_in_goodput\":[]},\n") !=
        std::string::npos);
}

TEST_CASE("bench.json: a run with no completed request has zero statistics, as vLLM's") {
  // Only huge: refused at 300 ms. duration 0.3 s; every statistic over no values is 0
  // (np.mean(x or 0)), throughputs 0 / 0.3.
  const trace::Trace t = {trace::Session{"huge", 0.300, {seg(100, 2)}}};
  const auto r = test::run(t, "preserve", bench_engine());
  const auto j = nlohmann::json::parse(
      exp::bench_json_text(r, exp::failed_requests(t, r), {}, exp::BenchMeta{}));
  CHECK(j["completed"] == 0);
  CHECK(j["failed"] == 1);
  CHECK(j["duration"].get<double>() == doctest::Approx(0.3));
  CHECK(j["request_throughput"] == 0.0);
  CHECK(j["mean_ttft_ms"] == 0.0);
  CHECK(j["p99_itl_ms"] == 0.0);
  CHECK(j["max_concurrent_requests"] == 0);
  CHECK(j["itls"] == nlohmann::json::array({nlohmann::json::array()}));
}

TEST_CASE("bench.json: summary and detailed print the same aggregates, byte for byte") {
  // The same run with every turn's gaps kept (detailed) and without (summary: the ledger's
  // tallies alone). Summary texts are equal; the detailed text is the summary's plus the seven
  // per-request lists, each one line between total_token_throughput and max_output_tokens_per_s.
  BenchRun kept;
  sim::EngineConfig cfg = bench_engine();
  cfg.check_invariants = true;
  sim::SimExecutor ex(test::round_profile());
  auto pol = policy::policy_registry().create("preserve", "test", policy::PolicyParams{});
  cluster::SingleReplica one;
  const cluster::RunResult dropped =
      cluster::simulate(bench_trace(), {cluster::ReplicaSpec{cfg, &ex, pol.get(), ""}}, one,
                        cluster::DisaggConfig{}, nullptr, true, nullptr, nullptr, false);
  REQUIRE(kept.r.gaps_kept);
  REQUIRE_FALSE(dropped.gaps_kept);
  exp::BenchGoodput g;
  g.ttft_ms = 20;
  exp::BenchMeta m = kept.meta();
  m.detailed = false;
  const std::string summary_kept =
      exp::bench_json_text(kept.r, exp::failed_requests(bench_trace(), kept.r), g, m);
  const std::string summary_dropped =
      exp::bench_json_text(dropped, exp::failed_requests(bench_trace(), dropped), g, m);
  CHECK(summary_kept == summary_dropped);
  m.detailed = true;
  std::string detailed =
      exp::bench_json_text(kept.r, exp::failed_requests(bench_trace(), kept.r), g, m);
  const size_t from = detailed.find("\n  \"input_lens\"");
  const size_t to = detailed.find("\n  \"max_output_tokens_per_s\"");
  REQUIRE(from != std::string::npos);
  REQUIRE(to != std::string::npos);
  detailed.erase(from, to - from);
  CHECK(detailed == summary_dropped);
  // Without the gaps there is nothing to list: a bug, not bad input.
  CHECK_THROWS_AS(exp::bench_json_text(dropped, exp::failed_requests(bench_trace(), dropped), g, m),
                  std::logic_error);
}

TEST_CASE("bench.json goodput: the spec's slo keys mapped to vLLM's --goodput limits") {
  // request_ttft_s (every turn's TTFT) is vLLM's ttft; it wins over the session's ttft_s, which
  // is then unmapped; tpot_s is tpot; e2e_s, normalized_latency_s, itl_max_s have no counterpart.
  const exp::RunSlo slo = {{"ttft_s", 2.0}, {"e2e_s", 10.0}, {"tpot_s", 0.05}};
  exp::TurnSlo turn;
  turn.request_ttft_s = 1.0;
  turn.itl_max_s = 0.2;
  const exp::BenchGoodput both = exp::bench_goodput(slo, turn);
  CHECK(both.ttft_ms == doctest::Approx(1000));
  CHECK(both.tpot_ms == doctest::Approx(50));
  CHECK(both.e2el_ms == 0);
  CHECK(both.unmapped == std::vector<std::string>{"e2e_s", "itl_max_s", "ttft_s"});
  // Without request_ttft_s the session's ttft_s bounds every turn's TTFT.
  const exp::BenchGoodput session = exp::bench_goodput(slo, exp::TurnSlo{});
  CHECK(session.ttft_ms == doctest::Approx(2000));
  CHECK(session.unmapped == std::vector<std::string>{"e2e_s"});
  // Only unmapped keys: no limit, so request_goodput is null.
  CHECK(exp::bench_goodput({{"normalized_latency_s", 0.1}}, exp::TurnSlo{}).empty());
  CHECK(exp::bench_goodput({}, exp::TurnSlo{}).empty());
}

TEST_CASE("bench.json metadata: the arrival process as vLLM's request_rate and concurrency") {
  exp::Experiment e;
  exp::Inputs in;
  in.profile.model.name = "gpt-j-6b";
  e.seed = 9;
  e.arrival.process = "poisson";
  e.arrival.rate = 2.5;
  auto m = exp::bench_meta(e, in, exp::PolicySpec{"swap", {}});
  CHECK(m.label == "swap");
  CHECK(m.model_id == "gpt-j-6b");
  CHECK(m.seed == 9);
  CHECK(m.request_rate == "2.5");
  CHECK(m.burstiness == "1.0");
  CHECK(m.max_concurrency == "null");
  e.arrival.process = "users";  // closed loop: every user's next request waits for its last
  e.arrival.users = 16;
  m = exp::bench_meta(e, in, exp::PolicySpec{"swap", {}});
  CHECK(m.request_rate == "\"inf\"");
  CHECK(m.burstiness == "null");
  CHECK(m.max_concurrency == "16");
  e.arrival.process = "replay";
  m = exp::bench_meta(e, in, exp::PolicySpec{"swap", {}});
  CHECK(m.request_rate == "null");
  CHECK(m.max_concurrency == "null");
}

TEST_CASE("bench_json_path: FILE for one policy, FILE.POLICY.json for several") {
  CHECK(exp::bench_json_path("out/b.json", "swap", 1) == "out/b.json");
  CHECK(exp::bench_json_path("out/b.json", "swap", 2) == "out/b.swap.json");
}
