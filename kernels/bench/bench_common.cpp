#include <algorithm>
#include <random>
#include <vector>

#include "kernels/bench/bench.h"
#include "kernels/cuda/check.h"
#include "kernels/dtype.h"

namespace isim::kernels::bench {

bool Options::wants(const std::string& section) const {
  return only.empty() || std::find(only.begin(), only.end(), section) != only.end();
}

const std::vector<ModelShape>& bench_models() {
  // Llama-3.1-8B: 32 q / 8 kv heads, hidden 4096, ffn 14336. Llama-3.1-70B: 64 / 8, hidden
  // 8192, ffn 28672; Qwen3-32B has the same attention shape (64 / 8, head dim 128).
  static const std::vector<ModelShape> models = {
      {"llama-3.1-8b", 32, 8, 128, 4096, 14336},
      {"llama-3.1-70b+qwen3-32b", 64, 8, 128, 8192, 28672},
  };
  return models;
}

double median_ms(cudaStream_t stream, int warmup, int reps,
                 const std::function<void(int)>& enqueue) {
  cudaEvent_t start, stop;
  ISIM_CUDA_CHECK(cudaEventCreate(&start));
  ISIM_CUDA_CHECK(cudaEventCreate(&stop));
  for (int i = 0; i < warmup; ++i) enqueue(i);
  ISIM_CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<float> ms(static_cast<size_t>(reps));
  for (int i = 0; i < reps; ++i) {
    ISIM_CUDA_CHECK(cudaEventRecord(start, stream));
    enqueue(warmup + i);
    ISIM_CUDA_CHECK(cudaEventRecord(stop, stream));
    ISIM_CUDA_CHECK(cudaEventSynchronize(stop));
    ISIM_CUDA_CHECK(cudaEventElapsedTime(&ms[static_cast<size_t>(i)], start, stop));
  }
  ISIM_CUDA_CHECK(cudaEventDestroy(start));
  ISIM_CUDA_CHECK(cudaEventDestroy(stop));
  std::sort(ms.begin(), ms.end());
  const size_t n = ms.size();
  return n % 2 ? ms[n / 2] : 0.5 * (double(ms[n / 2 - 1]) + double(ms[n / 2]));
}

DeviceMemory::DeviceMemory(size_t bytes) : bytes_(bytes) {
  ISIM_CUDA_CHECK(cudaMalloc(&p_, bytes));
}
DeviceMemory::~DeviceMemory() {
  cudaFree(p_);
}

PinnedMemory::PinnedMemory(size_t bytes) : bytes_(bytes) {
  ISIM_CUDA_CHECK(cudaHostAlloc(&p_, bytes, cudaHostAllocPortable | cudaHostAllocMapped));
}
PinnedMemory::~PinnedMemory() {
  cudaFreeHost(p_);
}

void fill_random_bf16(void* device, size_t bytes, uint64_t seed) {
  constexpr size_t kTile = size_t{64} << 20;
  std::vector<uint16_t> tile(std::min(kTile, bytes) / 2);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (uint16_t& h : tile) h = float_to_bf16(u(rng));
  const size_t tile_bytes = tile.size() * 2;
  auto* dst = static_cast<char*>(device);
  ISIM_CUDA_CHECK(cudaMemcpy(dst, tile.data(), tile_bytes, cudaMemcpyHostToDevice));
  for (size_t at = tile_bytes; at < bytes; at += tile_bytes)
    ISIM_CUDA_CHECK(
        cudaMemcpy(dst + at, dst, std::min(tile_bytes, bytes - at), cudaMemcpyDeviceToDevice));
}

Ceilings measure_ceilings(const Options& opt, const Device& dev, std::vector<Row>& rows) {
  Ceilings c;
  // Far larger than L2, so every copy streams from and to HBM.
  const size_t dbytes = std::max<size_t>(size_t{1} << 30, size_t(dev.l2_bytes) * 16);
  const size_t hbytes = size_t{1} << 30;
  DeviceMemory a(dbytes), b(dbytes);
  PinnedMemory h_out(hbytes), h_in(hbytes);
  cudaStream_t s0, s1;
  ISIM_CUDA_CHECK(cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking));
  ISIM_CUDA_CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  cudaEvent_t fork, join;
  ISIM_CUDA_CHECK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  ISIM_CUDA_CHECK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));

  auto add = [&](const char* cell, const char* dir, int64_t bytes, double ms) {
    Row r;
    r.section = "ceiling";
    r.cell = cell;
    r.path = "cudaMemcpyAsync";
    r.direction = dir;
    r.bytes = bytes;
    r.median_ms = ms;
    r.gbps = gb_per_s(bytes, ms);
    rows.push_back(r);
    return r.gbps;
  };
  const int warm = std::max(1, opt.warmup / 2), reps = std::max(3, opt.reps / 2);
  double ms = median_ms(s0, warm, reps, [&](int) {
    ISIM_CUDA_CHECK(cudaMemcpyAsync(b.get(), a.get(), dbytes, cudaMemcpyDeviceToDevice, s0));
  });
  c.d2d = add("device-to-device copy (read + write bytes)", "d2d", int64_t(2 * dbytes), ms);
  ms = median_ms(s0, warm, reps, [&](int) {
    ISIM_CUDA_CHECK(cudaMemcpyAsync(a.get(), h_in.get(), hbytes, cudaMemcpyHostToDevice, s0));
  });
  c.h2d = add("large pinned copy", "h2d", int64_t(hbytes), ms);
  ms = median_ms(s0, warm, reps, [&](int) {
    ISIM_CUDA_CHECK(cudaMemcpyAsync(h_out.get(), b.get(), hbytes, cudaMemcpyDeviceToHost, s0));
  });
  c.d2h = add("large pinned copy", "d2h", int64_t(hbytes), ms);
  ms = median_ms(s0, warm, reps, [&](int) {
    ISIM_CUDA_CHECK(cudaEventRecord(fork, s0));
    ISIM_CUDA_CHECK(cudaStreamWaitEvent(s1, fork, 0));
    ISIM_CUDA_CHECK(cudaMemcpyAsync(a.get(), h_in.get(), hbytes, cudaMemcpyHostToDevice, s0));
    ISIM_CUDA_CHECK(cudaMemcpyAsync(h_out.get(), b.get(), hbytes, cudaMemcpyDeviceToHost, s1));
    ISIM_CUDA_CHECK(cudaEventRecord(join, s1));
    ISIM_CUDA_CHECK(cudaStreamWaitEvent(s0, join, 0));
  });
  c.duplex = add("large pinned copies, both directions at once", "both", int64_t(2 * hbytes), ms);

  ISIM_CUDA_CHECK(cudaEventDestroy(fork));
  ISIM_CUDA_CHECK(cudaEventDestroy(join));
  ISIM_CUDA_CHECK(cudaStreamDestroy(s0));
  ISIM_CUDA_CHECK(cudaStreamDestroy(s1));
  return c;
}

}  // namespace isim::kernels::bench
