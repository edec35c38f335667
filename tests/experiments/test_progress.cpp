// `isim run`'s progress line (experiments/run/progress.h): its text, worked out by hand; how often
// it prints, in place on a terminal or a line each elsewhere; its flags' errors; and that a
// run's files are the same with or without it.
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "experiments/run/progress.h"
#include "tests/cli_helpers.h"
#include "tests/experiments/sweep_fixtures.h"

using namespace isim;
namespace fs = std::filesystem;

namespace {

cluster::Progress at(double now_s, int64_t done, int64_t total, bool last = false) {
  return {static_cast<sim::Nanos>(now_s * 1e9), done, total, last};
}

// What a ProgressLine wrote to a temporary file.
std::string drawn(exp::ProgressOptions o, const std::vector<cluster::Progress>& reports) {
  std::FILE* f = std::tmpfile();
  REQUIRE(f != nullptr);
  {
    exp::ProgressLine line("preserve", o, f);
    const cluster::ProgressFn fn = line.fn();
    if (fn)
      for (const auto& r : reports) fn(r);
    line.finish();
  }
  std::rewind(f);
  std::string text;
  for (int c; (c = std::fgetc(f)) != EOF;) text += static_cast<char>(c);
  std::fclose(f);
  return text;
}

}  // namespace

TEST_CASE("progress text: sessions done, share, simulated time, elapsed and ETA") {
  // 25 of 100 done in 3 s: the other 75 at that pace take 9 s.
  CHECK(exp::progress_text("preserve", at(12.34, 25, 100), 3.0) ==
        "preserve: 25/100 sessions (25.0%), sim t=12.3 s, 3.0 s elapsed, ETA 9.0 s");
  CHECK(exp::progress_text("swap", at(0, 0, 7), 0.25) ==
        "swap: 0/7 sessions (0.0%), sim t=0.0 s, 0.2 s elapsed, ETA ?");
  // 1 of 3 in 62.5 s: 125 s left, "2 min 5 s"; elapsed "1 min 3 s" (62.5 rounds to 63).
  CHECK(exp::progress_text("d", at(1, 1, 3), 62.5) ==
        "d: 1/3 sessions (33.3%), sim t=1.0 s, 1 min 3 s elapsed, ETA 2 min 5 s");
  // 1 of 5 in 1825 s: 7300 s left, 2 h 01 min 40 s: "2 h 02 min".
  CHECK(exp::progress_text("d", at(1, 1, 5), 1825) ==
        "d: 1/5 sessions (20.0%), sim t=1.0 s, 30 min 25 s elapsed, ETA 2 h 02 min");
  CHECK(exp::progress_text("d", at(530.04, 5, 5, true), 2) ==
        "d: 5/5 sessions (100.0%), sim t=530.0 s, 2.0 s elapsed, done");
}

TEST_CASE("progress line: each report a line, every report at interval 0, the last always") {
  exp::ProgressOptions o;
  o.enabled = true;
  o.interval_s = 0;
  const std::vector<cluster::Progress> rs = {at(1, 1, 4), at(2, 3, 4), at(3, 4, 4, true)};
  const std::string text = drawn(o, rs);
  const auto lines = test::squeezed_lines(text);
  REQUIRE(lines.size() == 3);
  CHECK(lines[0].starts_with("preserve: 1/4 sessions (25.0%), sim t=1.0 s, "));
  CHECK(lines[1].starts_with("preserve: 3/4 sessions (75.0%), sim t=2.0 s, "));
  CHECK(lines[2].starts_with("preserve: 4/4 sessions (100.0%), sim t=3.0 s, "));
  CHECK(lines[2].ends_with(" elapsed, done"));
  CHECK(text.find('\r') == std::string::npos);

  // An hour between prints: only the last report comes out (these take microseconds).
  o.interval_s = 3600;
  const auto only = test::squeezed_lines(drawn(o, rs));
  REQUIRE(only.size() == 1);
  CHECK(only[0].starts_with("preserve: 4/4 sessions"));

  // Disabled: no reporter at all, nothing written.
  o.enabled = false;
  CHECK(drawn(o, rs).empty());
}

TEST_CASE("progress line: on a terminal it is redrawn in place and cleared at the end") {
  exp::ProgressOptions o;
  o.enabled = true;
  o.terminal = true;
  o.interval_s = 0;
  const std::string a = exp::progress_text("preserve", at(1, 10, 100), 0);
  const std::string text = drawn(o, {at(1, 10, 100), at(2, 100, 100, true)});
  CHECK(text.find('\n') == std::string::npos);
  REQUIRE(text.starts_with("\r" + a.substr(0, a.find(" elapsed") - 3)));
  // Then the second report over it, then blanks as wide as it, and a carriage return.
  const size_t second = text.find("\rpreserve: 100/100");
  REQUIRE(second != std::string::npos);
  CHECK(text.ends_with("\r"));
  const size_t clear = text.rfind('\r', text.size() - 2);
  CHECK(text.substr(clear + 1, text.size() - clear - 2).find_first_not_of(' ') ==
        std::string::npos);
}

TEST_CASE("isim run --progress: reports on stderr, the same files as without, bad flags exit 2") {
  const auto d = test::scratch("progress-cli");
  std::string trace;
  for (int i = 0; i < 40; ++i)
    trace += "{\"id\":\"s" + std::to_string(i) + "\",\"arrival_s\":" + std::to_string(0.05 * i) +
             ",\"segments\":[{\"input\":30,\"output\":4}]}\n";
  test::write_file(d / "t.jsonl", trace);
  const std::string spec = test::write_file(
      d / "p.yaml", "name: p\ntrace: {from: jsonl, path: t.jsonl}\narrival: {process: replay}\n"
                    "profile: " + test::sweep::profile() + "\npolicies: [preserve, discard]\n");
  std::string out, err;
  REQUIRE(test::sweep::run_isim("run " + spec + " --out " + (d / "with").string() +
                                    " --progress --progress-interval 0",
                                &out, &err) == 0);
  // Not a terminal: each report is a line; 40 sessions take fewer than 4096 instants, so each
  // policy prints its last report only.
  CHECK(err.find("preserve: 40/40 sessions (100.0%), sim t=") != std::string::npos);
  CHECK(err.find("discard: 40/40 sessions (100.0%), sim t=") != std::string::npos);
  std::string out2, err2;
  REQUIRE(test::sweep::run_isim("run " + spec + " --out " + (d / "without").string(), &out2,
                                &err2) == 0);
  CHECK(err2.find("sessions (") == std::string::npos);  // stderr is a file: off by default
  CHECK(out == out2);
  for (const char* f : {"preserve/summary.json", "preserve/sessions.csv", "discard/summary.json"})
    CHECK(test::slurp(d / "with" / f) == test::slurp(d / "without" / f));

  REQUIRE(test::sweep::run_isim("run " + spec + " --progress --no-progress", &out, &err) == 2);
  CHECK(err.find("--progress and --no-progress: give one of them, not both") !=
        std::string::npos);
  REQUIRE(test::sweep::run_isim("run " + spec + " --progress-interval -1", &out, &err) == 2);
  CHECK(err.find("--progress-interval: expected a number of seconds >= 0, got '-1'") !=
        std::string::npos);
}
