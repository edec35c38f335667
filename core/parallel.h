// A deterministic work loop for sweeps and plans: items [0, n) run on `jobs` threads (the
// calling thread is one of them), each item once, taken in index order.
//
// Contract: when an item throws, no thread starts another item, the loop waits for the items
// in flight, and rethrows the exception of the lowest failing index, so the error a user sees
// does not depend on thread timing. jobs is clamped to [1, n].
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace isim {

template <typename Fn>
void run_indexed(size_t n, size_t jobs, Fn&& fn) {
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex mu;
  size_t error_at = n;
  std::exception_ptr error;
  auto work = [&]() {
    while (!failed.load()) {
      const size_t i = next.fetch_add(1);
      if (i >= n) return;
      try {
        fn(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (i < error_at) {
          error_at = i;
          error = std::current_exception();
        }
        failed.store(true);
        return;
      }
    }
  };
  const size_t threads = std::max<size_t>(1, std::min(jobs, n));
  std::vector<std::thread> pool;
  for (size_t j = 1; j < threads; ++j) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace isim
