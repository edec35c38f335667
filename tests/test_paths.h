// Paths tests read from, relative to the checkout (never absolute paths of one machine), and
// the one rule for skipping a test whose input is missing.
//
// Contract: a test that needs something this machine may lack (../shared/data, matplotlib)
// says so with `* doctest::skip(isim::test::absent(MISSING))`, never by printing a message and
// returning (tests/check_skips.sh fails the suite on that pattern, and on a skip decorator that
// does not go through `absent`). doctest counts such a test as skipped, and scripts/test prints
// the count. With ISIM_REQUIRE_DATA=1 (CI, which has both) nothing is absent: the test runs and
// fails on what is missing, so a skip there cannot hide.
#pragma once
#include <cstdlib>
#include <string>

namespace isim::test {
inline std::string source_dir() { return ISIM_SOURCE_DIR; }
inline std::string data_dir() { return std::string(ISIM_SOURCE_DIR) + "/tests/data"; }
// ../shared/data beside the checkout, as in CI.
inline std::string shared_data() { return std::string(ISIM_SOURCE_DIR) + "/../shared/data"; }
inline std::string bin_dir() { return std::string(ISIM_BINARY_DIR) + "/bin"; }

// Whether this run requires every test input to be present (ISIM_REQUIRE_DATA=1).
inline bool data_required() {
  const char* v = std::getenv("ISIM_REQUIRE_DATA");
  return v != nullptr && std::string(v) == "1";
}
// `missing`, unless data_required(): whether to skip a test for a missing input.
inline bool absent(bool missing) { return missing && !data_required(); }
}  // namespace isim::test
