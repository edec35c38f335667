// Element types of a KV pool, and exact host-side conversions between them and float.
//
// Contract:
// - CUDA kernels take bf16 or fp16 (16-bit storage; the bits match __nv_bfloat16 / __half).
//   The CPU reference works in float32. Tests, benches and calibration convert with these
//   functions, so they never need CUDA headers.
// - float -> 16-bit rounds to nearest, ties to even; overflow gives +-inf; NaN stays NaN
//   (quiet). 16-bit -> float is exact.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <string_view>

namespace isim::kernels {

enum class Dtype : uint8_t { kF32, kF16, kBF16 };

constexpr int dtype_bytes(Dtype t) {
  return t == Dtype::kF32 ? 4 : 2;
}

constexpr std::string_view dtype_name(Dtype t) {
  switch (t) {
    case Dtype::kF32:
      return "f32";
    case Dtype::kF16:
      return "f16";
    case Dtype::kBF16:
      return "bf16";
  }
  return "?";
}

inline float bf16_to_float(uint16_t h) {
  return std::bit_cast<float>(uint32_t{h} << 16);
}

inline uint16_t float_to_bf16(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

inline float f16_to_float(uint16_t h) {
  const uint32_t sign = uint32_t{h & 0x8000u} << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0) {  // zero or subnormal: mant * 2^-24, exact in float
    const float mag = static_cast<float>(mant) * 0x1p-24f;
    return sign ? -mag : mag;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (mant << 13));
}

inline uint16_t float_to_f16(float f) {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t x = u & 0x7fffffffu;
  if (x > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);   // NaN
  if (x >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520: inf
  if (x >= 0x38800000u) {  // normal half: rebias the exponent, round away 13 mantissa bits
    const uint32_t r = x - (112u << 23) + 0xfffu + ((x >> 13) & 1u);
    return static_cast<uint16_t>(sign | (r >> 13));
  }
  // Subnormal half (or zero): units of 2^-24; the scaling is exact and nearbyint rounds to even.
  const float units = std::nearbyint(std::bit_cast<float>(x) * 0x1p24f);
  return static_cast<uint16_t>(sign | static_cast<uint32_t>(units));
}

inline float half_to_float(Dtype t, uint16_t h) {
  return t == Dtype::kBF16 ? bf16_to_float(h) : f16_to_float(h);
}
inline uint16_t float_to_half(Dtype t, float f) {
  return t == Dtype::kBF16 ? float_to_bf16(f) : float_to_f16(f);
}

}  // namespace isim::kernels
