// Sweeps beyond one machine (experiments/sweep/sweep_shards.h): run keys and the stable hash,
// shards from a scheduler's environment, resumable journals, their merge and its errors.
#include <doctest/doctest.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/input_error.h"
#include "experiments/sweep/sweep.h"
#include "experiments/sweep/sweep_shards.h"
#include "tests/cli_helpers.h"
#include "tests/experiments/sweep_fixtures.h"

using namespace isim;
using namespace isim::test::sweep;
namespace fs = std::filesystem;

namespace {

// The 12 runs of spec_text(), by run index, and the shard each of 3 holds: FNV-1a 64 of the
// keys modulo 3, computed apart from isim (a few lines of Python).
const std::vector<std::vector<size_t>> kThirds = {{0, 5, 7, 11}, {2, 3, 8, 10}, {1, 4, 6, 9}};

std::map<std::string, const char*> env(
    std::initializer_list<std::pair<std::string, const char*>> l) {
  return std::map<std::string, const char*>(l.begin(), l.end());
}

exp::Shard from(const std::map<std::string, const char*>& e) {
  return exp::shard_from_env([&](const char* name) -> const char* {
    auto it = e.find(name);
    return it == e.end() ? nullptr : it->second;
  });
}

// Writes `text` to `p`, creating its folder.
std::string put(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  return test::write_file(p, text);
}

// The run indices of a journal's records, in file order.
std::vector<size_t> journal_indices(const fs::path& p) {
  std::vector<size_t> out;
  auto ls = lines(test::slurp(p));
  for (size_t i = 1; i < ls.size(); ++i) {
    auto at = ls[i].find("\"index\":");
    REQUIRE(at != std::string::npos);
    out.push_back(std::stoul(ls[i].substr(at + 8)));
  }
  return out;
}

}  // namespace

TEST_CASE("FNV-1a 64 gives the published values") {
  CHECK(exp::fnv1a64("") == 0xcbf29ce484222325ull);
  CHECK(exp::fnv1a64("a") == 0xaf63dc4c8601ec8cull);
  CHECK(exp::fnv1a64("foobar") == 0x85944171f73967e8ull);
}

TEST_CASE("run keys carry the policy's parameters and are unique") {
  auto d = test::scratch("keys");
  std::string t = spec_text();
  t.replace(t.find("policies: [discard, swap]"), 25,
            "policies: [discard, {name: min-waste, estimator: history}, discard]");
  auto s = exp::load_sweep(test::write_file(d / "s.yaml", t), {"sweep.seed=[1]"});
  REQUIRE(s.runs.size() == 6);
  CHECK(s.runs[0].key == "policy=discard arrival.rate=0.5 seed=1");
  CHECK(s.runs[2].key ==
        "policy=min-waste{estimator=history} estimator=history arrival.rate=0.5 seed=1");
  CHECK(s.runs[4].key == "policy=discard arrival.rate=0.5 seed=1 #2");
  CHECK(s.runs[5].key == "policy=discard arrival.rate=2 seed=1 #2");
  CHECK(s.runs[2].key_hash == exp::fnv1a64(s.runs[2].key));
}

TEST_CASE("--shard auto reads Slurm's array and Kubernetes' Indexed Job") {
  auto sl = from(env({{"SLURM_ARRAY_TASK_ID", "7"},
                      {"SLURM_ARRAY_TASK_MIN", "5"},
                      {"SLURM_ARRAY_TASK_COUNT", "4"}}));
  CHECK(sl.k == 3);
  CHECK(sl.n == 4);
  // A task of isim's own script resubmitted alone: Slurm says MIN 2, COUNT 1; ISIM_SHARDS wins.
  auto again = from(env({{"SLURM_ARRAY_TASK_ID", "2"},
                         {"SLURM_ARRAY_TASK_MIN", "2"},
                         {"SLURM_ARRAY_TASK_COUNT", "1"},
                         {"ISIM_SHARDS", "4"}}));
  CHECK(again.k == 3);
  CHECK(again.n == 4);
  CHECK_THROWS_WITH_AS(from(env({{"SLURM_ARRAY_TASK_ID", "4"}, {"ISIM_SHARDS", "4"}})),
                       "--shard auto: SLURM_ARRAY_TASK_ID=4 is out of range: ISIM_SHARDS=4 "
                       "allows 0..3",
                       InputError);
  auto k8 = from(env({{"JOB_COMPLETION_INDEX", "0"}, {"ISIM_SHARDS", "2"}}));
  CHECK(k8.k == 1);
  CHECK(k8.n == 2);
  CHECK_THROWS_WITH_AS(from(env({})),
                       doctest::Contains("--shard auto: no shard in the environment"), InputError);
  CHECK_THROWS_WITH_AS(
      from(env({{"SLURM_ARRAY_TASK_ID", "9"},
                {"SLURM_ARRAY_TASK_MIN", "5"},
                {"SLURM_ARRAY_TASK_COUNT", "4"}})),
      "--shard auto: SLURM_ARRAY_TASK_ID=9 is out of range: the array has 4 task(s) from 5 "
      "(SLURM_ARRAY_TASK_MIN, SLURM_ARRAY_TASK_COUNT); submit it as --array=0-3",
      InputError);
  CHECK_THROWS_WITH_AS(from(env({{"JOB_COMPLETION_INDEX", "2"}, {"ISIM_SHARDS", "2"}})),
                       doctest::Contains("JOB_COMPLETION_INDEX=2 is out of range: ISIM_SHARDS=2"),
                       InputError);
  CHECK_THROWS_WITH_AS(from(env({{"JOB_COMPLETION_INDEX", "x"}})),
                       "--shard auto: JOB_COMPLETION_INDEX='x': expected a whole number",
                       InputError);
  CHECK_THROWS_WITH_AS(from(env({{"JOB_COMPLETION_INDEX", "1"}})),
                       "--shard auto: ISIM_SHARDS='': expected a whole number", InputError);
}

TEST_CASE("isim sweep --shard auto: the shard from the environment, exit 2 out of range") {
  auto d = test::scratch("auto");
  auto path = test::write_file(d / "s.yaml", spec_text());
  std::string out, err;
  ::setenv("SLURM_ARRAY_TASK_ID", "1", 1);
  ::setenv("ISIM_SHARDS", "3", 1);
  const int ok = run_isim("sweep " + path + " --list --shard auto", &out, &err);
  ::setenv("SLURM_ARRAY_TASK_ID", "3", 1);
  const int bad = run_isim("sweep " + path + " --list --shard auto", nullptr, &err);
  ::unsetenv("SLURM_ARRAY_TASK_ID");
  ::unsetenv("ISIM_SHARDS");
  CHECK(ok == 0);
  CHECK(lines(out).size() == kThirds[1].size());  // task 1 of 0..2: shard 2/3
  CHECK(lines(out).at(0).find("    2  policy=discard arrival.rate=0.5 seed=3") == 0);
  CHECK(bad == 2);
  CHECK(err.find("--shard auto: SLURM_ARRAY_TASK_ID=3 is out of range: ISIM_SHARDS=3 allows "
                 "0..2") != std::string::npos);
}

TEST_CASE("shards write journals; merged they give the unsharded results.csv byte for byte" *
          doctest::test_suite("threads")) {
  auto d = test::scratch("journals");
  auto path = test::write_file(d / "s.yaml", spec_text());
  REQUIRE(run_isim("sweep " + path + " --jobs 2 --out " + (d / "all").string()) == 0);
  const std::string sh = (d / "sh").string();
  for (int k = 1; k <= 3; ++k) {
    std::string out;
    REQUIRE(run_isim(fmt::format("sweep {} --shard {}/3 --jobs 2 --out {}", path, k, sh), &out) ==
            0);
    auto j = d / "sh/shards" / fmt::format("shard-{}-of-3.jsonl", k);
    CHECK(journal_indices(j) == kThirds[k - 1]);
    CHECK(out.find("journal: " + j.string() + " (4 run(s))") != std::string::npos);
  }
  CHECK(!fs::exists(d / "sh/results.csv"));
  // The journal is byte-identical for any --jobs.
  REQUIRE(run_isim("sweep " + path + " --shard 2/3 --jobs 1 --out " + (d / "one").string()) == 0);
  CHECK(test::slurp(d / "one/shards/shard-2-of-3.jsonl") ==
        test::slurp(d / "sh/shards/shard-2-of-3.jsonl"));
  // Files in any order, or the folder.
  std::string out;
  REQUIRE(run_isim(fmt::format("sweep merge {} {}/shards/shard-3-of-3.jsonl "
                               "{}/shards/shard-1-of-3.jsonl {}/shards/shard-2-of-3.jsonl",
                               (d / "m.csv").string(), sh, sh, sh),
                   &out) == 0);
  CHECK(out.find("merged 3 file(s), 12 run(s)") != std::string::npos);
  CHECK(test::slurp(d / "m.csv") == test::slurp(d / "all/results.csv"));
  REQUIRE(run_isim("sweep merge " + (d / "m2.csv").string() + " " + sh + "/shards") == 0);
  CHECK(test::slurp(d / "m2.csv") == test::slurp(d / "all/results.csv"));
}

TEST_CASE("a killed shard resumes without redoing its finished runs") {
  auto d = test::scratch("resume");
  auto path = test::write_file(d / "s.yaml", spec_text());
  REQUIRE(run_isim("sweep " + path + " --out " + (d / "all").string()) == 0);
  const std::string sh = (d / "sh").string();
  for (int k = 1; k <= 3; ++k)
    REQUIRE(run_isim(fmt::format("sweep {} --shard {}/3 --out {}", path, k, sh)) == 0);
  // Shard 1 "killed" after its first run, in the middle of writing its second record.
  const auto j1 = d / "sh/shards/shard-1-of-3.jsonl";
  const auto full = lines(test::slurp(j1));
  REQUIRE(full.size() == 5);
  test::write_file(j1, full[0] + "\n" + full[1] + "\n" + full[2].substr(0, 40));
  std::string out, err;
  // The merge refuses the torn journal.
  CHECK(run_isim("sweep merge " + (d / "m.csv").string() + " " + sh + "/shards", nullptr, &err) ==
        2);
  CHECK(err.find(j1.string() + ": its last line is cut short: shard 1/3 was interrupted") !=
        std::string::npos);
  REQUIRE(run_isim(fmt::format("sweep {} --shard 1/3 --resume --out {}", path, sh), &out, &err) ==
          0);
  CHECK(err.find("shard 1/3: 1 of 4 run(s) already finished") != std::string::npos);
  CHECK(err.find("sweep small: 3 run(s) (shard 1/3 of 12)") != std::string::npos);
  CHECK(err.find("its last line was cut short, and was dropped") != std::string::npos);
  CHECK(lines(test::slurp(j1)) == full);  // the kept record first, the rest as a fresh run
  REQUIRE(run_isim("sweep merge " + (d / "m.csv").string() + " " + sh + "/shards") == 0);
  CHECK(test::slurp(d / "m.csv") == test::slurp(d / "all/results.csv"));
  // A finished shard resumed runs nothing; so does a rerun without --resume (the journal is
  // this spec's); --fresh starts anew, and says so.
  REQUIRE(run_isim(fmt::format("sweep {} --shard 1/3 --resume --out {}", path, sh), &out, &err) ==
          0);
  CHECK(err.find("4 of 4 run(s) already finished") != std::string::npos);
  CHECK(err.find("sweep small: 0 run(s)") != std::string::npos);
  REQUIRE(run_isim(fmt::format("sweep {} --shard 1/3 --out {}", path, sh), &out, &err) == 0);
  CHECK(err.find("4 of 4 run(s) already finished") != std::string::npos);
  REQUIRE(run_isim(fmt::format("sweep {} --shard 1/3 --fresh --out {}", path, sh), &out, &err) ==
          0);
  CHECK(err.find("4 finished run(s) were dropped: --fresh starts anew") != std::string::npos);
  // Runs added to the spec keep their shard: the finished ones are kept, the new one runs.
  REQUIRE(
      run_isim(fmt::format("sweep {} --shard 1/3 --resume -p 'sweep.seed=[1, 2, 3, 4]' --out {}",
                           path, sh),
               &out, &err) == 0);
  CHECK(err.find("shard 1/3: 4 of ") != std::string::npos);
}

TEST_CASE("isim sweep merge of journals: every shard and run once, one spec, exit 2 otherwise") {
  auto d = test::scratch("journal-errors");
  auto path = test::write_file(d / "s.yaml", spec_text());
  const std::string sh = (d / "sh").string(), other = (d / "other").string();
  for (int k = 1; k <= 2; ++k) {
    REQUIRE(run_isim(fmt::format("sweep {} --shard {}/2 --out {}", path, k, sh)) == 0);
    REQUIRE(run_isim(fmt::format("sweep {} --shard {}/2 -p engine.max_num_seqs=8 --out {}", path, k,
                                 other)) == 0);
  }
  const std::string j1 = sh + "/shards/shard-1-of-2.jsonl", j2 = sh + "/shards/shard-2-of-2.jsonl";
  const std::string m = (d / "m.csv").string();
  std::string err;
  auto merge = [&](const std::string& inputs) {
    return run_isim("sweep merge " + m + " " + inputs, nullptr, &err);
  };

  CHECK(merge(j1) == 2);
  CHECK(err.find("shard(s) 2 of 2 missing") != std::string::npos);
  CHECK(merge(j1 + " " + j1) == 2);
  CHECK(err.find(j1 + ": shard 1/2 is also " + j1) != std::string::npos);
  CHECK(merge(j1 + " " + other + "/shards/shard-2-of-2.jsonl") == 2);
  CHECK(err.find(":1: spec fingerprint ") != std::string::npos);
  CHECK(err.find("the journals come from different specs") != std::string::npos);
  // A record copied into the other shard: its key twice.
  auto first_record = lines(test::slurp(j1))[1];
  auto dup = put(d / "dup/shard-2-of-2.jsonl", test::slurp(j2) + first_record + "\n");
  CHECK(merge(j1 + " " + dup) == 2);
  CHECK(err.find(dup + ":8: run 'policy=") != std::string::npos);
  CHECK(err.find("' is also at " + j1 + ":2") != std::string::npos);
  // A record dropped: its run is missing.
  auto ls = lines(test::slurp(j2));
  std::string cut = ls[0] + "\n";
  for (size_t i = 2; i < ls.size(); ++i) cut += ls[i] + "\n";
  auto gap = put(d / "gap/shard-2-of-2.jsonl", cut);
  CHECK(merge(j1 + " " + gap) == 2);
  CHECK(err.find("sweep merge: 1 of 12 run(s) missing (run index 1)") != std::string::npos);
  // Another build wrote it.
  auto hdr = ls[0];
  hdr.replace(hdr.find("\"isim\":\"") + 8, 1, "X");
  std::string other_build = hdr + "\n";
  for (size_t i = 1; i < ls.size(); ++i) other_build += ls[i] + "\n";
  auto ob = put(d / "ob/shard-2-of-2.jsonl", other_build);
  CHECK(merge(j1 + " " + ob) == 2);
  CHECK(err.find("the journals come from different builds of isim") != std::string::npos);
  // ... and a shard of another build is not resumed.
  put(d / "obx/shards/shard-2-of-2.jsonl", other_build);
  CHECK(run_isim(fmt::format("sweep {} --shard 2/2 --resume --out {}", path, (d / "obx").string()),
                 nullptr, &err) == 2);
  CHECK(err.find("shard-2-of-2.jsonl:1: written by isim X") != std::string::npos);
  // A header claiming more runs than a sweep may have (the merge walks every index).
  auto big = ls[0];
  big.replace(big.find("\"runs\":12"), 9, "\"runs\":99999999999");
  auto bj = put(d / "big/shard-2-of-2.jsonl", big + "\n");
  CHECK(merge(bj) == 2);
  CHECK(err.find(bj + ":1: runs: 99999999999 is more than the 1000000 runs a sweep may have") !=
        std::string::npos);
  // Not a journal, and journals mixed with CSV files.
  auto junk = test::write_file(d / "junk.jsonl", "{\"a\": 1}\n");
  CHECK(merge(junk) == 2);
  CHECK(err.find(junk + ":1: not an isim sweep shard journal") != std::string::npos);
  auto csv = test::write_file(d / "r.csv", "run_index,policy\n");
  CHECK(merge(j1 + " " + csv) == 2);
  CHECK(err.find("give shard journals (or their folders) or results.csv files, not both") !=
        std::string::npos);
}
