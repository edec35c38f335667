// The persistent threads of a windowed run (cluster/worker_pool.h).
#include "cluster/worker_pool.h"

#include <stdexcept>

namespace isim::cluster {

namespace {
// Spins before sleeping: about a microsecond or two of polling on current x86 cores.
constexpr int kSpins = 2000;

template <typename T, typename Pred>
void await(const std::atomic<T>& a, Pred done) {
  for (int i = 0; i < kSpins; ++i) {
    const T v = a.load(std::memory_order_acquire);
    if (done(v)) return;
  }
  for (T v = a.load(std::memory_order_acquire); !done(v); v = a.load(std::memory_order_acquire))
    a.wait(v, std::memory_order_acquire);
}
}  // namespace

WorkerPool::WorkerPool(int32_t parts) : parts_(parts), errors_(static_cast<size_t>(parts)) {
  if (parts < 1) throw std::logic_error("WorkerPool: parts must be >= 1");
  for (int32_t k = 1; k < parts; ++k) threads_.emplace_back([this, k] { loop(k); });
}

WorkerPool::~WorkerPool() {
  stop_.store(true, std::memory_order_release);
  round_.fetch_add(1, std::memory_order_acq_rel);
  round_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void WorkerPool::loop(int32_t k) {
  uint64_t seen = 0;
  while (true) {
    await(round_, [seen](uint64_t v) { return v != seen; });
    seen = round_.load(std::memory_order_acquire);
    if (stop_.load(std::memory_order_acquire)) return;
    try {
      (*job_)(k);
    } catch (...) {
      errors_[static_cast<size_t>(k)] = std::current_exception();
    }
    if (left_.fetch_sub(1, std::memory_order_acq_rel) == 1) left_.notify_one();
  }
}

void WorkerPool::run(const std::function<void(int32_t)>& job) {
  if (parts_ == 1) return job(0);
  job_ = &job;
  left_.store(parts_ - 1, std::memory_order_relaxed);
  round_.fetch_add(1, std::memory_order_acq_rel);
  round_.notify_all();
  try {
    job(0);
  } catch (...) {
    errors_[0] = std::current_exception();
  }
  await(left_, [](int32_t v) { return v == 0; });
  for (std::exception_ptr& e : errors_) {
    if (!e) continue;
    std::exception_ptr first = e;
    for (std::exception_ptr& x : errors_) x = nullptr;
    std::rethrow_exception(first);
  }
}

}  // namespace isim::cluster
