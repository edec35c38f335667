// Model and profile consistency checks (see profile_consistency.h for the contract).
#include "sim/profile_consistency.h"

#include <algorithm>
#include <cstddef>

#include <fmt/format.h>

namespace isim::sim {

std::optional<HeadsProblem> heads_problem(int heads, int kv_heads, int tp, bool mla) {
  if (kv_heads > heads)
    return HeadsProblem{"kv_heads", fmt::format("{} is more than heads {}; expected at most {} "
                                                "(a KV head serves one or more query heads)",
                                                kv_heads, heads, heads)};
  if (kv_heads > 0 && heads % kv_heads != 0)
    return HeadsProblem{"kv_heads", fmt::format("{} does not divide heads {}; expected a divisor "
                                                "of it (each KV head serves as many query heads)",
                                                kv_heads, heads)};
  if (tp > 0 && heads % tp != 0)
    return HeadsProblem{"tp", fmt::format("{} does not divide heads {}; expected a divisor of it "
                                          "(the tensor-parallel ranks split the heads evenly)",
                                          tp, heads)};
  if (mla || tp <= 0 || kv_heads <= 0) return std::nullopt;
  if (tp <= kv_heads && kv_heads % tp != 0)
    return HeadsProblem{"tp", fmt::format("{} does not divide kv_heads {}; expected a divisor of "
                                          "it (the ranks split the KV heads evenly)",
                                          tp, kv_heads)};
  if (tp > kv_heads && tp % kv_heads != 0)
    return HeadsProblem{"tp", fmt::format("{} is not a multiple of kv_heads {}; expected one (a "
                                          "KV head is replicated over tp / kv_heads ranks)",
                                          tp, kv_heads)};
  return std::nullopt;
}

std::string rising_problem(std::span<const double> x, std::span<const double> y,
                           std::string_view axis) {
  const std::size_t n = std::min(x.size(), y.size());
  std::size_t top = 0;  // the largest time so far
  for (std::size_t i = 1; i < n; ++i) {
    if (y[i] < (1 - kNoiseDip) * y[top])
      return fmt::format(
          "{} us at {} {} is {:.1f}% below the {} us at {} {}; expected more {} "
          "never to cost less (at most {:.0f}% less: noise and kernel switches)",
          y[i], axis, x[i], 100 * (1 - y[i] / y[top]), y[top], axis, x[top], axis, 100 * kNoiseDip);
    if (y[i] > y[top]) top = i;
  }
  return "";
}

}  // namespace isim::sim
