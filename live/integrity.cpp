#include "live/integrity.h"

#include <cstring>

namespace isim::live {
namespace {

uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

}  // namespace

uint64_t block_checksum(const std::vector<std::byte>& bytes) {
  uint64_t sum = bytes.size();
  const size_t words = bytes.size() / 8;
  for (size_t i = 0; i < words; ++i) {
    uint64_t w;
    std::memcpy(&w, bytes.data() + i * 8, 8);
    sum += mix(w ^ mix(i));
  }
  for (size_t i = words * 8; i < bytes.size(); ++i)
    sum += mix(static_cast<uint64_t>(bytes[i]) ^ mix(i + (1ull << 62)));
  return sum;
}

int32_t input_token(const trace::Session& s, int64_t position, int32_t vocab) {
  uint64_t h;
  const auto& p = s.prefix;
  const int64_t covered =
      p.empty() ? 0
                : std::min<int64_t>(s.segments.front().input,
                                    static_cast<int64_t>(p.hashes.size()) * p.block_tokens);
  if (position < covered)
    h = mix(p.hashes[static_cast<size_t>(position / p.block_tokens)] ^
            mix(static_cast<uint64_t>(position % p.block_tokens)));
  else
    h = mix(fnv1a(s.id) ^ mix(static_cast<uint64_t>(position) + 0x51ed27ull));
  return static_cast<int32_t>(h % static_cast<uint64_t>(vocab));
}

double recompute_tolerance(kernels::Dtype dtype) {
  switch (dtype) {
    case kernels::Dtype::kF32:
      return 0.0;
    case kernels::Dtype::kBF16:
      return 1.0 / 64;
    case kernels::Dtype::kF16:
      return 1.0 / 512;
  }
  return 0.0;
}

TokenPlace place_of(const trace::Session& s, int64_t position) {
  int64_t at = 0;
  for (size_t k = 0; k < s.segments.size(); ++k) {
    const auto& seg = s.segments[k];
    if (position < at + seg.input) return {static_cast<int32_t>(k), false, position - at};
    at += seg.input;
    if (position < at + seg.output) return {static_cast<int32_t>(k), true, position - at};
    at += seg.output;
  }
  return {static_cast<int32_t>(s.segments.size()), true, position - at};
}

}  // namespace isim::live
