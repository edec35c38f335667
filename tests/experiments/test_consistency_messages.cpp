// Messages that name the spec's file, line and key rather than something else (issue 36):
// a negative kv-aware overlap_weight, an unknown min-waste estimator, a think time past the
// limit on a time; and `trace stats` refusing forks that form a cycle instead of counting them
// as subagents.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "tests/cli_helpers.h"
#include "tests/spec_helpers.h"

namespace {

// Lines 1-2; what follows starts on line 3.
const char* const kTwoLines = "trace: {from: jsonl, path: t.jsonl}\nprofile: p.yaml\n";

}  // namespace

TEST_CASE("consistency messages: a component parameter's error names the spec file and line") {
  // overlap_weight is on line 8.
  CHECK(isim::test::error_of(std::string(kTwoLines) +
                             "policy: swap\ncluster:\n  replicas: 2\n  router:\n"
                             "    name: kv-aware\n    overlap_weight: -1\n") ==
        "e.yaml:8: cluster.router.overlap_weight: must be >= 0");
  // estimator is on line 5.
  CHECK(isim::test::error_of(std::string(kTwoLines) +
                             "policy:\n  name: min-waste\n  estimator: psychic\n") ==
        "e.yaml:5: policy.estimator: unknown estimator 'psychic'; valid: elapsed, history, oracle");
}

TEST_CASE(
    "consistency messages: a generator's think time past the limit names trace.think_time_s") {
  // Before, the generator refused it when drawing, as "multiturn generator: think_time_s.mean".
  CHECK(isim::test::error_of("trace: {from: multiturn, sessions: 2, think_time_s: 1e10}\n"
                             "profile: p.yaml\npolicy: swap\n") ==
        "e.yaml:1: trace.think_time_s: must be <= 4000000000 (about 126 years, the limit on a "
        "time)");
}

TEST_CASE("consistency messages: trace stats refuses a fork cycle instead of counting subagents") {
  const auto d = isim::test::scratch("fork-cycle");
  const std::string t = isim::test::write_file(
      d / "cycle.jsonl",
      R"({"id":"a","arrival_s":0,"segments":[{"input":4,"output":1,"context_event":{"kind":"fork","parent":"b","tokens":2}}]})"
      "\n"
      R"({"id":"b","arrival_s":0,"segments":[{"input":4,"output":1,"context_event":{"kind":"fork","parent":"a","tokens":2}}]})"
      "\n");
  std::string out, err;
  CHECK(isim::test::run_bin("isim", "trace stats " + t, &out, &err) == 2);
  CHECK(out.empty());
  CHECK(err.find(t + R"(:1: segments[0].context_event.parent: the forks form a cycle "a" -> "b" )"
                     R"(-> "a" (each forks from the next); expected every chain of parents to )"
                     "end at a session that forks from none\n") != std::string::npos);
}
