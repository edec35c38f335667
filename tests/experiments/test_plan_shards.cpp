// Sharded plans (experiments/plan/plan_shards.h): shards of candidates, their journals, the merge
// into the plan.csv an unsharded run writes, resuming, and the merge's errors.
#include <doctest/doctest.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "experiments/plan/plan.h"
#include "experiments/plan/plan_shards.h"
#include "tests/cli_helpers.h"
#include "tests/experiments/plan_fixtures.h"

using namespace isim;
namespace fs = std::filesystem;

namespace {

// The hand plan with a second deployment: candidates test/discard, test/preserve,
// second/discard, second/preserve.
std::string two_deployments(const fs::path& d) {
  const std::string spec = test::hand_plan(d);
  const std::string text = test::slurp(spec) + "  second:\n    gpu: other-gpu\n    profile: " +
                           (d / "round.yaml").string() + "\n    price_per_gpu_hour: 3\n";
  return test::write_file(d / "plan2.yaml", text);
}

std::vector<std::string> lines_of(const fs::path& p) {
  std::vector<std::string> v;
  std::stringstream ss(test::slurp(p));
  for (std::string l; std::getline(ss, l);) v.push_back(l);
  return v;
}

}  // namespace

TEST_CASE("plan shards: candidates by key hash; merged they give the unsharded plan.csv") {
  auto d = test::scratch("plan-shards");
  const std::string spec = two_deployments(d);
  const auto plan = exp::load_plan(spec, {});
  REQUIRE(plan.candidates.size() == 4);
  CHECK(exp::candidate_key(plan, 0) == "deployment=test policy=discard");
  CHECK(exp::candidate_key(plan, 3) == "deployment=second policy=preserve");
  // FNV-1a 64 of the keys modulo 3 (computed apart): shard 1 has candidates 1 and 2, shard 2
  // none, shard 3 candidates 0 and 3.
  const exp::Shard s1{1, 3}, s2{2, 3}, s3{3, 3};
  CHECK((exp::plan_shard_contains(plan, 1, s1) && exp::plan_shard_contains(plan, 2, s1)));
  for (size_t c = 0; c < 4; ++c) CHECK(!exp::plan_shard_contains(plan, c, s2));
  CHECK((exp::plan_shard_contains(plan, 0, s3) && exp::plan_shard_contains(plan, 3, s3)));

  REQUIRE(test::run_isim("plan " + spec + " --no-plot --jobs 2 --out " + (d / "all").string()) ==
          0);
  const std::string sh = (d / "sh").string();
  for (int k = 1; k <= 3; ++k) {
    std::string out;
    REQUIRE(test::run_isim(fmt::format("plan {} --shard {}/3 --jobs 2 --out {}", spec, k, sh),
                           &out) == 0);
    CHECK(out.find(fmt::format("({} candidate(s))", k == 2 ? 0 : 2)) != std::string::npos);
  }
  CHECK(!fs::exists(d / "sh/plan.csv"));
  std::string out;
  REQUIRE(test::run_isim(
              "plan merge " + spec + " " + sh + "/shards --no-plot --out " + (d / "m").string(),
              &out) == 0);
  CHECK(test::slurp(d / "m/plan.csv") == test::slurp(d / "all/plan.csv"));
  CHECK(out.find("plan hand: peak 50 sessions/s") != std::string::npos);

  SUBCASE("a killed shard resumes its unfinished candidates only") {
    const auto j3 = d / "sh/shards/plan-shard-3-of-3.jsonl";
    const auto full = lines_of(j3);
    REQUIRE(full.size() == 3);
    test::write_file(j3, full[0] + "\n" + full[1] + "\n" + full[2].substr(0, 30));
    std::string err;
    CHECK(test::run_isim(
              "plan merge " + spec + " " + sh + "/shards --no-plot --out " + (d / "m2").string(),
              nullptr, &err) == 2);
    CHECK(err.find("its last line is cut short: shard 3/3 was interrupted") != std::string::npos);
    REQUIRE(test::run_isim(fmt::format("plan {} --shard 3/3 --resume --out {}", spec, sh), &out,
                           &err) == 0);
    CHECK(err.find("plan shard 3/3: 1 of 2 candidate(s) already finished") != std::string::npos);
    CHECK(err.find("candidate 0 (") == std::string::npos);  // finished: not run again
    CHECK(err.find("candidate 3 (deployment=second policy=preserve)") != std::string::npos);
    CHECK(lines_of(j3) == full);
  }
  SUBCASE("merge errors exit 2") {
    std::string err;
    const std::string j1 = sh + "/shards/plan-shard-1-of-3.jsonl";
    const std::string j3 = sh + "/shards/plan-shard-3-of-3.jsonl";
    CHECK(test::run_isim(
              "plan merge " + spec + " " + j1 + " " + j3 + " --no-plot --out " + (d / "e").string(),
              nullptr, &err) == 2);
    CHECK(err.find("plan merge: shard 2/3 missing") != std::string::npos);
    CHECK(test::run_isim(
              "plan merge " + spec + " " + j1 + " " + j1 + " --no-plot --out " + (d / "e").string(),
              nullptr, &err) == 2);
    CHECK(err.find(j1 + ": shard 1/3 is also " + j1) != std::string::npos);
    // Other overrides than the shards ran with: another plan.
    CHECK(test::run_isim("plan merge " + spec + " " + sh +
                             "/shards -p peak_rate=60 --no-plot --out " + (d / "e").string(),
                         nullptr, &err) == 2);
    CHECK(err.find(":1: spec fingerprint ") != std::string::npos);
    CHECK(err.find("the journal comes from another spec or other -p overrides") !=
          std::string::npos);
    CHECK(test::run_isim("plan " + spec + " --resume --out " + (d / "e").string(), nullptr, &err) ==
          2);
    CHECK(err.find("--resume is for a shard (--shard)") != std::string::npos);
  }
}
