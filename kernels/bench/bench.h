// Shared pieces of isim-kernel-bench: options, result rows, event timing, device buffers.
// A benchmark prints figures; nothing here passes or fails on timing.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace isim::kernels::bench {

struct Options {
  bool quick = false;
  std::string csv = "kernel-bench.csv";
  // Sections to measure besides the ceilings: any of "decode", "prefill", "gemm", "copy"; empty
  // measures all. wants() says whether one is selected.
  std::vector<std::string> only;
  bool wants(const std::string& section) const;
  int warmup = 5;
  int reps = 20;
};

struct Device {
  std::string name;
  int sm_count = 0;
  int64_t l2_bytes = 0;
  int64_t memory_bytes = 0;
  int runtime_version = 0;
  int driver_version = 0;
};

// An attention shape of a model the bench covers, in one dtype.
struct ModelShape {
  std::string model;  // "llama-3.1-8b", "llama-3.1-70b+qwen3-32b" (both 64 q / 8 kv heads)
  int32_t q_heads = 0, kv_heads = 0, head_dim = 0;
  int64_t hidden = 0, ffn = 0;  // for the GEMM cells (Llama-3.1-70B's for the shared shape)
};
// Llama-3.1-8B and the 64/8-head shape of Llama-3.1-70B and Qwen3-32B, head dim 128.
const std::vector<ModelShape>& bench_models();

// One measured cell. gbps = bytes / median time; pct = gbps / ceiling_gbps (or tflops /
// ceiling_tflops for compute cells).
struct Row {
  std::string section;    // "ceiling", "decode", "prefill", "gemm", "copy"
  std::string cell;       // human-readable cell name
  std::string path;       // kernel or copy path
  std::string direction;  // "d2h", "h2d", "both", "d2d" or ""
  int64_t batch = 0, context = 0, block_tokens = 0, blocks = 0, splits = 0;
  int64_t bytes = 0;
  double median_ms = 0;
  double gbps = 0;
  std::string ceiling;  // which ceiling the cell is compared with
  double ceiling_gbps = 0;
  std::string model, dtype;  // attention and GEMM cells
  double tflops = 0, ceiling_tflops = 0;
};

// Rates measured first, which later cells are compared against.
struct Ceilings {
  double d2d = 0;     // cudaMemcpy device to device, counting read + write bytes
  double h2d = 0;     // large pinned host -> device
  double d2h = 0;     // large device -> pinned host
  double duplex = 0;  // both at once, total bytes of the two
  double gemm_tflops = 0;  // cuBLAS bf16 8192^3 GEMM (measured only for prefill and gemm cells)
};

// Calls enqueue(i) `warmup` times, then `reps` times each between two events recorded on
// `stream`; returns the median milliseconds. Work on other streams must fork from and join
// back to `stream` inside enqueue.
double median_ms(cudaStream_t stream, int warmup, int reps,
                 const std::function<void(int)>& enqueue);

inline double gb_per_s(int64_t bytes, double ms) {
  return ms > 0 ? double(bytes) / (ms * 1e6) : 0;
}

// Owning device allocation (bytes).
class DeviceMemory {
 public:
  explicit DeviceMemory(size_t bytes);
  ~DeviceMemory();
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
  void* get() const { return p_; }
  size_t size() const { return bytes_; }

 private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

// Owning pinned, device-mapped host allocation (bytes).
class PinnedMemory {
 public:
  explicit PinnedMemory(size_t bytes);
  ~PinnedMemory();
  PinnedMemory(const PinnedMemory&) = delete;
  PinnedMemory& operator=(const PinnedMemory&) = delete;
  void* get() const { return p_; }
  size_t size() const { return bytes_; }

 private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

// Fills `bytes` of device memory with random bf16 values in [-1, 1]: one random 64 MiB tile,
// copied device to device across the range.
void fill_random_bf16(void* device, size_t bytes, uint64_t seed);

Ceilings measure_ceilings(const Options& opt, const Device& dev, std::vector<Row>& rows);
void bench_decode(const Options& opt, const Device& dev, const Ceilings& c, std::vector<Row>& rows);
void bench_copy(const Options& opt, const Device& dev, const Ceilings& c, std::vector<Row>& rows);
// Sets c.gemm_tflops, then prefill attention cells (section "prefill") and cuBLAS GEMMs of the
// models' dense layers (section "gemm"), each against that peak.
void bench_compute(const Options& opt, const Device& dev, Ceilings& c, std::vector<Row>& rows);

}  // namespace isim::kernels::bench
