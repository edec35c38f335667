// Grow-only device and pinned host buffers for the CUDA runner and swap bench (host code).
//
// Contract: reserve(bytes) keeps the buffer when it is already large enough, otherwise frees it
// and allocates `bytes` (contents are lost). Allocation failures throw cuda::CudaError.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <utility>

#include "kernels/cuda/check.h"

namespace isim::kernels::runner {

template <bool Pinned>
class CudaBuffer {
 public:
  CudaBuffer() = default;
  CudaBuffer(CudaBuffer&& o) noexcept
      : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  CudaBuffer& operator=(CudaBuffer&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  CudaBuffer(const CudaBuffer&) = delete;
  CudaBuffer& operator=(const CudaBuffer&) = delete;
  ~CudaBuffer() { release(); }

  void reserve(int64_t bytes) {
    if (bytes <= bytes_) return;
    release();
    if constexpr (Pinned)
      ISIM_CUDA_CHECK(cudaHostAlloc(&ptr_, static_cast<size_t>(bytes), cudaHostAllocDefault));
    else
      ISIM_CUDA_CHECK(cudaMalloc(&ptr_, static_cast<size_t>(bytes)));
    bytes_ = bytes;
  }
  void* data() const { return ptr_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  int64_t bytes() const { return bytes_; }

 private:
  void release() {
    if (!ptr_) return;
    if constexpr (Pinned)
      cudaFreeHost(ptr_);
    else
      cudaFree(ptr_);
    ptr_ = nullptr;
    bytes_ = 0;
  }
  void* ptr_ = nullptr;
  int64_t bytes_ = 0;
};

using DeviceBuffer = CudaBuffer<false>;
using PinnedBuffer = CudaBuffer<true>;

}  // namespace isim::kernels::runner
