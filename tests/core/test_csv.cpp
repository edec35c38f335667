// CSV reading (core/csv.h): a UTF-8 byte-order mark before the header (spreadsheets write one)
// is not part of the first field. Expected records are written out by hand.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "core/csv.h"

TEST_CASE("read_csv skips a UTF-8 byte-order mark before the first field") {
  // Before the fix the first field was "\xEF\xBB\xBFrun_index", and `isim sweep merge` said
  // "expected a results.csv header starting with run_index" of a header that starts with it.
  const auto recs = isim::read_csv("\xEF\xBB\xBFrun_index,policy\r\n0,swap\n", "r.csv");
  REQUIRE(recs.size() == 2);
  CHECK(recs[0].fields == std::vector<std::string>{"run_index", "policy"});
  CHECK(recs[1].fields == std::vector<std::string>{"0", "swap"});
  CHECK(recs[1].line == 2);
  // A mark anywhere else is data, as any other bytes.
  const std::string bom = "\xEF\xBB\xBF";
  const auto mid = isim::read_csv("a," + bom + "b\n", "m.csv");
  CHECK(mid[0].fields == std::vector<std::string>{"a", bom + "b"});
}
