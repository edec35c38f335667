// `--help` and `-h` on every verb and sub-verb of isim, and on isim-calibrate: usage on stdout,
// the options, examples, exit 0; an unknown option on each still exits 2 with the usage.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "tests/cli_helpers.h"

using namespace isim;

namespace {

// Every verb and sub-verb, as typed after `isim`.
const std::vector<std::string> kVerbs = {
    "run",          "sweep",          "sweep merge",
    "sweep submit", "plan",           "plan merge",
    "plan submit",  "validate",       "validate --against vllm",
    "list",         "trace",          "trace convert",
    "trace gen",    "trace stats",    "profile",
    "profile show", "profile import", "profile analytic",
    "profile diff", "profile step",   "model",
    "model import", "headroom"};

void check_help(const std::string& bin, const std::string& verb) {
  for (const char* flag : {"--help", "-h"}) {
    CAPTURE(verb);
    CAPTURE(flag);
    std::string out, err;
    const int rc = test::run_bin(bin, verb + " " + flag, &out, &err);
    CHECK(rc == 0);
    CHECK(out.starts_with("usage: "));
    CHECK(out.find("\noptions:\n") != std::string::npos);
    CHECK(out.find("\nexamples:\n  ") != std::string::npos);
    CHECK(err.empty());
  }
}

}  // namespace

TEST_CASE("isim: --help on every verb and sub-verb prints usage, options and examples") {
  for (const auto& v : kVerbs) check_help("isim", v);
  // The verb's own usage, not the top-level one: the first line names the verb.
  std::string out;
  REQUIRE(test::run_bin("isim", "trace gen --help", &out) == 0);
  CHECK(out.starts_with("usage: isim trace gen "));
  // Internal positionals are not listed as options.
  CHECK(out.find("--in ") == std::string::npos);
  CHECK(out.find("--out ") == std::string::npos);
  REQUIRE(test::run_bin("isim", "profile show --help", &out) == 0);
  CHECK(out.starts_with("usage: isim profile show PROFILE.yaml"));
  CHECK(out.find("--plot") != std::string::npos);
  REQUIRE(test::run_bin("isim", "--help", &out) == 0);
  CHECK(out.starts_with("usage: isim VERB"));
  CHECK(out.find("\nexamples:\n") != std::string::npos);
}

TEST_CASE("isim: an unknown option on every verb and sub-verb exits 2 with the usage") {
  for (const auto& v : kVerbs) {
    CAPTURE(v);
    std::string out, err;
    CHECK(test::run_bin("isim", v + " --no-such-option", &out, &err) == 2);
    CHECK(out.empty());
    CHECK(err.find("no-such-option") != std::string::npos);
  }
}

TEST_CASE("isim-calibrate --help lists every option with examples; an unknown one exits 2") {
  check_help("isim-calibrate", "");
  std::string out;
  REQUIRE(test::run_bin("isim-calibrate", "--help", &out) == 0);
  for (const char* o : {"--model", "--backend", "--tp", "--quick", "--seed", "--out"})
    CHECK(out.find(o) != std::string::npos);
  std::string err;
  CHECK(test::run_bin("isim-calibrate", "--no-such-option", &out, &err) == 2);
  CHECK(err.find("no-such-option") != std::string::npos);
  CHECK(err.find("usage: isim-calibrate") != std::string::npos);
}
