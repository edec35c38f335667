// Reading a plan spec: SLOs flat or nested, every malformed key an InputError naming it, the
// routers axis, and the CLI's exit status 2 with the file, line and key.
#include <doctest/doctest.h>

#include <filesystem>
#include <map>

#include "core/input_error.h"
#include "experiments/plan/plan.h"
#include "tests/experiments/plan_fixtures.h"
#include "tests/test_paths.h"

using namespace isim;
namespace fs = std::filesystem;

using test::hand_plan;
using test::run_isim;

TEST_CASE("a plan's arrival.rate is refused: the plan searches the rate") {
  const std::string prof =
      test::source_dir() + "/calibrate/profiles/a100-80g-gptj-6b.infercept.yaml";
  const auto y = YAML::Load(
      "peak_rate: 10\nslo: {ttft_s.p99: 2}\ntrace: {from: generator}\n"
      "arrival: {rate: 2}\npolicies: [discard]\n"
      "deployments: {a: {profile: " +
      prof + ", price_per_gpu_hour: 1}}\n");
  CHECK_THROWS_WITH_AS(exp::parse_plan(y, "p.yaml", "."),
                       "p.yaml:4: arrival.rate: the plan searches the rate; remove it and give "
                       "the highest rate to serve as peak_rate",
                       InputError);
}

TEST_CASE("SLOs are read flat or nested, and each names a known metric and statistic") {
  const std::string prof =
      test::source_dir() + "/calibrate/profiles/a100-80g-gptj-6b.infercept.yaml";
  auto plan = [&](const std::string& slo) {
    return YAML::Load("peak_rate: 10\nslo: " + slo +
                      "\ntrace: {from: generator}\npolicies: [discard]\n"
                      "deployments: {a: {profile: " +
                      prof + ", price_per_gpu_hour: 1}}\n");
  };
  auto flat = exp::parse_plan(plan("{ttft_s.p99: 2, tpot_s.mean: 0.05}"), "p.yaml", ".");
  auto nested = exp::parse_plan(plan("{ttft_s: {p99: 2}, tpot_s: {mean: 0.05}}"), "p.yaml", ".");
  REQUIRE(flat.slos.size() == 2);
  REQUIRE(nested.slos.size() == 2);
  for (size_t i = 0; i < 2; ++i) {
    CHECK(flat.slos[i].key == nested.slos[i].key);
    CHECK(flat.slos[i].limit == nested.slos[i].limit);
  }
  CHECK(flat.slos[1].key == "tpot_s.mean");
  CHECK(flat.deployments[0].gpu == "A100-SXM4-80GB");  // from the profile when not given
  CHECK(flat.deployments[0].profile_source == "published");
  CHECK_THROWS_WITH_AS(exp::parse_plan(plan("{ttft_s.p99: 2, ttft_s: {p99: 3}}"), "p.yaml", "."),
                       doctest::Contains("listed twice"), InputError);
  CHECK_THROWS_WITH_AS(exp::parse_plan(plan("{ttft_s: 2}"), "p.yaml", "."),
                       doctest::Contains("expected ttft_s.STAT"), InputError);
}

TEST_CASE("every malformed plan key is an InputError naming the key") {
  const std::string prof =
      test::source_dir() + "/calibrate/profiles/a100-80g-gptj-6b.infercept.yaml";
  const std::string dep = "{a: {profile: " + prof + ", price_per_gpu_hour: 1}}";
  // A valid plan with `key` replaced by `value` (or removed when value is empty).
  auto plan = [&](const std::string& key, const std::string& value) {
    std::vector<std::pair<std::string, std::string>> kv = {
        {"peak_rate", "10"},          {"slo", "{ttft_s.p99: 2}"}, {"trace", "{from: generator}"},
        {"policies", "[discard]"},    {"deployments", dep},       {"seeds", "[1, 2]"},
        {"search", "{start_rate: 1}"}};
    std::string y;
    bool found = false;
    for (auto& [k, v] : kv) {
      if (k == key) {
        found = true;
        if (value.empty()) continue;
        v = value;
      }
      y += k + ": " + v + "\n";
    }
    if (!found) y += key + ": " + value + "\n";
    return YAML::Load(y);
  };
  auto bad = [&](const std::string& key, const std::string& value, const std::string& what) {
    CAPTURE(key);
    CAPTURE(value);
    CHECK_THROWS_WITH_AS(exp::parse_plan(plan(key, value), "p.yaml", "."),
                         doctest::Contains(what.c_str()), InputError);
  };
  CHECK_NOTHROW(exp::parse_plan(plan("name", "ok"), "p.yaml", "."));
  bad("peak_rate", "", "peak_rate: missing");
  bad("peak_rate", "fast", "peak_rate");
  bad("slo", "", "slo: missing");
  bad("slo", "[ttft_s.p99]", "expected a map of METRIC.STAT");
  bad("slo", "{}", "expected an SLO");
  bad("seeds", "3", "seeds: expected a non-empty list");
  bad("seeds", "[-1]", "seeds[0]");
  bad("search", "{tolerance: 1}", "search.tolerance: must be < 1");
  bad("search", "{tolerance: 0}", "search.tolerance: must be > 0");
  bad("search", "{window_s: -5}", "search.window_s: must be > 0");
  bad("search", "{start_rate: 5, max_rate: 2}", "expected min_rate <= start_rate <= max_rate");
  bad("search", "{start_rate: 1, min_rate: 2}", "expected min_rate <= start_rate <= max_rate");
  bad("search", "{max_fleet_factor: 0.5}", "search.max_fleet_factor: must be >= 1");
  bad("search", "{max_fleet_factor: many}", "search.max_fleet_factor: expected a factor >= 1");
  bad("trace", "", "trace: missing");
  bad("trace", "{from: generator, sessions: 10}", "trace.sessions: set by the plan");
  bad("trace", "{from: nonsense}", "unknown trace source 'nonsense'");
  bad("arrival", "{process: replay}", "replay needs a trace file with arrival times");
  bad("arrival", "{process: uniform}", "unknown process 'uniform'");
  bad("arrival", "{process: users}",
      "arrival.process: users is a closed loop whose load is its "
      "number of users; the plan searches an arrival rate");
  bad("deployments", "", "deployments: expected a map of deployment names");
  bad("deployments", "{}", "deployments: expected a map of deployment names");
  bad("deployments", "{a: " + prof + "}", "deployments.a: expected {gpu, profile");
  bad("deployments", "{a: {price_per_gpu_hour: 1}}", "deployments.a.profile: missing");
  bad("deployments", "{a: {profile: " + prof + "}}", "deployments.a.price_per_gpu_hour: missing");
  bad("deployments", "{a: {profile: " + prof + ", price_per_gpu_hour: 1, colour: red}}",
      "unknown key");
  // tp below 1 is out of bounds, named by its key (issue 36), not "give a profile for tp 0".
  bad("deployments", "{a: {profile: " + prof + ", price_per_gpu_hour: 1, tp: 0}}",
      "deployments.a.tp: must be >= 1 (GPUs per replica), got 0");
  bad("deployments", "{a: {profile: " + prof + ", price_per_gpu_hour: 1, tp: 2}}",
      "deployments.a.tp: the profile models tp 1");
  bad("deployments",
      "{a: {profile: " + prof + ", price_per_gpu_hour: 1, engine: {max_num_seqs: 0}}}",
      "engine.max_num_seqs: must be > 0");
  bad("policies", "", "deployments.a.policies: missing");
  bad("policies", "[]", "policies: expected a non-empty list");
  bad("policies", "[discard, discard]", "discard listed twice");
  bad("policies", "[{name: min-waste, estimator: psychic}]", "psychic");
  // A deployment's own policies and engine replace and refine the top-level ones.
  auto own = exp::parse_plan(
      plan("deployments", "{a: {profile: " + prof +
                              ", price_per_gpu_hour: 1, policies: [preserve, swap], engine: "
                              "{scheduler: chunked}}}"),
      "p.yaml", ".");
  REQUIRE(own.candidates.size() == 2);
  CHECK(own.candidates[0].policy == "preserve");
  CHECK(own.candidates[1].experiment.engine.scheduler == "chunked");
}

TEST_CASE("isim plan exits 2 with the file, line and key of a bad spec") {
  auto d = test::scratch("errors");
  const std::string spec = hand_plan(d);
  auto expect = [&](const std::string& args, const std::string& what) {
    std::string err;
    CAPTURE(args);
    CHECK(run_isim("plan " + args + " --no-plot --out " + (d / "o").string(), nullptr, &err) == 2);
    CHECK_MESSAGE(err.find(what) != std::string::npos, err);
  };
  auto with = [&](const std::string& slo, const std::string& extra = "") {
    auto sub = d / std::to_string(std::hash<std::string>{}(slo + extra));
    fs::create_directories(sub);
    return hand_plan(sub, slo, extra);
  };
  expect(with("{ttfb_s.p99: 2}"),
         ":6: slo.ttfb_s.p99: unknown SLO metric 'ttfb_s'; valid: e2e_s, normalized_latency_s, "
         "resume_ttft_s, tpot_s, ttft_s");
  expect(with("{ttft_s.p97: 2}"), ":6: slo.ttft_s.p97: expected ttft_s.STAT with STAT one of mean");
  expect(with("{ttft_s.p99: -1}"), ":6: slo.ttft_s.p99: must be > 0");
  expect(with("{ttft_s.p99: 5e9}"),
         ":6: slo.ttft_s.p99: must be a finite upper limit in (0, 4000000000] in the metric's "
         "unit (the limit on a time, about 126 years), got 5000000000");
  expect(spec + " -p deployments.test.price_per_gpu_hour=0",
         "deployments.test.price_per_gpu_hour: must be > 0");
  expect(spec + " -p deployments.test.profile=nope.yaml", "deployments.test.profile: no such file");
  expect(spec + " -p deployments.test.tp=2", "deployments.test.tp: the profile models tp 1");
  expect(spec + " -p arrival.rate=3", "arrival.rate: the plan searches the rate");
  expect(spec + " -p trace.draw=30", "trace.draw: set by the plan");
  expect(spec + " -p peak_rate=0", "peak_rate: must be > 0");
  expect(spec + " -p search.warmup=1", "search.warmup: must be < 1");
  expect(spec + " -p search.colour=red", "unknown key");
  expect(spec + " -p 'seeds=[1, 1]'", "seeds[1]: listed twice");
  expect(spec + " -p policy=nonsense", "unknown key");
  expect(with("{ttft_s.p99: 2}", "    policies: [nonsense]\n"), "nonsense");
  expect(spec + " --jobs 0", "--jobs: expected an integer in 1..1024 (worker threads), got '0'");
  expect(spec + " --jobs -1", "--jobs: expected an integer in 1..1024 (worker threads), got '-1'");
  std::string err;
  CHECK(run_isim("plan", nullptr, &err) == 2);
  CHECK(err.find("needs SPEC.yaml") != std::string::npos);
  CHECK(run_isim("plan " + (d / "missing.yaml").string(), nullptr, &err) == 2);
  CHECK(err.find("missing.yaml") != std::string::npos);
}

TEST_CASE("routers: a list of router names or {name, params}, each checked with its line") {
  const std::string prof =
      test::source_dir() + "/calibrate/profiles/a100-80g-gptj-6b.infercept.yaml";
  auto plan = [&](const std::string& routers) {
    std::string y =
        "peak_rate: 10\n"                                     // 1
        "slo: {ttft_s.p99: 2}\n"                              // 2
        "trace: {from: generator}\n"                          // 3
        "policies: [discard, preserve]\n";                    // 4
    if (!routers.empty()) y += "routers: " + routers + "\n";  // 5
    y += "deployments: {a: {profile: " + prof + ", price_per_gpu_hour: 1}}\n";
    return YAML::Load(y);
  };
  auto parse = [&](const std::string& routers) {
    return exp::parse_plan(plan(routers), "p.yaml", ".");
  };
  auto bad = [&](const std::string& routers, const std::string& what) {
    CAPTURE(routers);
    CHECK_THROWS_WITH_AS(parse(routers), doctest::Contains(what.c_str()), InputError);
  };

  const auto def = parse("");
  REQUIRE(def.routers.size() == 1);
  CHECK(def.routers[0].name == "session-affinity");
  CHECK(def.routers[0].params.empty());

  const auto two = parse("[round-robin, {name: power-of-two, seed: 7}]");
  REQUIRE(two.routers.size() == 2);
  CHECK(two.routers[0].label == "round-robin");
  CHECK(two.routers[1].name == "power-of-two");
  CHECK(two.routers[1].label == "power-of-two(seed=7)");
  CHECK(two.routers[1].params.values == std::map<std::string, std::string>{{"seed", "7"}});
  // The capacity search does not depend on the router: still one per deployment and policy.
  CHECK(two.candidates.size() == 2);

  bad("round-robin", "p.yaml:5: routers: expected a non-empty list of routers");
  bad("[]", "p.yaml:5: routers: expected a non-empty list of routers");
  bad("\n  - round-robin\n  - nearest",
      "p.yaml:7: routers[1]: unknown router 'nearest'; valid: dp-lb, kv-aware, least-loaded, "
      "power-of-two, round-robin, session-affinity");
  bad("[{name: kv-aware, overlap_weight: -1}]",
      "p.yaml:5: routers[0].overlap_weight: must be >= 0");
  bad("[{name: round-robin, seed: 3}]",
      "p.yaml:5: routers[0].seed: unknown parameter; router 'round-robin' takes no parameters");
  bad("[{seed: 3}]", "p.yaml:5: routers[0].name: missing router name");
  bad("[[round-robin]]", "p.yaml:5: routers[0]: expected a router name or {name: ..., params}");
  bad("[round-robin, round-robin]", "p.yaml:5: routers[1]: round-robin listed twice");

  // And through the CLI, from the plan file (its routers: line is 11).
  auto d = test::scratch("routers");
  std::string err;
  CHECK(run_isim("plan " + hand_plan(d, "{ttft_s.p99: 0.2}", "", "[nearest]") +
                     " --no-plot --out " + (d / "o").string(),
                 nullptr, &err) == 2);
  CHECK_MESSAGE(
      err.find("plan.yaml:11: routers[0]: unknown router 'nearest'; valid: ") != std::string::npos,
      err);
}
