// Host side of the block copies: the memcpy paths and CopyEngine (kernels/cuda/block_copy.h).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/cuda/block_copy.h"
#include "kernels/cuda/check.h"

namespace isim::kernels::cuda {
namespace {

constexpr size_t kIdSlots = 4;

bool valid(const BlockCopy& c) {
  return c.count >= 0 && c.planes >= 1 && c.block_bytes >= 1 &&
         (c.count == 0 || (c.src != nullptr && c.dst != nullptr));
}

const char* src_at(const BlockCopy& c, int64_t i, int64_t p) {
  const int64_t b = c.src_ids ? c.src_ids[i] : i;
  return static_cast<const char*>(c.src) + p * c.src_plane_stride + b * c.block_bytes;
}
char* dst_at(const BlockCopy& c, int64_t i, int64_t p) {
  const int64_t b = c.dst_ids ? c.dst_ids[i] : i;
  return static_cast<char*>(c.dst) + p * c.dst_plane_stride + b * c.block_bytes;
}

}  // namespace

std::string_view copy_path_name(CopyPath path) {
  switch (path) {
    case CopyPath::kPerBlock:
      return "per-block";
    case CopyPath::kCoalesced:
      return "coalesced";
    case CopyPath::kBatched:
      return "batched";
    case CopyPath::kKernel:
      return "kernel";
  }
  return "?";
}

bool batched_copy_available() {
#if CUDART_VERSION >= 12080
  return true;
#else
  return false;
#endif
}

CopyPath default_copy_path(bool to_device) {
  if (!to_device) return CopyPath::kKernel;
  return batched_copy_available() ? CopyPath::kBatched : CopyPath::kCoalesced;
}

cudaError_t copy_blocks_per_block(const BlockCopy& c, cudaStream_t stream) {
  return cuda_status([&]() -> cudaError_t {
    if (!valid(c)) return cudaErrorInvalidValue;
    const auto bytes = static_cast<size_t>(c.block_bytes);
    for (int64_t i = 0; i < c.count; ++i) {
      for (int64_t p = 0; p < c.planes; ++p)
        ISIM_CUDA_CHECK(
            cudaMemcpyAsync(dst_at(c, i, p), src_at(c, i, p), bytes, cudaMemcpyDefault, stream));
    }
    return cudaSuccess;
  });
}

cudaError_t copy_blocks_coalesced(const BlockCopy& c, cudaStream_t stream) {
  return cuda_status([&]() -> cudaError_t {
    if (!valid(c)) return cudaErrorInvalidValue;
    for (const CopyRun& r : copy_runs(c)) {
      const auto bytes = static_cast<size_t>(r.blocks * c.block_bytes);
      for (int64_t p = 0; p < c.planes; ++p)
        ISIM_CUDA_CHECK(cudaMemcpyAsync(dst_at(c, r.first, p), src_at(c, r.first, p), bytes,
                                        cudaMemcpyDefault, stream));
    }
    return cudaSuccess;
  });
}

cudaError_t copy_blocks_batched(const BlockCopy& c, cudaStream_t stream) {
  return cuda_status([&]() -> cudaError_t {
    if (!valid(c)) return cudaErrorInvalidValue;
#if CUDART_VERSION >= 12080
    if (c.count == 0) return cudaSuccess;
    const std::vector<CopyRun> runs = copy_runs(c);
    const auto n = runs.size() * static_cast<size_t>(c.planes);
    std::vector<void*> dsts(n), srcs(n);
    std::vector<size_t> sizes(n);
    size_t k = 0;
    for (const CopyRun& r : runs) {
      for (int64_t p = 0; p < c.planes; ++p, ++k) {
        dsts[k] = dst_at(c, r.first, p);
        srcs[k] = const_cast<char*>(src_at(c, r.first, p));
        sizes[k] = static_cast<size_t>(r.blocks * c.block_bytes);
      }
    }
    // One attribute set for every copy: sources are read in stream order.
    cudaMemcpyAttributes attr{};
    attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    size_t attr_first = 0;
#if CUDART_VERSION >= 13000
    ISIM_CUDA_CHECK(cudaMemcpyBatchAsync(dsts.data(), srcs.data(), sizes.data(), n, &attr,
                                         &attr_first, 1, stream));
#else  // 12.8 / 12.9 take an extra failIdx output
    size_t fail_idx = 0;
    ISIM_CUDA_CHECK(cudaMemcpyBatchAsync(dsts.data(), srcs.data(), sizes.data(), n, &attr,
                                         &attr_first, 1, &fail_idx, stream));
#endif
    return cudaSuccess;
#else
    (void)stream;
    return cudaErrorNotSupported;
#endif
  });
}

CopyEngine::CopyEngine() : slots_(kIdSlots) {
  ISIM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  for (IdSlot& s : slots_)
    ISIM_CUDA_CHECK(cudaEventCreateWithFlags(&s.free, cudaEventDisableTiming));
}

CopyEngine::~CopyEngine() {
  // Errors cannot propagate from a destructor; a failed sync leaves the memory to the driver.
  if (stream_ && cudaStreamSynchronize(stream_) != cudaSuccess) return;
  for (IdSlot& s : slots_) {
    if (s.host) cudaFreeHost(s.host);
    if (s.device) cudaFree(s.device);
    if (s.free) cudaEventDestroy(s.free);
  }
  if (stream_) cudaStreamDestroy(stream_);
}

cudaError_t CopyEngine::submit(CopyPath path, const BlockCopy& copy, cudaEvent_t done) {
  return cuda_status([&]() -> cudaError_t {
    switch (path) {
      case CopyPath::kPerBlock:
        ISIM_CUDA_CHECK(copy_blocks_per_block(copy, stream_));
        break;
      case CopyPath::kCoalesced:
        ISIM_CUDA_CHECK(copy_blocks_coalesced(copy, stream_));
        break;
      case CopyPath::kBatched:
        ISIM_CUDA_CHECK(batched_copy_available() ? copy_blocks_batched(copy, stream_)
                                                 : copy_blocks_coalesced(copy, stream_));
        break;
      case CopyPath::kKernel:
        ISIM_CUDA_CHECK(submit_kernel(copy));
        break;
    }
    if (done) ISIM_CUDA_CHECK(cudaEventRecord(done, stream_));
    return cudaSuccess;
  });
}

cudaError_t CopyEngine::submit_kernel(const BlockCopy& copy) {
  return cuda_status([&]() -> cudaError_t {
    if (!valid(copy)) return cudaErrorInvalidValue;
    if (copy.count == 0) return cudaSuccess;
    IdSlot& s = slots_[next_slot_];
    next_slot_ = (next_slot_ + 1) % slots_.size();
    ISIM_CUDA_CHECK(cudaEventSynchronize(s.free));  // its previous kernel has read its ids
    const int64_t need = (copy.src_ids ? copy.count : 0) + (copy.dst_ids ? copy.count : 0);
    if (need > s.capacity) {
      if (s.host) ISIM_CUDA_CHECK(cudaFreeHost(s.host));
      if (s.device) ISIM_CUDA_CHECK(cudaFree(s.device));
      s.host = nullptr;
      s.device = nullptr;
      s.capacity = 0;
      const int64_t cap = std::max<int64_t>(need, 1024);
      ISIM_CUDA_CHECK(
          cudaMallocHost(reinterpret_cast<void**>(&s.host), sizeof(int32_t) * size_t(cap)));
      ISIM_CUDA_CHECK(
          cudaMalloc(reinterpret_cast<void**>(&s.device), sizeof(int32_t) * size_t(cap)));
      s.capacity = cap;
    }
    BlockCopy dev = copy;
    int64_t at = 0;
    for (const int32_t** ids : {&dev.src_ids, &dev.dst_ids}) {
      if (!*ids) continue;
      std::memcpy(s.host + at, *ids, sizeof(int32_t) * size_t(copy.count));
      *ids = s.device + at;
      at += copy.count;
    }
    if (need > 0)
      ISIM_CUDA_CHECK(cudaMemcpyAsync(s.device, s.host, sizeof(int32_t) * size_t(need),
                                      cudaMemcpyHostToDevice, stream_));
    ISIM_CUDA_CHECK(launch_copy_blocks_kernel(dev, stream_));
    ISIM_CUDA_CHECK(cudaEventRecord(s.free, stream_));
    return cudaSuccess;
  });
}

cudaError_t CopyEngine::synchronize() {
  return cudaStreamSynchronize(stream_);
}

}  // namespace isim::kernels::cuda
