// A fixed-partition parallel loop for the CPU reference.
//
// Contract: items [0, n) are split into `threads` contiguous ranges of near-equal size; each
// item runs exactly once. Callers give every item its own output, so results never depend on
// the thread count. threads <= 0 means std::thread::hardware_concurrency().
#pragma once

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace isim::kernels::cpu {

inline int resolve_threads(int threads) {
  if (threads > 0) return threads;
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

// fn(begin, end) processes items [begin, end).
template <typename Fn>
void parallel_for(int64_t n, int threads, Fn&& fn) {
  const int64_t t = std::min<int64_t>(resolve_threads(threads), n);
  if (t <= 1) {
    if (n > 0) fn(int64_t{0}, n);
    return;
  }
  std::vector<std::jthread> pool;
  pool.reserve(static_cast<size_t>(t - 1));
  for (int64_t k = 1; k < t; ++k)
    pool.emplace_back([&fn, n, t, k] { fn(n * k / t, n * (k + 1) / t); });
  fn(int64_t{0}, n / t);
}

}  // namespace isim::kernels::cpu
