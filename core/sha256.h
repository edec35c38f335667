// SHA-256 (FIPS 180-4), for checking that a file is the one a run names by its hash (a vLLM
// run's meta.json records dataset_hash, the sha256 of its dataset file).
//
// Contract: Sha256 hashes the bytes fed through update() in order; hex() ends the message and
// returns the 64 lowercase hex digits (call it once). sha256_file_hex reads a whole file in
// binary; it throws InputError `FILE: cannot open: <reason>` when the file cannot be read.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace isim {

class Sha256 {
 public:
  void update(std::string_view bytes);
  std::string hex();

 private:
  void compress(const uint8_t* block);

  std::array<uint32_t, 8> h_ = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  std::array<uint8_t, 64> buf_{};
  size_t buffered_ = 0;
  uint64_t length_ = 0;  // bytes fed so far
};

std::string sha256_hex(std::string_view bytes);
std::string sha256_file_hex(const std::string& path);

}  // namespace isim
