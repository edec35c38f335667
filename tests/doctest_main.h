// The doctest run every test binary's main makes (tests/main.cpp, and the mains that first
// decide whether to skip, e.g. tests/experiments/test_openmetrics_promtool.cpp): each test
// process gets its own temporary folder (TMPDIR, which std::filesystem::temp_directory_path()
// and the isim processes the tests start both use), so test binaries running at once -- ctest
// -j, or two checkouts on one machine -- never share scratch files. The includer defines
// DOCTEST_CONFIG_IMPLEMENT before including doctest.
#pragma once

#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

namespace isim::test {

inline int run_doctest_in_own_tmpdir(int argc, char** argv) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("isim-tests-" + std::to_string(getpid()));
  fs::create_directories(dir);
  setenv("TMPDIR", dir.c_str(), 1);
  doctest::Context context(argc, argv);
  const int rc = context.run();
  std::error_code ec;
  fs::remove_all(dir, ec);
  return rc;
}

}  // namespace isim::test
