// The project's two hash functions, one definition each.
//
// Contract: splitmix64(x) is the splitmix64 finaliser of x + 0x9e3779b97f4a7c15 (a bijection on
// 64-bit words with good avalanche); fnv1a is 64-bit FNV-1a over the bytes. Both are pure and
// identical on every platform: trace fingerprints, prefix-cache chains and live execution's
// synthetic tokens depend on their exact values. (kernels/runner/init.h keeps its own
// host/device copy of splitmix64, since kernels/ depends on nothing of ours.)
#pragma once

#include <cstdint>
#include <string_view>

namespace isim {

inline uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

inline uint64_t fnv1a(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

}  // namespace isim
