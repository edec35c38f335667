// sessions.csv holds the trace's own session ids, which may contain any text: it quotes them per
// RFC 4180, so that a CSV reader gets every id and every column back (issue 17).
#include <doctest/doctest.h>

#include <string>

#include "experiments/sweep/sweep.h"
#include "tests/cli_helpers.h"

namespace test = isim::test;

TEST_CASE("sessions.csv quotes ids holding a comma, a quote or a line break") {
  const auto d = test::scratch("sessions-csv");
  // JSON strings: "a,b", "say \"hi\"" and "two\nlines".
  const std::string trace = test::write_file(
      d / "t.jsonl",
      R"({"id":"a,b","arrival_s":0,"segments":[{"input":10,"output":2}]})"
      "\n"
      R"({"id":"say \"hi\"","arrival_s":0.5,"segments":[{"input":10,"output":2}]})"
      "\n"
      R"({"id":"two\nlines","arrival_s":1,"segments":[{"input":10,"output":2}]})"
      "\n");
  const std::string spec = test::write_file(
      d / "e.yaml", "name: csv\ntrace: {from: jsonl, path: " + trace +
                        "}\narrival: {process: replay}\nprofile: " + test::source_dir() +
                        "/calibrate/profiles/a100-80g-gptj-6b.infercept.yaml\npolicy: preserve\n");
  REQUIRE(test::run_bin("isim", "run " + spec + " --out " + (d / "o").string()) == 0);
  const std::string text = test::slurp(d / "o/preserve/sessions.csv");
  // The raw bytes: each id quoted, the quote doubled, the line break kept inside the quotes.
  CHECK(text.find("\n\"a,b\",finished,") != std::string::npos);
  CHECK(text.find("\n\"say \"\"hi\"\"\",finished,") != std::string::npos);
  CHECK(text.find("\n\"two\nlines\",finished,") != std::string::npos);
  const auto rows = isim::read_csv(text, "sessions.csv");
  REQUIRE(rows.size() == 4);  // the header and three sessions
  const size_t columns = rows[0].fields.size();
  CHECK(rows[1].fields[0] == "a,b");
  CHECK(rows[2].fields[0] == "say \"hi\"");
  CHECK(rows[3].fields[0] == "two\nlines");
  for (size_t i = 1; i < rows.size(); ++i) CHECK(rows[i].fields.size() == columns);
}
