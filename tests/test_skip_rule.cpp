// The skip rule of tests/test_paths.h: a missing input skips a test, except under
// ISIM_REQUIRE_DATA=1, where nothing may skip.
#include <doctest/doctest.h>

#include <cstdlib>

#include "tests/test_paths.h"

TEST_CASE("absent: skips for a missing input unless ISIM_REQUIRE_DATA=1") {
  const char* before = std::getenv("ISIM_REQUIRE_DATA");
  const std::string saved = before ? before : "";
  ::unsetenv("ISIM_REQUIRE_DATA");
  CHECK(isim::test::absent(true));
  CHECK_FALSE(isim::test::absent(false));
  ::setenv("ISIM_REQUIRE_DATA", "1", 1);
  CHECK_FALSE(isim::test::absent(true));  // runs, and fails on what is missing
  CHECK_FALSE(isim::test::absent(false));
  ::setenv("ISIM_REQUIRE_DATA", "0", 1);
  CHECK(isim::test::absent(true));
  if (before)
    ::setenv("ISIM_REQUIRE_DATA", saved.c_str(), 1);
  else
    ::unsetenv("ISIM_REQUIRE_DATA");
}
