// doctest main: every test process runs in its own temporary folder (tests/doctest_main.h).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "tests/doctest_main.h"

int main(int argc, char** argv) {
  return isim::test::run_doctest_in_own_tmpdir(argc, argv);
}
