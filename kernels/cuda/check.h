// The one way CUDA calls are checked in kernels/.
//
// ISIM_CUDA_CHECK(call) throws CudaError ("file:line: call: cudaErrorX: description") when the
// call does not return cudaSuccess. Launchers return cudaError_t instead of throwing: their
// bodies run inside cuda_status(), which turns a CudaError into its code. Callers that prefer
// exceptions (tests, benches, the live executor) wrap launcher calls in ISIM_CUDA_CHECK too.
#pragma once

#include <cuda_runtime_api.h>

#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace isim::kernels::cuda {

class CudaError : public std::runtime_error {
 public:
  CudaError(cudaError_t code, const std::string& what) : std::runtime_error(what), code_(code) {}
  cudaError_t code() const { return code_; }

 private:
  cudaError_t code_;
};

[[noreturn]] inline void throw_cuda_error(cudaError_t code, const char* call, const char* file,
                                          int line) {
  throw CudaError(code, std::string(file) + ":" + std::to_string(line) + ": " + call + ": " +
                            cudaGetErrorName(code) + ": " + cudaGetErrorString(code));
}

// Runs body (returning cudaError_t or void) and converts a thrown CudaError into its code.
template <typename Body>
cudaError_t cuda_status(Body&& body) noexcept {
  try {
    if constexpr (std::is_void_v<decltype(body())>) {
      body();
      return cudaSuccess;
    } else {
      return body();
    }
  } catch (const CudaError& e) {
    return e.code();
  } catch (const std::bad_alloc&) {
    return cudaErrorMemoryAllocation;
  } catch (...) {
    return cudaErrorUnknown;
  }
}

}  // namespace isim::kernels::cuda

#define ISIM_CUDA_CHECK(call)                                                                \
  do {                                                                                       \
    const cudaError_t isim_cuda_status_ = (call);                                            \
    if (isim_cuda_status_ != cudaSuccess)                                                    \
      ::isim::kernels::cuda::throw_cuda_error(isim_cuda_status_, #call, __FILE__, __LINE__); \
  } while (0)
