// `isim validate --kv-logs DIR` as a user runs it: the report's exit 0, bad input's exit 2 with
// the file and line named.
#include <doctest/doctest.h>

#include "tests/cli_helpers.h"

using namespace isim;

TEST_CASE("isim validate --kv-logs: a report (exit 0) ending with the summary line") {
  const std::string dir = test::data_dir() + "/kv-logs";
  std::string out, err;
  CHECK(test::run_bin("isim", "validate --kv-logs " + dir + " --models " + dir + "/models", &out,
                      &err) == 0);
  CHECK(err.empty());
  CHECK(out.ends_with(
      "5 logs: within 2%: 1, within 5%: 1, skipped: 4 (did not start 1, no KV size logged 1, "
      "unknown model 1, vision tower 1)\n"));
  const auto rows = test::squeezed_lines(out);
  bool toy = false;
  for (const std::string& r : rows)
    toy = toy || r == "toy-1b--tp1pp1dp1--2048.log toy-1b 1/1 0.24 0.24 0.12 0.12 0.25 0.25 "
                      "0.10 2461904 2437280 +1.01%";
  CHECK(toy);
}

TEST_CASE("isim validate --kv-logs: bad input exits 2 naming the file and line") {
  std::string out, err;
  CHECK(test::run_bin("isim", "validate --kv-logs " + test::data_dir() + "/kv-logs-bad", &out,
                      &err) == 2);
  CHECK(err.find("kv-logs-bad/notes.log:1: not a vLLM log line") != std::string::npos);
  CHECK(test::run_bin("isim", "validate --kv-logs " + test::data_dir() + "/no-such-dir", &out,
                      &err) == 2);
  CHECK(err.find("no-such-dir: not a folder (--kv-logs DIR)") != std::string::npos);
  CHECK(test::run_bin("isim",
                      "validate --kv-logs " + test::data_dir() + "/kv-logs --models " +
                          test::data_dir() + "/no-such-models",
                      &out, &err) == 2);
  CHECK(err.find("no-such-models: not a folder of models") != std::string::npos);
}
