// RAII device and pinned buffers plus 16-bit conversions for the GPU tests and the bench.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "kernels/cuda/check.h"
#include "kernels/dtype.h"

namespace isim::test {

template <typename T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t n) : n_(n) {
    ISIM_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&p_), sizeof(T) * (n ? n : 1)));
  }
  explicit DeviceBuffer(const std::vector<T>& v) : DeviceBuffer(v.size()) { upload(v); }
  ~DeviceBuffer() { cudaFree(p_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* get() const { return p_; }
  size_t size() const { return n_; }
  void upload(const std::vector<T>& v) {
    ISIM_CUDA_CHECK(cudaMemcpy(p_, v.data(), sizeof(T) * v.size(), cudaMemcpyHostToDevice));
  }
  std::vector<T> download() const {
    std::vector<T> v(n_);
    ISIM_CUDA_CHECK(cudaMemcpy(v.data(), p_, sizeof(T) * n_, cudaMemcpyDeviceToHost));
    return v;
  }
  // Fills every byte with `byte` (0xff: NaN for bf16, fp16 and float).
  void poison(int byte = 0xff) { ISIM_CUDA_CHECK(cudaMemset(p_, byte, sizeof(T) * n_)); }

 private:
  T* p_ = nullptr;
  size_t n_ = 0;
};

class PinnedBuffer {
 public:
  explicit PinnedBuffer(size_t bytes) : bytes_(bytes) {
    ISIM_CUDA_CHECK(
        cudaHostAlloc(&p_, bytes ? bytes : 1, cudaHostAllocPortable | cudaHostAllocMapped));
  }
  ~PinnedBuffer() { cudaFreeHost(p_); }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  unsigned char* get() const { return static_cast<unsigned char*>(p_); }
  size_t size() const { return bytes_; }

 private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

inline std::vector<uint16_t> to_half(const std::vector<float>& v, kernels::Dtype t) {
  std::vector<uint16_t> h(v.size());
  for (size_t i = 0; i < v.size(); ++i) h[i] = kernels::float_to_half(t, v[i]);
  return h;
}
inline std::vector<float> to_float(const std::vector<uint16_t>& h, kernels::Dtype t) {
  std::vector<float> v(h.size());
  for (size_t i = 0; i < h.size(); ++i) v[i] = kernels::half_to_float(t, h[i]);
  return v;
}
// Rounds values to what the 16-bit type can hold, so the float reference sees the same inputs.
inline void round_to(std::vector<float>& v, kernels::Dtype t) {
  for (float& x : v) x = kernels::half_to_float(t, kernels::float_to_half(t, x));
}

}  // namespace isim::test
