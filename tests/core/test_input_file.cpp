// core/input_file.h: what is not a regular file is refused by name without being opened (a FIFO
// would block), the size cap is checked before reading, and a read that fails half-way is an
// error at its line, never the end of the file (issue 36).
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/input_error.h"
#include "core/input_file.h"
#include "core/strict_yaml.h"
#include "tests/cli_helpers.h"
#include "tests/input_error_text.h"

using isim::test::error_of_call;

TEST_CASE("input files: a directory, a FIFO and a device are refused by name") {
  const std::string d = isim::test::scratch("input-file-dir").string();
  CHECK(error_of_call([&] { isim::read_input_file(d, "a YAML profile"); }) ==
        d + ": is a directory; expected a regular file (a YAML profile)");
  // A FIFO with no writer: open() would block forever; stat() is all that is done.
  const std::string fifo = (isim::test::scratch("input-file-fifo") / "p").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK(error_of_call([&] { isim::open_input_file(fifo, "a trace file"); }) ==
        fifo + ": is a FIFO (named pipe); expected a regular file (a trace file)");
  CHECK(error_of_call([&] { isim::read_input_file("/dev/zero", "a YAML profile"); }) ==
        "/dev/zero: is a character device; expected a regular file (a YAML profile)");
  CHECK(error_of_call([&] { isim::check_input_file("/nonexistent-dir/p.yaml", "a profile"); }) ==
        "/nonexistent-dir/p.yaml: cannot open: No such file or directory");
  // The same door for YAML specs: a directory used to be "empty experiment file".
  CHECK(error_of_call([&] { isim::load_yaml_file(d, "experiment file"); }) ==
        d + ": is a directory; expected a regular file (a YAML experiment file)");
}

TEST_CASE("input files: the size cap is checked before reading") {
  const auto p = isim::test::scratch("input-file-cap") / "eleven.yaml";
  isim::test::write_file(p, "a: 12345678");  // 11 bytes
  CHECK(isim::read_input_file(p.string(), "a YAML file", 11) == "a: 12345678");
  CHECK(error_of_call([&] { isim::read_input_file(p.string(), "a YAML file", 10); }) ==
        p.string() + ": is 11 bytes; expected a regular file (a YAML file) of at most 10 bytes");
}

TEST_CASE("input files: a read that fails is an error at its line, not the end") {
  // A directory opens as a stream on Linux, and its first read fails (EISDIR): the lower-level
  // function, given the open stream, reports the read error at line 1.
  const std::string d = isim::test::scratch("input-file-read-dir").string();
  std::ifstream in(d, std::ios::binary);
  REQUIRE(in.is_open());
  CHECK(error_of_call([&] { isim::read_stream_whole(in, d); }) ==
        d + ":1: read error; the file could not be read to its end");
}
