// Issue 36, refusals before any output: every verb reads and checks its inputs (trace,
// profiles, journals, a swept profile, a vLLM run's replay inputs) before it makes its output
// folder or writes a file, so that a refusal (exit 2) leaves nothing behind.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "tests/cli_helpers.h"
#include "tests/experiments/vllm_meta_fixture.h"

namespace fs = std::filesystem;

namespace {

std::string run_first_profile() {
  return isim::test::data_dir() + "/profile-linear-small.yaml";
}

// A spec on TRACE (a `trace:` map) and PROFILE; `extra` appends top-level keys.
std::string run_first_spec(const fs::path& dir, const std::string& trace,
                           const std::string& profile, const std::string& extra = "") {
  return isim::test::write_file(dir / "spec.yaml",
                                "name: rf\nseed: 1\ntrace: " + trace +
                                    "\narrival: {process: poisson, rate: 2}\nprofile: " + profile +
                                    "\nengine: {max_num_seqs: 8, max_num_batched_tokens: 64, "
                                    "activation_reserve_gib: 0, swap_space_gib: 1}\n" +
                                    extra);
}

const char* kRunFirstNoFile = ": cannot open: No such file or directory\n";

// A plan spec on TRACE (a `trace:` map) with one deployment on the linear test profile.
std::string run_first_plan(const fs::path& dir, const std::string& trace) {
  return isim::test::write_file(
      dir / "plan.yaml",
      "name: rf-plan\nseeds: [1]\ntrace: " + trace +
          "\narrival: {process: poisson}\npeak_rate: 5\nslo: {ttft_s.p99: 2.0}\n"
          "search: {start_rate: 1, tolerance: 0.1, window_s: 20}\n"
          "engine: {max_num_seqs: 8, max_num_batched_tokens: 64, activation_reserve_gib: 0, "
          "swap_space_gib: 1}\nrouters: [round-robin]\npolicies: [discard]\n"
          "deployments:\n  tiny: {gpu: test-gpu, profile: " +
          run_first_profile() + ", price_per_gpu_hour: 1.0}\n");
}

}  // namespace

TEST_CASE("run first: isim run reads its trace and profile before making --out") {
  const fs::path d = isim::test::scratch("run-first-run");
  const std::string missing_trace = (d / "no-such.jsonl").string();
  std::string err;
  CHECK(isim::test::run_bin("isim",
                            "run " +
                                run_first_spec(d, "{from: jsonl, path: " + missing_trace + "}",
                                               run_first_profile(), "policy: swap\n") +
                                " --out " + (d / "o").string(),
                            nullptr, &err) == 2);
  CHECK(err == "isim: error: " + missing_trace + kRunFirstNoFile);
  CHECK_FALSE(fs::exists(d / "o"));  // was made, empty, before the trace was read
  const std::string missing_profile = (d / "no-such.yaml").string();
  CHECK(isim::test::run_bin("isim",
                            "run " +
                                run_first_spec(d, "{from: generator, sessions: 2}", missing_profile,
                                               "policy: swap\n") +
                                " --out " + (d / "o").string(),
                            nullptr, &err) == 2);
  CHECK(err == "isim: error: " + missing_profile + kRunFirstNoFile);
  CHECK_FALSE(fs::exists(d / "o"));
  // The flag form too: a Mooncake file read as native JSONL.
  CHECK(isim::test::run_bin("isim",
                            "run --trace " + isim::test::data_dir() +
                                "/mooncake-excerpt.jsonl --profile " + run_first_profile() +
                                " --policy swap --out " + (d / "f").string(),
                            nullptr, &err) == 2);
  CHECK(err.find("it looks like a Mooncake trace: add --from mooncake") != std::string::npos);
  CHECK_FALSE(fs::exists(d / "f"));
}

TEST_CASE("run first: a sweep checks every swept profile before its folder, resumed or fresh") {
  const fs::path d = isim::test::scratch("run-first-sweep");
  const std::string missing = (d / "no-such.yaml").string();
  const std::string spec = run_first_spec(
      d, "{from: generator, sessions: 2}", run_first_profile(),
      "policies: [discard]\nsweep:\n  profile: [" + run_first_profile() + ", " + missing + "]\n");
  // Run 0 takes the good profile, run 1 the missing one: run 1 is named, and refused before
  // run 0 wrote its journal (o/shards) or any folder was made.
  const std::string expected = "isim: error: sweep run 1 (policy=discard profile=" + missing +
                               "): " + missing + kRunFirstNoFile;
  for (const char* mode : {"", " --resume", " --fresh"}) {
    CAPTURE(mode);
    std::string err;
    CHECK(isim::test::run_bin("isim",
                              "sweep " + spec + " --jobs 1 --out " + (d / "o").string() + mode,
                              nullptr, &err) == 2);
    CHECK(err == expected);
    CHECK_FALSE(fs::exists(d / "o"));
  }
  // sweep submit writes no job scripts for a sweep whose task would fail on it.
  std::string err;
  CHECK(isim::test::run_bin(
            "isim", "sweep submit --slurm " + spec + " --tasks 2 --out " + (d / "s").string(),
            nullptr, &err) == 2);
  CHECK(err == expected);
  CHECK_FALSE(fs::exists(d / "s"));
}

TEST_CASE("run first: validate SPEC reads its inputs before making its folder") {
  const fs::path d = isim::test::scratch("run-first-validate");
  const std::string missing = (d / "no-such.jsonl").string();
  std::string err;
  CHECK(isim::test::run_bin(
            "isim",
            "validate " +
                run_first_spec(d, "{from: jsonl, path: " + missing + "}", run_first_profile(),
                               "policy: swap\nexecutor: live-cpu\n") +
                " --out " + (d / "o").string(),
            nullptr, &err) == 2);
  CHECK(err == "isim: error: " + missing + kRunFirstNoFile);
  CHECK_FALSE(fs::exists(d / "o"));
}

TEST_CASE("run first: isim plan and plan merge read their inputs before making their folder") {
  const fs::path d = isim::test::scratch("run-first-plan");
  const std::string missing = (d / "no-such.jsonl").string();
  std::string err;
  CHECK(isim::test::run_bin("isim",
                            "plan " + run_first_plan(d, "{from: jsonl, path: " + missing + "}") +
                                " --no-plot --out " + (d / "o").string(),
                            nullptr, &err) == 2);
  CHECK(err == "isim: error: " + missing + kRunFirstNoFile);
  CHECK_FALSE(fs::exists(d / "o"));
  const std::string journal = (d / "no-such-journal.jsonl").string();
  CHECK(isim::test::run_bin("isim",
                            "plan merge " + run_first_plan(d, "{from: generator}") + " " + journal +
                                " --no-plot --out " + (d / "m").string(),
                            nullptr, &err) == 2);
  CHECK(err.starts_with("isim: error: " + journal + ": cannot open"));
  CHECK_FALSE(fs::exists(d / "m"));
}

TEST_CASE("run first: a plan deployment's tp below 1 is refused by its key") {
  const std::string spec = isim::test::source_dir() + "/tests/bad_inputs/inputs/plan_tp_zero.yaml";
  const fs::path d = isim::test::scratch("run-first-plan-tp");
  std::string err;
  CHECK(isim::test::run_bin("isim", "plan " + spec + " --out " + (d / "o").string(), nullptr,
                            &err) == 2);
  // Line 29 of the file: `    tp: 0` under deployments.tiny.
  CHECK(err == "isim: error: " + spec +
                   ":29: deployments.tiny.tp: must be >= 1 (GPUs per replica), got 0\n");
  CHECK_FALSE(fs::exists(d / "o"));
}

TEST_CASE("run first: validate --against refuses a bad trace option before trace.jsonl") {
  const fs::path d = isim::test::scratch("run-first-against");
  const fs::path run = d / "run";
  fs::create_directories(run);
  isim::test::write_file(run / "meta.json", isim::test::tiny_vllm_meta().dump());
  isim::test::write_file(
      run / "requests.jsonl",
      R"({"request_id": "bench-0", "input_toks": 4, "output_toks": 5, "queued_ts": 100, )"
      R"("scheduled_ts": 100, "first_token_ts": 101, "last_token_ts": 105})"
      "\n");
  isim::test::write_file(run / "timeseries.csv", "t,running,waiting\n1.0,1,0\n");
  std::string err;
  // The replay's trace has one session of class `bench` (a vLLM benchmark request): keeping
  // only class `nope` leaves none, a refusal of prepare(), which came after trace.jsonl.
  CHECK(isim::test::run_bin("isim",
                            "validate --against vllm " + run.string() + " --profile " +
                                run_first_profile() + " --scheduler chunked --out " +
                                (d / "o").string() +
                                " -p engine.activation_reserve_gib=0 -p "
                                "'trace.kinds=[nope]'",
                            nullptr, &err) == 2);
  CHECK(err == "isim: error: trace.kinds: no session of the classes [nope]; the trace's: bench\n");
  CHECK_FALSE(fs::exists(d / "o" / "trace.jsonl"));
  CHECK_FALSE(fs::exists(d / "o"));
}
