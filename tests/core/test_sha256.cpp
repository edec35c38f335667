// SHA-256 against the FIPS 180-2 / NIST example vectors, including messages whose padding
// spills into a second block and one fed in uneven pieces.
#include <doctest/doctest.h>

#include <string>

#include "core/input_error.h"
#include "core/sha256.h"
#include "tests/cli_helpers.h"

using namespace isim;

TEST_CASE("sha256: the standard test vectors") {
  CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // 56 bytes: the length no longer fits in the first block.
  CHECK(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(
      sha256_hex("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqk"
                 "lmnopqrlmnopqrsmnopqrstnopqrstu") ==
      "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
  Sha256 million;
  const std::string chunk(1000, 'a');
  for (int i = 0; i < 1000; ++i) million.update(chunk);
  CHECK(million.hex() == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  Sha256 pieces;
  pieces.update("a");
  pieces.update("bc");
  CHECK(pieces.hex() == sha256_hex("abc"));
}

TEST_CASE("sha256: a file hashes as its bytes; a missing file is an InputError") {
  const auto d = isim::test::scratch("sha256");
  const std::string p = isim::test::write_file(d / "f.txt", "abc");
  CHECK(sha256_file_hex(p) == sha256_hex("abc"));
  CHECK_THROWS_WITH_AS(sha256_file_hex((d / "none").string()),
                       ((d / "none").string() + ": cannot open: No such file or directory").c_str(),
                       isim::InputError);
}
