// The event trace of a run (experiments/run/event_trace.h, `isim run --trace-events`): exact spans,
// iterations and KV counters of hand-computed runs; the file against the trace event format's
// documented fields on fleets; the event limit; determinism; the flags' errors.
#include <doctest/doctest.h>

#include <filesystem>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiments/run/event_trace.h"
#include "tests/cli_helpers.h"
#include "tests/experiments/trace_event_checks.h"
#include "tests/sim_fixtures.h"
#include "tests/test_paths.h"

using namespace isim;
namespace fs = std::filesystem;
using nlohmann::json;
using test::seg;

namespace {

// One run on the round profile (T(x) = 10 ms + 1 ms/token, 4-token blocks, 4 ms per block
// swapped) with an EventTrace; the file parsed.
json traced(const trace::Trace& t, const std::string& policy, int64_t limit = 1000) {
  sim::EngineConfig cfg;
  cfg.gpu_blocks = 10;
  cfg.cpu_blocks = 100;
  cfg.max_num_batched_tokens = 64;
  cfg.check_invariants = true;
  sim::SimExecutor ex(test::round_profile());
  auto pol = policy::policy_registry().create(policy, "test", policy::PolicyParams{});
  exp::EventTrace rec({"replica 0"}, limit);
  cluster::SingleReplica single;
  cluster::simulate(t, {cluster::ReplicaSpec{cfg, &ex, pol.get(), "", nullptr, &rec}}, single,
                    true);
  return json::parse(rec.text({{"policy", policy}}));
}

using Span = std::tuple<std::string, double, double>;  // name, ts, dur (microseconds)

// The X events of track (pid, tid), in file order.
std::vector<Span> spans(const json& doc, int pid, int tid) {
  std::vector<Span> out;
  for (const auto& e : doc["traceEvents"])
    if (e["ph"] == "X" && e["pid"] == pid && e["tid"] == tid)
      out.emplace_back(e["name"], e["ts"].get<double>(), e["dur"].get<double>());
  return out;
}

// The values of counter `name` of pid 1, as (ts, used).
std::vector<std::pair<double, int64_t>> counter(const json& doc, const std::string& name) {
  std::vector<std::pair<double, int64_t>> out;
  for (const auto& e : doc["traceEvents"])
    if (e["ph"] == "C" && e["name"] == name) out.emplace_back(e["ts"], e["args"]["used"]);
  return out;
}

const json* iteration_at(const json& doc, double ts) {
  for (const auto& e : doc["traceEvents"])
    if (e["ph"] == "X" && e["cat"] == "iteration" && e["ts"] == ts) return &e;
  return nullptr;
}

int run_isim(const std::string& args, std::string* err = nullptr) {
  return test::run_bin("isim", args, nullptr, err);
}

std::string profile_path() {
  return test::source_dir() + "/calibrate/profiles/a100-80g-gptj-6b.infercept.yaml";
}

// A spec on the built-in generator (no data needed), with `extra` appended.
std::string write_spec(const fs::path& dir, const std::string& extra) {
  return test::write_file(dir / "spec.yaml",
                          "name: ev\nseed: 3\ntrace: {from: generator, sessions: 24}\n"
                          "arrival: {process: poisson, rate: 4}\nprofile: " +
                              profile_path() + "\n"
                              "metrics: {timeseries_interval_s: 0.5}\n" +
                              extra);
}

}  // namespace

TEST_CASE("event trace, preserve: two sessions' spans, the iterations and KV use, by hand") {
  // a: arrives at 0, prompt 8, 3 outputs, a 0.5 s `tool` intercept, 4 returned, 2 outputs.
  // b: arrives at 5 ms, prompt 4, 2 outputs. vllm-v0 runs prefills alone, before decodes.
  //   [0,18)    prefill a (8 tokens: 10 + 8 ms)             a: 2 blocks
  //   5 ms      b arrives, queued behind the iteration
  //   [18,32)   prefill b (4 tokens); a decodes from 18 but waits for its batch   b: 1 block
  //   [32,44)   decode a, b (12 ms)                          a: 3 blocks (9 tokens), b: 2
  //   44        b emits its 2nd and last token: finished, its 2 blocks freed
  //   [44,55)   decode a -> its 3rd token: paused at 55 with 10 tokens in 3 blocks (kept)
  //   555       the intercept ends: prefill 1 + 4 = 5 tokens [555,570)  a: 4 blocks
  //   [570,581) decode a -> its last token: finished at 581, every block freed.
  const trace::Trace t = {trace::Session{"a", 0.0, {seg(8, 3, "tool", 0.5), seg(4, 2)}},
                          trace::Session{"b", 0.005, {seg(4, 2)}}};
  const json doc = traced(t, "preserve");
  CHECK(test::trace_event_problems(doc).empty());
  // Sessions are pid 2 (one replica); a is tid 1, b tid 2. Spans close in time order.
  CHECK(spans(doc, 2, 1) == std::vector<Span>{{"prefill", 0, 18000},
                                              {"decode", 18000, 37000},
                                              {"paused: tool", 55000, 500000},
                                              {"prefill", 555000, 15000},
                                              {"decode", 570000, 11000}});
  CHECK(spans(doc, 2, 2) == std::vector<Span>{{"queued", 5000, 13000},
                                              {"prefill", 18000, 14000},
                                              {"decode", 32000, 12000}});
  CHECK(spans(doc, 1, 1) == std::vector<Span>{{"prefill", 0, 18000},
                                              {"prefill", 18000, 14000},
                                              {"decode", 32000, 12000},
                                              {"decode", 44000, 11000},
                                              {"prefill", 555000, 15000},
                                              {"decode", 570000, 11000}});
  const json* both = iteration_at(doc, 32000);
  REQUIRE(both);
  CHECK((*both)["args"]["batch_size"] == 2);
  CHECK((*both)["args"]["decode_tokens"] == 2);
  CHECK((*both)["args"]["prefill_tokens"] == 0);
  CHECK((*both)["args"]["duration_ms"] == 12.0);
  const json* resume = iteration_at(doc, 555000);
  REQUIRE(resume);
  CHECK((*resume)["args"]["prefill_tokens"] == 5);
  CHECK((*resume)["args"]["batch_size"] == 1);
  // Only changes are recorded: 0 before the first batch, then the blocks held after each.
  CHECK(counter(doc, "KV GPU blocks") == std::vector<std::pair<double, int64_t>>{
                                             {0, 0}, {0, 2}, {18000, 3}, {32000, 5},
                                             {44000, 3}, {555000, 4}, {581000, 0}});
  CHECK(counter(doc, "KV CPU blocks") == std::vector<std::pair<double, int64_t>>{{0, 0}});
  // Names of the tracks and what the file says about itself.
  int names = 0;
  for (const auto& e : doc["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "thread_name" && e["pid"] == 2)
      names += (e["tid"] == 1 && e["args"]["name"] == "a") + (e["tid"] == 2 && e["args"]["name"] == "b");
  CHECK(names == 2);
  CHECK(doc["displayTimeUnit"] == "ms");
  CHECK(doc["otherData"]["truncated"] == false);
  CHECK(doc["otherData"]["policy"] == "preserve");
  // 8 spans + 6 iterations + 8 counter values.
  CHECK(doc["otherData"]["events"] == 22);
}

TEST_CASE("event trace, swap and discard: swapped and recomputing spans, by hand") {
  // One session: prompt 8, 3 outputs, a 0.5 s `qa` intercept, 4 returned, 2 outputs:
  // [0,18) prefill, [18,29) and [29,40) decodes, paused at 40 with 10 tokens in 3 blocks.
  const trace::Trace t = {trace::Session{"a", 0.0, {seg(8, 3, "qa", 0.5), seg(4, 2)}}};
  SUBCASE("swap: the KV on the CPU through the intercept") {
    // At 40 the next iteration copies the 3 blocks out (a 12 ms stall, nothing batched): the
    // session's KV is on the CPU from 40 until the intercept ends at 540. Then a 12 ms
    // swap-in iteration [540,552) while it waits queued; prefill 5 [552,567); decode [567,578).
    const json doc = traced(t, "swap");
    CHECK(test::trace_event_problems(doc).empty());
    CHECK(spans(doc, 2, 1) == std::vector<Span>{{"prefill", 0, 18000},
                                                {"decode", 18000, 22000},
                                                {"swapped: qa", 40000, 500000},
                                                {"queued", 540000, 12000},
                                                {"prefill", 552000, 15000},
                                                {"decode", 567000, 11000}});
    const json* out = iteration_at(doc, 40000);
    REQUIRE(out);
    CHECK((*out)["name"] == "swap only");
    CHECK((*out)["dur"] == 12000);
    CHECK((*out)["args"]["stall_ms"] == 12.0);
    CHECK((*out)["args"]["batch_size"] == 0);
    CHECK(counter(doc, "KV CPU blocks") ==
          std::vector<std::pair<double, int64_t>>{{0, 0}, {40000, 3}, {540000, 0}});
    CHECK(counter(doc, "KV GPU blocks") == std::vector<std::pair<double, int64_t>>{
                                               {0, 0}, {0, 2}, {18000, 3}, {40000, 0},
                                               {540000, 3}, {552000, 4}, {578000, 0}});
  }
  SUBCASE("discard: the whole context rebuilt after the intercept") {
    // Discarded at 40; at 540 all 15 tokens are prefilled, 10 of them recomputed: [540,565);
    // decode [565,576).
    const json doc = traced(t, "discard");
    CHECK(test::trace_event_problems(doc).empty());
    CHECK(spans(doc, 2, 1) == std::vector<Span>{{"prefill", 0, 18000},
                                                {"decode", 18000, 22000},
                                                {"paused: qa", 40000, 500000},
                                                {"recomputing", 540000, 25000},
                                                {"decode", 565000, 11000}});
    const json* rebuild = iteration_at(doc, 540000);
    REQUIRE(rebuild);
    CHECK((*rebuild)["args"]["recompute_tokens"] == 15);
  }
}

TEST_CASE("event trace: the limit stops recording and the file still says so") {
  const trace::Trace t = {trace::Session{"a", 0.0, {seg(8, 3, "tool", 0.5), seg(4, 2)}},
                          trace::Session{"b", 0.005, {seg(4, 2)}}};
  const json doc = traced(t, "preserve", 7);
  CHECK(test::trace_event_problems(doc).empty());
  CHECK(doc["otherData"]["truncated"] == true);
  CHECK(doc["otherData"]["events"] == 7);
  CHECK(doc["otherData"]["limit"] == 7);
  int recorded = 0;
  for (const auto& e : doc["traceEvents"]) recorded += e["ph"] != "M";
  CHECK(recorded == 7);
  // Exactly at the limit is not truncated: the preserve run above records 22 events.
  CHECK(traced(t, "preserve", 22)["otherData"]["truncated"] == false);
  CHECK(traced(t, "preserve", 21)["otherData"]["truncated"] == true);
}

TEST_CASE("event_trace_path: FILE for one policy, FILE with .POLICY before .json for several") {
  CHECK(exp::event_trace_path("out/t.json", "swap", 1) == "out/t.json");
  CHECK(exp::event_trace_path("out/t.json", "swap", 2) == "out/t.swap.json");
  CHECK(exp::event_trace_path("out/trace", "min-waste", 3) == "out/trace.min-waste");
}

TEST_CASE("isim run --trace-events on a fleet: valid files, one per policy, deterministic") {
  const fs::path d = test::scratch("event-trace-fleet");
  const std::string spec =
      write_spec(d, "policies: [swap, discard]\ncluster: {replicas: 2, router: kv-aware}\n");
  std::string err;
  REQUIRE(run_isim("run " + spec + " --out " + (d / "o").string() + " --trace-events " +
                       (d / "t.json").string(),
                   &err) == 0);
  for (const char* p : {"swap", "discard"}) {
    CAPTURE(p);
    const std::string file = (d / (std::string("t.") + p + ".json")).string();
    CHECK(err.find(std::string(p) + ": ") != std::string::npos);
    CHECK(err.find("-> " + file) != std::string::npos);
    const json doc = json::parse(test::slurp(file));
    const auto problems = test::trace_event_problems(doc);
    CHECK(problems.empty());
    for (size_t i = 0; i < std::min<size_t>(problems.size(), 5); ++i) MESSAGE(problems[i]);
    CHECK(doc["otherData"]["replicas"] == 2);
    std::map<std::string, int> names;
    for (const auto& e : doc["traceEvents"])
      if (e["ph"] == "M" && e["name"] == "process_name") ++names[e["args"]["name"]];
    CHECK(names == std::map<std::string, int>{{"replica 0", 1}, {"replica 1", 1}, {"sessions", 1}});
  }
  CHECK_FALSE(fs::exists(d / "t.json"));
  // The same run again: the same bytes; and the run's own outputs do not change with a trace.
  REQUIRE(run_isim("run " + spec + " --out " + (d / "p").string() + " --trace-events " +
                   (d / "u.json").string()) == 0);
  REQUIRE(run_isim("run " + spec + " --out " + (d / "q").string()) == 0);
  CHECK(test::slurp(d / "t.swap.json") == test::slurp(d / "u.swap.json"));
  for (const char* f : {"summary.json", "sessions.csv", "timeseries.csv"})
    CHECK(test::slurp(d / "o/discard" / f) == test::slurp(d / "q/discard" / f));
}

TEST_CASE("isim run --trace-events, flag form: a disaggregated fleet and the limit") {
  const fs::path d = test::scratch("event-trace-flags");
  SUBCASE("a P:D fleet's KV transfers keep every session's spans apart") {
    const std::string spec = write_spec(d, "policy: preserve\ncluster: {replicas: 3, roles: \"1:2\"}\n");
    REQUIRE(run_isim("run " + spec + " --out " + (d / "o").string() + " --trace-events " +
                     (d / "t.json").string()) == 0);
    const json doc = json::parse(test::slurp(d / "t.json"));
    CHECK(test::trace_event_problems(doc).empty());
    int imports = 0;
    for (const auto& e : doc["traceEvents"]) imports += e.value("name", "") == "importing KV";
    CHECK(imports > 0);
  }
  SUBCASE("the flag form, cut at --trace-events-limit, warns once") {
    const std::string trace = test::data_dir() + "/infercept-excerpt.json";
    std::string err;
    REQUIRE(run_isim("run --trace " + trace + " --from infercept --rate 2 --profile " +
                         profile_path() + " --policy preserve --out " + (d / "o").string() +
                         " --trace-events " + (d / "t.json").string() +
                         " --trace-events-limit 40",
                     &err) == 0);
    const json doc = json::parse(test::slurp(d / "t.json"));
    CHECK(test::trace_event_problems(doc).empty());
    CHECK(doc["otherData"]["truncated"] == true);
    CHECK(doc["otherData"]["events"] == 40);
    size_t warnings = 0;
    for (size_t at = err.find("warning:"); at != std::string::npos; at = err.find("warning:", at + 1))
      ++warnings;
    CHECK(warnings == 1);
    CHECK(err.find("warning: preserve: the event trace stopped at --trace-events-limit 40 events") !=
          std::string::npos);
  }
}

TEST_CASE("isim run: bad --trace-events flags exit 2 naming the flag, before any run") {
  const fs::path d = test::scratch("event-trace-bad");
  const std::string spec = write_spec(d, "policy: preserve\n");
  const std::string base = "run " + spec + " --out " + (d / "o").string();
  for (const char* v : {"0", "-3", "1.5", "abc", "20000001", "1e3"}) {
    CAPTURE(v);
    std::string err;
    CHECK(run_isim(base + " --trace-events " + (d / "t.json").string() +
                       " --trace-events-limit='" + v + "'",
                   &err) == 2);
    CHECK(err.find("--trace-events-limit: expected a whole number from 1 to 20000000 (events), "
                   "got '" + std::string(v) + "'") != std::string::npos);
  }
  std::string err;
  CHECK(run_isim(base + " --trace-events " + (d / "t.json").string() + " --trace-events-limit=",
                 &err) == 2);  // Boost's own error: an empty value
  CHECK(run_isim(base + " --trace-events-limit 10", &err) == 2);
  CHECK(err.find("--trace-events-limit: needs --trace-events FILE.json") != std::string::npos);
  CHECK(run_isim(base + " --trace-events " + (d / "nowhere/t.json").string(), &err) == 2);
  CHECK(err.find("the folder " + (d / "nowhere").string() + " does not exist") !=
        std::string::npos);
  CHECK_FALSE(fs::exists(d / "o" / "preserve"));  // refused before the run
}

TEST_CASE("the trace checks themselves catch what they look for") {
  auto problems = [](const std::string& events) {
    return test::trace_event_problems(json::parse(
        R"({"traceEvents":[{"name":"process_name","ph":"M","pid":2,"tid":0,)"
        R"("args":{"name":"sessions"}},)" +
        events + "]}"));
  };
  CHECK(problems(R"({"name":"a","cat":"x","ph":"X","ts":0,"dur":5,"pid":2,"tid":1})").empty());
  CHECK(problems(R"({"name":"a","cat":"x","ph":"X","ts":0,"pid":2,"tid":1})").size() == 1);
  CHECK(problems(R"({"name":"a","cat":"x","ph":"X","ts":0,"dur":-1,"pid":2,"tid":1})").size() == 1);
  CHECK(problems(R"({"name":"a","cat":"x","ph":"X","ts":0,"dur":5,"pid":2,"tid":1},)"
                 R"({"name":"b","cat":"x","ph":"X","ts":4,"dur":5,"pid":2,"tid":1})")
            .size() == 1);
  CHECK(problems(R"({"name":"k","ph":"C","ts":0,"pid":1,"args":{"used":"3"}})").size() == 1);
  CHECK(problems(R"({"name":"k","ph":"C","ts":"0","pid":1,"args":{"used":3}})").size() == 1);
  CHECK(problems(R"({"name":"thread_name","ph":"M","pid":1,"tid":1,"args":{"name":7}})").size() ==
        1);
  CHECK(problems(R"({"name":"m","ph":"i","s":"x","ts":0,"pid":1,"tid":1})").size() == 1);
  CHECK(problems(R"({"name":"q","ph":"B","ts":0,"pid":1,"tid":1})").size() == 1);
}
