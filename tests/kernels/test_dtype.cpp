#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "kernels/dtype.h"

using namespace isim::kernels;

namespace {
bool is_nan16(Dtype t, uint16_t h) {
  return t == Dtype::kBF16 ? (h & 0x7f80u) == 0x7f80u && (h & 0x7fu)
                           : (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu);
}
}  // namespace

TEST_CASE("every non-NaN 16-bit value survives a round trip through float") {
  for (Dtype t : {Dtype::kBF16, Dtype::kF16}) {
    int mismatches = 0;
    for (uint32_t h = 0; h <= 0xffffu; ++h) {
      const auto bits = static_cast<uint16_t>(h);
      if (is_nan16(t, bits)) {
        CHECK(std::isnan(half_to_float(t, bits)));
        CHECK(is_nan16(t, float_to_half(t, half_to_float(t, bits))));
        continue;
      }
      if (float_to_half(t, half_to_float(t, bits)) != bits) ++mismatches;
    }
    CHECK_MESSAGE(mismatches == 0, dtype_name(t));
  }
}

TEST_CASE("bf16 rounds to nearest, ties to even") {
  CHECK(float_to_bf16(1.0f) == 0x3f80);
  CHECK(float_to_bf16(1.0f + 0x1p-8f) == 0x3f80);      // tie, down to even
  CHECK(float_to_bf16(1.0f + 3 * 0x1p-8f) == 0x3f82);  // tie, up to even
  CHECK(float_to_bf16(1.0f + 0x1p-8f + 0x1p-20f) == 0x3f81);
  CHECK(float_to_bf16(-2.5f) == 0xc020);
  CHECK(float_to_bf16(std::numeric_limits<float>::max()) == 0x7f80);  // rounds up to inf
  CHECK(bf16_to_float(0x4049) == 3.140625f);
}

TEST_CASE("fp16 rounds to nearest even, including subnormals and overflow") {
  CHECK(float_to_f16(1.0f) == 0x3c00);
  CHECK(float_to_f16(1.0f + 0x1p-11f) == 0x3c00);      // tie, down to even
  CHECK(float_to_f16(1.0f + 3 * 0x1p-11f) == 0x3c02);  // tie, up to even
  CHECK(float_to_f16(65504.0f) == 0x7bff);
  CHECK(float_to_f16(65519.0f) == 0x7bff);
  CHECK(float_to_f16(65520.0f) == 0x7c00);  // halfway to 2^16: even is inf
  CHECK(float_to_f16(-1e9f) == 0xfc00);
  CHECK(float_to_f16(0x1p-24f) == 0x0001);         // smallest subnormal
  CHECK(float_to_f16(0x1p-25f) == 0x0000);         // tie between 0 and 2^-24: even is 0
  CHECK(float_to_f16(1.5f * 0x1p-24f) == 0x0002);  // tie between 1 and 2 units: even is 2
  CHECK(float_to_f16(0x1p-14f) == 0x0400);         // smallest normal
  CHECK(float_to_f16(-0.0f) == 0x8000);
  CHECK(f16_to_float(0x0001) == 0x1p-24f);
  CHECK(f16_to_float(0x3555) == 0.333251953125f);
  CHECK(std::isinf(f16_to_float(0x7c00)));
}
