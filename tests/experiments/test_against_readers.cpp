// validate --against aiperf | guidellm | vllm-bench: each reader on its fixture under
// tests/data (tests/data/README.md says where each comes from), the tool's definitions converted
// exactly (our rows give back the figures the tool itself wrote in the file), the hand-computed
// real metrics, and every error a user can hit.
#include <doctest/doctest.h>

#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "experiments/run/request_metrics.h"
#include "experiments/validate/against_aiperf.h"
#include "experiments/validate/against_guidellm.h"
#include "experiments/validate/against_vllm_bench.h"
#include "tests/cli_helpers.h"
#include "tests/input_error_text.h"
#include "tests/test_paths.h"

using namespace isim;
namespace fs = std::filesystem;
using test::error_of_call;

namespace {

double metric(const exp::MetricList& m, const std::string& name) {
  for (const auto& [k, v] : m)
    if (k == name) return v;
  FAIL("no metric " << name);
  return 0;
}

nlohmann::json read_json(const std::string& path) {
  return nlohmann::json::parse(test::slurp(path));
}

const std::string kAiperf = test::data_dir() + "/aiperf-excerpt";
const std::string kGuide = test::data_dir() + "/guidellm-excerpt.json";
const std::string kBench = test::data_dir() + "/vllm-bench-excerpt.json";

}  // namespace

TEST_CASE("Values::inverse_cdf is GuideLLM's percentile: no interpolation, counts as weights") {
  exp::Values v;
  v.add(20);
  v.add(40);
  v.add(50);
  // N = 3: q = 50 needs a count >= 1.5: 20 (1) no, 40 (2) yes. q = 99: >= 2.97: 50.
  CHECK(v.inverse_cdf(50) == 40);
  CHECK(v.inverse_cdf(99) == 50);
  CHECK(v.inverse_cdf(0) == 20);
  exp::Values w;  // 22.5 x2, 33 x3, 35 x4: N = 9; q = 50: >= 4.5: 2, 5 -> 33
  w.add(33, 3);
  w.add(22.5, 2);
  w.add(35, 4);
  CHECK(w.inverse_cdf(50) == 33);
  CHECK(w.inverse_cdf(99) == 35);  // >= 8.91: 9
  CHECK(std::isnan(exp::Values().inverse_cdf(50)));
}

TEST_CASE("read_aiperf: records, conversations, units and AIPerf's definitions") {
  const exp::BenchRun run = exp::read_aiperf(kAiperf);
  CHECK(run.kind == "aiperf");
  CHECK(run.excluded == 1);  // the cancelled conv-c
  REQUIRE(run.real.size() == 3);
  CHECK(run.session_ids == std::vector<std::string>{"corr-conv-a", "corr-conv-b"});
  // conv-a turn 0 at 0 s, turn 1 at 0.5 s (8 + 3 resent + 5 new = 16), conv-b at 1.0 s.
  const auto& a0 = run.real[0];
  const auto& a1 = run.real[1];
  const auto& b0 = run.real[2];
  CHECK(a0.session == 0);
  CHECK(a1.session == 0);
  CHECK(a1.seg == 1);
  CHECK(b0.session == 1);
  CHECK(a1.send_s == doctest::Approx(0.5));
  CHECK(b0.send_s == doctest::Approx(1.0));
  CHECK(a1.input_tokens == 16);
  CHECK(a0.ttft_s == doctest::Approx(0.040));
  CHECK(a0.e2el_s == doctest::Approx(0.100));
  // AIPerf's ITL = (latency - TTFT) / (OSL - 1) = (100 - 40) / 2 = 30 ms: the record's own field.
  const auto lines = test::squeezed_lines(test::slurp(kAiperf + "/profile_export.jsonl"));
  const auto rec0 = nlohmann::json::parse(lines[0]);
  CHECK(a0.tpot_s * 1e3 ==
        doctest::Approx(rec0["metrics"]["inter_token_latency"]["value"].get<double>()));
  CHECK(a0.itl == std::vector<sim::GapRun>{{30'000'000, 2}});  // inter_chunk_latency [30, 30] ms
  CHECK(run.duration_s == doctest::Approx(1.14));              // benchmark_duration.avg, sec
  // TTFT [40, 20, 50] ms: mean 110/3; NumPy p90: sorted [20, 40, 50], h = 1.8 -> 40 + 0.8 x 10
  // = 48; p99: h = 1.98 -> 49.8. ITL [30, 25, 30]: mean 85/3. Latency [100, 45, 140]: mean 95,
  // p99 100 + 0.98 x 40 = 139.2. Throughput: 9 tokens / 1.14 s; 3 requests / 1.14 s.
  const auto m = run.metrics(run.real, run.duration_s);
  CHECK(metric(m, "time_to_first_token.avg") == doctest::Approx(110.0 / 3));
  CHECK(metric(m, "time_to_first_token.p90") == doctest::Approx(48));
  CHECK(metric(m, "time_to_first_token.p99") == doctest::Approx(49.8));
  CHECK(metric(m, "inter_token_latency.avg") == doctest::Approx(85.0 / 3));
  CHECK(metric(m, "request_latency.avg") == doctest::Approx(95));
  CHECK(metric(m, "request_latency.p99") == doctest::Approx(139.2));
  CHECK(metric(m, "output_token_throughput") == doctest::Approx(9 / 1.14));
  CHECK(metric(m, "request_throughput") == doctest::Approx(3 / 1.14));
  // The same figures as AIPerf's own aggregate file: the conversion is AIPerf's.
  const auto agg = read_json(kAiperf + "/profile_export_aiperf.json");
  for (const char* s : {"avg", "p50", "p90", "p99"})
    CHECK(metric(m, std::string("time_to_first_token.") + s) ==
          doctest::Approx(agg["time_to_first_token"][s].get<double>()));
  CHECK(metric(m, "inter_token_latency.p99") ==
        doctest::Approx(agg["inter_token_latency"]["p99"].get<double>()));
  CHECK(metric(m, "request_latency.p50") ==
        doctest::Approx(agg["request_latency"]["p50"].get<double>()));
  // Two user sessions replaying one dataset conversation stay two sessions: x_correlation_id.
  const fs::path d = test::scratch("against-aiperf-corr");
  fs::copy(kAiperf, d / "a");
  const auto recs = test::squeezed_lines(test::slurp(kAiperf + "/profile_export.jsonl"));
  auto b = nlohmann::json::parse(recs[2]);
  b["metadata"]["conversation_id"] = "conv-a";
  test::write_file(d / "a" / "profile_export.jsonl",
                   fmt::format("{}\n{}\n{}\n", recs[0], recs[1], b.dump()));
  CHECK(exp::read_aiperf((d / "a").string()).session_ids ==
        std::vector<std::string>{"corr-conv-a", "corr-conv-b"});
}

TEST_CASE("read_guidellm: successful requests, GuideLLM's TPOT includes the first token") {
  const exp::BenchRun run = exp::read_guidellm(kGuide, -1);
  CHECK(run.excluded == 1);  // one errored, none incomplete
  REQUIRE(run.real.size() == 3);
  // r0 (no conversation) at 0; c1 turn 0 at 0.2, turn 1 at 0.6 (6 + 2 resent + 4 new = 12).
  CHECK(run.session_ids == std::vector<std::string>{"request-0", "c1"});
  CHECK(run.real[2].seg == 1);
  CHECK(run.real[2].send_s == doctest::Approx(0.6));
  // Each request's own time_per_output_token_ms and inter_token_latency_ms, as GuideLLM wrote
  // them, come back from the rows: e2el / output and (e2el - ttft) / (output - 1).
  const auto doc = read_json(kGuide);
  const auto& ok = doc["benchmarks"][0]["requests"]["successful"];
  for (size_t i = 0; i < 3; ++i) {
    const auto& r = run.real[i];
    CAPTURE(i);
    CHECK(r.ttft_s * 1e3 == doctest::Approx(ok[i]["time_to_first_token_ms"].get<double>()));
    CHECK(r.e2el_s * 1e3 / static_cast<double>(r.output_tokens) ==
          doctest::Approx(ok[i]["time_per_output_token_ms"].get<double>()));
    CHECK(r.tpot_s * 1e3 == doctest::Approx(ok[i]["inter_token_latency_ms"].get<double>()));
  }
  // TTFT [40, 20, 50]: mean 110/3, median 40, p99 50. TPOT incl. first, weighted by output:
  // (100 + 45 + 140) / (3 + 2 + 4) = 285/9; median: 22.5 x2, 33.3 x3 reaches 4.5 -> 100/3.
  // ITL weighted by output - 1: (60 + 25 + 90) / (2 + 1 + 3) = 175/6; median 30.
  // Duration: last token 0.74 - first start 0; 9 output tokens / 0.74 s.
  const auto m = run.metrics(run.real, run.duration_s);
  CHECK(metric(m, "time_to_first_token_ms.mean") == doctest::Approx(110.0 / 3));
  CHECK(metric(m, "time_to_first_token_ms.median") == doctest::Approx(40));
  CHECK(metric(m, "time_to_first_token_ms.p99") == doctest::Approx(50));
  CHECK(metric(m, "time_per_output_token_ms.mean") == doctest::Approx(285.0 / 9));
  CHECK(metric(m, "time_per_output_token_ms.median") == doctest::Approx(100.0 / 3));
  CHECK(metric(m, "inter_token_latency_ms.mean") == doctest::Approx(175.0 / 6));
  CHECK(metric(m, "inter_token_latency_ms.median") == doctest::Approx(30));
  CHECK(metric(m, "request_latency.mean") == doctest::Approx(0.095));
  CHECK(metric(m, "duration_s") == doctest::Approx(0.74));
  CHECK(metric(m, "output_tokens_per_s") == doctest::Approx(9 / 0.74));
}

TEST_CASE("read_guidellm: the YAML report reads as the JSON one") {
  const fs::path d = test::scratch("against-guidellm-yaml");
  // JSON is YAML (flow style); and a block-style report of one request, written by hand.
  fs::copy(kGuide, d / "benchmarks.yaml");
  const exp::BenchRun a = exp::read_guidellm((d / "benchmarks.yaml").string(), -1);
  const exp::BenchRun j = exp::read_guidellm(kGuide, -1);
  REQUIRE(a.real.size() == j.real.size());
  CHECK(a.real[2].ttft_s == j.real[2].ttft_s);
  CHECK(a.session_ids == j.session_ids);
  test::write_file(d / "one.yml",
                   "benchmarks:\n"
                   "- requests:\n"
                   "    successful:\n"
                   "    - prompt_tokens: 8\n"
                   "      output_tokens: 3\n"
                   "      info:\n"
                   "        conversation_id: null\n"
                   "        timings: {request_start: 10.0, first_token_iteration: 10.5,\n"
                   "                  last_token_iteration: 11}\n"
                   "    errored: []\n"
                   "    incomplete: []\n");
  const exp::BenchRun one = exp::read_guidellm((d / "one.yml").string(), -1);
  REQUIRE(one.real.size() == 1);
  CHECK(one.real[0].ttft_s == 0.5);   // 10.5 - 10
  CHECK(one.real[0].tpot_s == 0.25);  // (11 - 10.5) / (3 - 1)
  CHECK(one.session_ids == std::vector<std::string>{"request-0"});
}

TEST_CASE("read_vllm_bench: the per-request lists give back vLLM's own aggregate fields") {
  const exp::BenchRun run = exp::read_vllm_bench(kBench);
  CHECK_FALSE(run.send_times);
  CHECK(std::isinf(run.request_rate));
  CHECK(run.max_concurrency == 1);
  CHECK(run.excluded == 1);  // errors[3] is not ""
  REQUIRE(run.real.size() == 3);
  // e2el = ttft + sum(itls): 40 + 60 = 100 ms, 50 + 90 = 140, 20 + 0 = 20.
  CHECK(run.real[1].e2el_s == doctest::Approx(0.140));
  CHECK(run.real[2].tpot_s < 0);  // one output token: no TPOT
  // Newer vLLM saves each request's latency: e2el is then that, not ttft + sum(itls).
  auto with_lat = read_json(kBench);
  with_lat["latencies"] = {0.101, 0.141, 0.021, 0.0};
  const fs::path wl = test::scratch("against-latencies") / "l.json";
  test::write_file(wl, with_lat.dump());
  CHECK(exp::read_vllm_bench(wl.string()).real[1].e2el_s == doctest::Approx(0.141));
  const auto m = run.metrics(run.real, run.duration_s);
  const auto doc = read_json(kBench);
  for (const char* k :
       {"mean_ttft_ms", "median_ttft_ms", "std_ttft_ms", "p99_ttft_ms", "mean_tpot_ms",
        "median_tpot_ms", "p99_tpot_ms", "mean_itl_ms", "p99_itl_ms", "mean_e2el_ms",
        "median_e2el_ms", "std_e2el_ms", "p99_e2el_ms", "request_throughput", "output_throughput",
        "total_token_throughput", "duration"}) {
    CAPTURE(k);
    CHECK(metric(m, k) == doctest::Approx(doc[k].get<double>()));
  }
  // By hand: TTFT [40, 50, 20] mean 110/3, std sqrt(((10/3)^2 + (40/3)^2 + (50/3)^2) / 3)
  // = sqrt(4200/27) = 12.4722; e2el [100, 140, 20] p99: h = 1.98 -> 100 + 0.98 x 40 = 139.2;
  // total tokens (8 + 12 + 6) + (3 + 4 + 1) = 34 over 0.2635 s.
  CHECK(metric(m, "std_ttft_ms") == doctest::Approx(std::sqrt(4200.0 / 27)));
  CHECK(metric(m, "p99_e2el_ms") == doctest::Approx(139.2));
  CHECK(metric(m, "total_token_throughput") == doctest::Approx(34 / 0.2635));
}

TEST_CASE("against readers: exact messages for bad files") {
  const fs::path d = test::scratch("against-bad");
  // AIPerf
  CHECK(error_of_call([&] { exp::read_aiperf((d / "nope").string()); }) ==
        (d / "nope").string() +
            ": not a folder (expected AIPerf's artifacts: profile_export.jsonl, "
            "profile_export_aiperf.json)");
  fs::create_directories(d / "ai");
  const std::string jl = (d / "ai" / "profile_export.jsonl").string();
  test::write_file(jl, "\n");
  CHECK(error_of_call([&] { exp::read_aiperf((d / "ai").string()); }) ==
        jl + ": empty; expected AIPerf's per-request records");
  std::string line = test::squeezed_lines(test::slurp(kAiperf + "/profile_export.jsonl"))[0];
  auto rec = nlohmann::json::parse(line);
  rec["metrics"]["time_to_first_token"]["unit"] = "min";
  test::write_file(jl, line + "\n" + rec.dump() + "\n");
  CHECK(error_of_call([&] { exp::read_aiperf((d / "ai").string()); }) ==
        jl + ":2: metrics.time_to_first_token.unit: expected one of ns, us, ms, sec, got \"min\"");
  rec = nlohmann::json::parse(line);
  rec["metrics"]["output_sequence_length"]["unit"] = "ms";
  test::write_file(jl, rec.dump() + "\n");
  CHECK(error_of_call([&] { exp::read_aiperf((d / "ai").string()); }) ==
        jl + ":1: metrics.output_sequence_length.unit: expected \"tokens\", got \"ms\"");
  rec = nlohmann::json::parse(line);
  rec["metadata"].erase("request_start_ns");
  test::write_file(jl, fmt::format("\n{}\n", rec.dump()));  // the record on line 2
  CHECK(error_of_call([&] { exp::read_aiperf((d / "ai").string()); }) ==
        jl + ":2: metadata.request_start_ns: missing");
  test::write_file(jl, line + "\n");
  CHECK(error_of_call([&] { exp::read_aiperf((d / "ai").string()); }) ==
        (d / "ai" / "profile_export_aiperf.json").string() +
            ": cannot open: No such file or directory");
  test::write_file(d / "ai" / "profile_export_aiperf.json",
                   R"({"benchmark_duration": {"unit": "sec"}})");
  CHECK(error_of_call([&] { exp::read_aiperf((d / "ai").string()); }) ==
        (d / "ai" / "profile_export_aiperf.json").string() + ": benchmark_duration.avg: missing");
  // GuideLLM
  const std::string g = (d / "g.json").string();
  test::write_file(g, R"({"benchmarks": []})");
  CHECK(error_of_call([&] { exp::read_guidellm(g, -1); }) ==
        g + ": benchmarks: empty; expected one benchmark at least");
  auto doc = read_json(kGuide);
  doc["benchmarks"].push_back(doc["benchmarks"][0]);
  test::write_file(g, doc.dump());
  CHECK(error_of_call([&] { exp::read_guidellm(g, -1); }) ==
        g + ": benchmarks: 2 benchmarks (a sweep): pick one with --benchmark I (0..1)");
  CHECK(error_of_call([&] { exp::read_guidellm(g, 2); }) ==
        "--benchmark: 2 is past the report's 2 benchmarks (0..1)");
  doc = read_json(kGuide);
  doc["benchmarks"][0]["requests"]["successful"][1]["info"]["timings"].erase(
      "first_token_iteration");
  test::write_file(g, doc.dump());
  CHECK(error_of_call([&] { exp::read_guidellm(g, -1); }) ==
        g + ": benchmarks[0].requests.successful[1].info.timings.first_token_iteration: missing");
  // vllm bench
  const std::string v = (d / "v.json").string();
  doc = read_json(kBench);
  doc.erase("itls");
  test::write_file(v, doc.dump());
  CHECK(error_of_call([&] { exp::read_vllm_bench(v); }) ==
        v + ": itls: missing (the file was saved without --save-detailed; rerun vllm bench serve "
            "with --save-result --save-detailed)");
  doc = read_json(kBench);
  doc["ttfts"].erase(0);
  test::write_file(v, doc.dump());
  CHECK(error_of_call([&] { exp::read_vllm_bench(v); }) ==
        v + ": ttfts: 3 entries, but input_lens has 4");
  doc = read_json(kBench);
  doc["request_rate"] = "fast";
  test::write_file(v, doc.dump());
  CHECK(error_of_call([&] { exp::read_vllm_bench(v); }) ==
        v + ": request_rate: expected a number > 0 or \"inf\", got \"fast\"");
  doc = read_json(kBench);
  doc["itls"][1][2] = "x";
  test::write_file(v, doc.dump());
  CHECK(error_of_call([&] { exp::read_vllm_bench(v); }) ==
        v + ": itls[1][2]: expected a number, got \"x\"");
  doc = read_json(kBench);
  doc["ramp_up_strategy"] = "linear";
  test::write_file(v, doc.dump());
  CHECK(error_of_call([&] { exp::read_vllm_bench(v); }) ==
        v + ": ramp_up_strategy: \"linear\": replaying a ramp-up is not simulated yet (rerun "
            "without --ramp-up-strategy, or with --save-detailed on a vLLM that saves "
            "start_times)");
  test::write_file(v, "{\"duration\": 1,");
  CHECK(error_of_call([&] { exp::read_vllm_bench(v); }).starts_with(v + ": not JSON: "));
}
