// write_file_atomic for a text made in pieces (core/atomic_file.h): the pieces in order, and a
// producer that throws leaves the old file and no temporary behind.
#include <doctest/doctest.h>

#include <filesystem>
#include <stdexcept>
#include <string>

#include "core/atomic_file.h"
#include "tests/cli_helpers.h"

namespace fs = std::filesystem;

TEST_CASE("write_file_atomic in pieces: the file is the pieces in order") {
  const fs::path d = isim::test::scratch("atomic-pieces");
  const std::string path = (d / "f.txt").string();
  isim::write_file_atomic(path, [](const isim::PutText& put) {
    put("ab");
    put("");
    put("cd\n");
  });
  CHECK(isim::test::slurp(path) == "abcd\n");
  CHECK(std::distance(fs::directory_iterator(d), fs::directory_iterator{}) == 1);
}

TEST_CASE("write_file_atomic in pieces: a producer that throws changes nothing") {
  const fs::path d = isim::test::scratch("atomic-throw");
  const std::string path = isim::test::write_file(d / "f.txt", "old\n");
  CHECK_THROWS_AS(isim::write_file_atomic(path,
                                          [](const isim::PutText& put) {
                                            put("new");
                                            throw std::runtime_error("stop");
                                          }),
                  std::runtime_error);
  CHECK(isim::test::slurp(path) == "old\n");
  CHECK(std::distance(fs::directory_iterator(d), fs::directory_iterator{}) == 1);  // no .tmp-
}
