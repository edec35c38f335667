// KV block copies between device memory and pinned host memory (BlockCopy in
// kernels/kv_layout.h says which bytes move). Three paths with the same result:
//
//   kPerBlock   one cudaMemcpyAsync per (block, plane): the baseline every KV swapper starts
//               with
//   kCoalesced  one cudaMemcpyAsync per (run, plane): runs of consecutive blocks (copy_runs in
//               kernels/kv_layout.h) move as one DMA
//   kBatched    one cudaMemcpyBatchAsync of every (run, plane) (CUDA runtime >= 12.8, else
//               unavailable: batched_copy_available() says which)
//   kKernel     one gather/scatter kernel on at most kMaxCopyCtas CTAs (a grid-stride loop over
//               the segments), so a swap never takes the SMs from the forward pass; SMs move
//               16-byte vectors, e.g. packing scattered pool blocks into a contiguous pinned
//               staging buffer (gather_blocks) or back (scatter_blocks)
//
// Defaults (default_copy_path): host to device (swap-in) by DMA, batched where the runtime has
// it, else coalesced; device to host (swap-out) by the kernel. UNVERIFIED on a GPU: which path
// is fastest each way is what isim-kernel-bench --only copy measures.
//
// Layer 1 (raw launchers): ids are read where the path reads them: on the host, during the
// call, for kPerBlock and kBatched; on the device, when the kernel runs, for kKernel.
// Host buffers the kernel touches must be pinned (cudaHostAlloc / cudaMallocHost); with unified
// addressing their host pointer is valid on the device. The kernel path needs block_bytes,
// the strides and the base pointers 16-byte aligned, else it returns cudaErrorInvalidValue.
//
// Layer 3 (CopyEngine): owns one dedicated non-blocking copy stream; submit() takes host ids
// for every path, enqueues the copy and records a caller's event after it, so completion is
// observed with cudaEventQuery / cudaEventSynchronize / cudaStreamWaitEvent.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string_view>
#include <vector>

#include "kernels/kv_layout.h"

namespace isim::kernels::cuda {

enum class CopyPath : uint8_t { kPerBlock, kCoalesced, kBatched, kKernel };

// "per-block", "coalesced", "batched", "kernel"
std::string_view copy_path_name(CopyPath path);

// True when this build's CUDA runtime has cudaMemcpyBatchAsync (12.8 and later).
bool batched_copy_available();

// The path a swap takes by default: to_device (host to device) kBatched when available, else
// kCoalesced; device to host kKernel.
CopyPath default_copy_path(bool to_device);

// The copy kernel's CTA cap: enough 16-byte loads in flight to cover PCIe latency (16 CTAs x
// 256 threads x 4 vectors = 256 KiB), few enough to leave the other SMs to the forward pass.
constexpr int kMaxCopyCtas = 16;

cudaError_t copy_blocks_per_block(const BlockCopy& copy, cudaStream_t stream);
cudaError_t copy_blocks_coalesced(const BlockCopy& copy, cudaStream_t stream);
// cudaErrorNotSupported when !batched_copy_available(). `stream` must not be the legacy
// default stream.
cudaError_t copy_blocks_batched(const BlockCopy& copy, cudaStream_t stream);
cudaError_t launch_copy_blocks_kernel(const BlockCopy& copy, cudaStream_t stream);

class CopyEngine {
 public:
  // Creates the copy stream on the current device. Throws CudaError on failure.
  CopyEngine();
  ~CopyEngine();
  CopyEngine(const CopyEngine&) = delete;
  CopyEngine& operator=(const CopyEngine&) = delete;

  cudaStream_t stream() const { return stream_; }

  // Enqueues `copy` (src_ids / dst_ids in host memory, or null) by `path` and, when `done` is
  // not null, records it after the copy. kBatched falls back to kCoalesced when the runtime
  // lacks the batched API. The ids may be reused as soon as submit returns.
  cudaError_t submit(CopyPath path, const BlockCopy& copy, cudaEvent_t done = nullptr);

  // Waits for everything submitted so far.
  cudaError_t synchronize();

 private:
  // The kernel path needs the ids on the device: a small ring of pinned + device id buffers,
  // each reusable once the event recorded after its kernel has fired.
  struct IdSlot {
    int32_t* host = nullptr;
    int32_t* device = nullptr;
    int64_t capacity = 0;
    cudaEvent_t free = nullptr;
  };
  cudaError_t submit_kernel(const BlockCopy& copy);

  cudaStream_t stream_ = nullptr;
  std::vector<IdSlot> slots_;
  size_t next_slot_ = 0;
};

}  // namespace isim::kernels::cuda
