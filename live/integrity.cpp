#include "live/integrity.h"

#include <cstring>

#include "core/hash.h"

namespace isim::live {
uint64_t block_checksum(const std::vector<std::byte>& bytes) {
  uint64_t sum = bytes.size();
  const size_t words = bytes.size() / 8;
  for (size_t i = 0; i < words; ++i) {
    uint64_t w;
    std::memcpy(&w, bytes.data() + i * 8, 8);
    sum += splitmix64(w ^ splitmix64(i));
  }
  for (size_t i = words * 8; i < bytes.size(); ++i)
    sum += splitmix64(static_cast<uint64_t>(bytes[i]) ^ splitmix64(i + (1ull << 62)));
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
    h = splitmix64(p.hashes[static_cast<size_t>(position / p.block_tokens)] ^
            splitmix64(static_cast<uint64_t>(position % p.block_tokens)));
  else
    h = splitmix64(fnv1a(s.id) ^ splitmix64(static_cast<uint64_t>(position) + 0x51ed27ull));
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
