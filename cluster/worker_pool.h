// WorkerPool: N - 1 persistent threads beside the caller's, for work split in N fixed parts
// that is handed out many times a second (one cluster window each time, cluster/window.h).
//
// Contract:
// - `run(job)` calls job(k) once for every part k in [0, parts()): part 0 on the calling thread,
//   the others on the pool's threads, and returns when all have returned. Everything a part
//   wrote is visible to the caller after run, and what the caller wrote before run is visible
//   to every part. With one part nothing is started and run is a plain call.
// - A part that throws does not stop the others; run rethrows the exception of the lowest part
//   that threw, once all have finished.
// - Waiting spins briefly, then sleeps (std::atomic wait): a window is a few microseconds of
//   work, too short to sleep through every time, and a long serial stretch must not burn a core.
// - The destructor stops and joins the threads. Not copyable; one run at a time.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <thread>
#include <vector>

namespace isim::cluster {

class WorkerPool {
 public:
  explicit WorkerPool(int32_t parts);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  int32_t parts() const { return parts_; }
  void run(const std::function<void(int32_t)>& job);

 private:
  void loop(int32_t k);

  int32_t parts_;
  const std::function<void(int32_t)>* job_ = nullptr;
  std::atomic<uint64_t> round_{0};  // bumped by run: a new job for every thread
  std::atomic<int32_t> left_{0};    // threads still working on the current round
  std::atomic<bool> stop_{false};
  std::vector<std::exception_ptr> errors_;  // by part
  std::vector<std::thread> threads_;
};

}  // namespace isim::cluster
