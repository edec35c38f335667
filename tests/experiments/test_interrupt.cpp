// Ctrl-C (core/interrupt.h, core/atomic_file.h): a real SIGINT sent to the isim binary
// in the middle of a write and in the middle of a sweep. Nothing partial is left under a final
// name, the process exits 130 saying what it left, and the rerun resumes to the same bytes.
//
// The write is caught at a known point: ISIM_TEST_PAUSE_BEFORE_RENAME makes write_file_atomic
// wait before renaming its temporary file; the test waits for that file to appear, then signals.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "tests/cli_helpers.h"
#include "tests/experiments/sweep_fixtures.h"
#include "tests/test_paths.h"

extern char** environ;

namespace fs = std::filesystem;
using namespace isim;

namespace {

struct Child {
  pid_t pid = -1;
  fs::path err;
};

// Starts `isim ARGS...` with stdout and stderr to files in `dir`, and `env` added.
Child start_isim(const std::vector<std::string>& args, const fs::path& dir,
                 const std::string& env = "") {
  Child c;
  c.err = dir / "stderr.txt";
  std::vector<std::string> argv_s = {test::bin_dir() + "/isim"};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_s;
  for (char** e = environ; *e; ++e) env_s.emplace_back(*e);
  if (!env.empty()) env_s.push_back(env);
  std::vector<char*> envp;
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, (dir / "stdout.txt").c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, c.err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  REQUIRE(posix_spawn(&c.pid, argv[0], &fa, nullptr, argv.data(), envp.data()) == 0);
  posix_spawn_file_actions_destroy(&fa);
  return c;
}

// Waits (at most 120 s) until `ready` holds; false if the child exited first or time ran out.
template <class F>
bool wait_for(const Child& c, F ready) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < until) {
    if (ready()) return true;
    int status = 0;
    if (waitpid(c.pid, &status, WNOHANG) == c.pid) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

int interrupt_and_wait(const Child& c) {
  kill(c.pid, SIGINT);
  int status = 0;
  waitpid(c.pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Every file under `dir` whose name holds ".tmp-" (write_file_atomic's temporaries).
std::vector<std::string> temporaries(const fs::path& dir) {
  std::vector<std::string> t;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.path().filename().string().find(".tmp-") != std::string::npos)
      t.push_back(e.path().string());
  return t;
}

bool has_temporary(const fs::path& dir) {
  return fs::exists(dir) && !temporaries(dir).empty();
}

size_t line_count(const fs::path& p) {
  const std::string t = test::slurp(p);
  return static_cast<size_t>(std::count(t.begin(), t.end(), '\n'));
}

std::string run_spec(const fs::path& d) {
  return test::write_file(d / "run.yaml",
                          "name: interrupted\ntrace: {from: generator, sessions: 60}\n"
                          "arrival: {process: poisson, rate: 2}\nprofile: " +
                              test::sweep::profile() + "\npolicies: [discard, swap]\n");
}

}  // namespace

TEST_CASE("SIGINT while isim run writes sessions.csv of its second policy") {
  const auto d = test::scratch("interrupt-run");
  const std::string spec = run_spec(d);
  const fs::path out = d / "out";
  Child c = start_isim({"run", spec, "--out", out.string()}, d,
                       "ISIM_TEST_PAUSE_BEFORE_RENAME=swap/sessions.csv");
  REQUIRE(wait_for(c, [&] { return has_temporary(out / "swap"); }));
  CHECK(interrupt_and_wait(c) == 130);
  const std::string err = test::slurp(c.err);
  CHECK(err.find("isim: interrupted (Ctrl-C); complete: " + (out / "discard").string() + "; " +
                 (out / "swap").string() + " was cut short (it has no summary.json)") !=
        std::string::npos);
  CHECK(temporaries(out).empty());
  // The first policy's folder is whole; the second has no summary.json and no sessions.csv.
  for (const char* f : {"summary.json", "sessions.csv", "timeseries.csv", "config.resolved.yaml"})
    CHECK(fs::exists(out / "discard" / f));
  CHECK(line_count(out / "discard" / "sessions.csv") == 1 + 60);
  CHECK(!fs::exists(out / "swap" / "summary.json"));
  CHECK(!fs::exists(out / "swap" / "sessions.csv"));

  // The rerun writes both folders whole, the same bytes as a run never interrupted.
  std::string rerr;
  REQUIRE(test::run_bin("isim", "run " + spec + " --out " + out.string(), nullptr, &rerr) == 0);
  REQUIRE(test::run_bin("isim", "run " + spec + " --out " + (d / "clean").string()) == 0);
  for (const char* p : {"discard", "swap"})
    for (const char* f : {"summary.json", "sessions.csv", "timeseries.csv"})
      CHECK(test::slurp(out / p / f) == test::slurp(d / "clean" / p / f));
}

TEST_CASE("SIGINT in the middle of a sweep, then while it writes results.csv; reruns resume") {
  const auto d = test::scratch("interrupt-sweep");
  const std::string spec = test::write_file(d / "s.yaml", test::sweep::spec_text());  // 12 runs
  const fs::path out = d / "out";
  const fs::path journal = out / "shards" / "shard-1-of-1.jsonl";
  const std::vector<std::string> args = {"sweep",       spec,    "--jobs",    "1",
                                         "--keep-runs", "--out", out.string()};
  // 1. Stopped while run 4's files are written: runs 0..3 are in the journal.
  Child c = start_isim(args, d, "ISIM_TEST_PAUSE_BEFORE_RENAME=runs/4/sessions.csv");
  REQUIRE(wait_for(c, [&] { return has_temporary(out / "runs" / "4"); }));
  CHECK(interrupt_and_wait(c) == 130);
  CHECK(test::slurp(c.err).find(
            "isim: interrupted (Ctrl-C); 4 of 12 run(s) are kept in " + journal.string() +
            "; the same command resumes them and writes results.csv") != std::string::npos);
  CHECK(line_count(journal) == 1 + 4);
  CHECK(!fs::exists(out / "results.csv"));
  CHECK(temporaries(out).empty());

  // 2. The rerun resumes the 4, runs the other 8, and is stopped while writing results.csv.
  c = start_isim(args, d, "ISIM_TEST_PAUSE_BEFORE_RENAME=results.csv");
  REQUIRE(wait_for(c, [&] {
    for (const auto& t : temporaries(out))
      if (fs::path(t).filename().string().rfind("results.csv.tmp-", 0) == 0) return true;
    return false;
  }));
  CHECK(interrupt_and_wait(c) == 130);
  const std::string err = test::slurp(c.err);
  CHECK(err.find("sweep: 4 of 12 run(s) already finished (" + journal.string() +
                 "), running the other 8") != std::string::npos);
  CHECK(err.find("12 of 12 run(s) are kept in") != std::string::npos);
  CHECK(!fs::exists(out / "results.csv"));
  CHECK(temporaries(out).empty());

  // 3. The last rerun has nothing to run; its results.csv equals an uninterrupted sweep's.
  std::string err3;
  REQUIRE(test::run_bin("isim", "sweep " + spec + " --jobs 1 --keep-runs --out " + out.string(),
                        nullptr, &err3) == 0);
  CHECK(err3.find("sweep: 12 of 12 run(s) already finished") != std::string::npos);
  REQUIRE(test::run_bin("isim", "sweep " + spec + " --jobs 2 --out " + (d / "clean").string()) ==
          0);
  CHECK(test::slurp(out / "results.csv") == test::slurp(d / "clean" / "results.csv"));
}

TEST_CASE("a sweep refuses a folder of another spec's runs unless --resume or --fresh") {
  const auto d = test::scratch("interrupt-refuse");
  const std::string a = test::write_file(d / "a.yaml", test::sweep::spec_text());
  const std::string b =
      test::write_file(d / "b.yaml", test::sweep::spec_text("  engine.max_num_seqs: [64]\n"));
  const std::string out = (d / "out").string();
  REQUIRE(test::run_bin("isim", "sweep " + a + " --jobs 2 --out " + out) == 0);
  const std::string before = test::slurp(d / "out" / "results.csv");
  std::string err;
  CHECK(test::run_bin("isim", "sweep " + b + " --jobs 2 --out " + out, nullptr, &err) == 2);
  CHECK(err.find("isim: error: " + out + ": holds 12 finished run(s) of another sweep spec") !=
        std::string::npos);
  CHECK(err.find("give --resume to keep those that still match, --fresh to start anew, or "
                 "another --out") != std::string::npos);
  CHECK(test::slurp(d / "out" / "results.csv") == before);  // nothing was touched
  CHECK(test::run_bin("isim", "sweep " + b + " --jobs 2 --fresh --out " + out, nullptr, &err) == 0);
  CHECK(err.find("12 finished run(s) were dropped: --fresh starts anew") != std::string::npos);
  CHECK(test::run_bin("isim", "sweep " + a + " --resume --fresh --out " + out, nullptr, &err) == 2);
  // A results.csv with no journal beside it is refused too.
  fs::remove_all(d / "out" / "shards");
  CHECK(test::run_bin("isim", "sweep " + a + " --out " + out, nullptr, &err) == 2);
  CHECK(err.find("holds a results.csv but no journal") != std::string::npos);
}
