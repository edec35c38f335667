// Deterministic synthetic weights: a counter-based generator, so element i of any tensor can be
// produced independently (on the host or in a CUDA kernel) and both backends agree.
//
// Contract: weight_value(seed, tensor, i) is a pure function returning a float uniform in
// [-1, 1) with 24 random bits, from splitmix64 of (seed, tensor, i). No std:: distributions.
#pragma once

#include <cstdint>

#include "kernels/kv_layout.h"  // ISIM_HD

namespace isim::kernels::runner {

ISIM_HD inline uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

ISIM_HD inline float weight_value(uint64_t seed, uint32_t tensor, uint64_t i) {
  const uint64_t h = splitmix64(splitmix64(seed ^ (uint64_t{tensor} << 48)) + i);
  return static_cast<float>(static_cast<int64_t>(h >> 40) - (int64_t{1} << 23)) * 0x1p-23f;
}

// Tensor ids: per layer kPerLayer consecutive ids from layer * kPerLayer, then the globals.
enum TensorId : uint32_t {
  kQkv = 0,
  kO = 1,
  kGateUp = 2,
  kDown = 3,
  kPerLayer = 4,
  kEmbedding = 0xfff0,
  kLmHead = 0xfff1,
};

}  // namespace isim::kernels::runner
