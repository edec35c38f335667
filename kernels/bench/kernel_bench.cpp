// isim-kernel-bench: achieved bandwidth of the CUDA kernels against measured ceilings.
//
//   isim-kernel-bench [--quick] [--csv FILE]
//
// Measures the ceilings first (device-to-device copy; large pinned copies each way and both
// at once), then decode attention cells and KV block-copy cells. Every figure is the median of
// CUDA-event timings after warm-up, on buffers larger than L2 (small cells rotate between
// disjoint block sets). Prints a table and writes one CSV row per cell. Never gates anything.
#include <cuda_runtime_api.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kernels/bench/bench.h"
#include "kernels/cuda/block_copy.h"
#include "kernels/cuda/check.h"

namespace isim::kernels::bench {
namespace {

constexpr const char* kUsage =
    "usage: isim-kernel-bench [--quick] [--csv FILE]\n"
    "  --quick     fewer repetitions and copy sizes (about a minute on an H200)\n"
    "  --csv FILE  where to write the results (default kernel-bench.csv)\n";

Device query_device() {
  Device d;
  int dev = 0;
  ISIM_CUDA_CHECK(cudaGetDevice(&dev));
  cudaDeviceProp p{};
  ISIM_CUDA_CHECK(cudaGetDeviceProperties(&p, dev));
  d.name = p.name;
  d.sm_count = p.multiProcessorCount;
  d.l2_bytes = p.l2CacheSize;
  d.memory_bytes = int64_t(p.totalGlobalMem);
  ISIM_CUDA_CHECK(cudaRuntimeGetVersion(&d.runtime_version));
  ISIM_CUDA_CHECK(cudaDriverGetVersion(&d.driver_version));
  return d;
}

double pct(const Row& r) {
  return r.ceiling_gbps > 0 ? 100.0 * r.gbps / r.ceiling_gbps : 0;
}

void print_table(const Device& dev, const std::vector<Row>& rows) {
  fmt::print("\nisim-kernel-bench on {} ({} SMs, L2 {} MiB, CUDA runtime {}, driver {})\n",
             dev.name, dev.sm_count, dev.l2_bytes >> 20, dev.runtime_version, dev.driver_version);
  fmt::print("\nceilings\n");
  for (const Row& r : rows) {
    if (r.section != "ceiling") continue;
    fmt::print("  {:<5} {:<46} {:>9.3f} ms {:>8.1f} GB/s\n", r.direction, r.cell, r.median_ms,
               r.gbps);
  }
  fmt::print("\ndecode attention, Llama-3-8B shapes (32 q / 8 kv heads, dim 128, bf16)\n");
  fmt::print("  {:>5} {:>7} {:>5} {:>6} {:>9} {:>9} {:>9}\n", "batch", "context", "block", "splits",
             "ms", "GB/s", "% of d2d");
  for (const Row& r : rows) {
    if (r.section != "decode") continue;
    fmt::print("  {:>5} {:>7} {:>5} {:>6} {:>9.3f} {:>9.1f} {:>8.1f}%\n", r.batch, r.context,
               r.block_tokens, r.splits, r.median_ms, r.gbps, pct(r));
  }
  fmt::print("\nKV block copies, 16-token blocks of one layer (K + V, 64 KiB a block)\n");
  fmt::print("  {:>6} {:>5} {:<10} {:>9} {:>9} {:>12}\n", "blocks", "dir", "path", "ms", "GB/s",
             "% of pinned");
  for (const Row& r : rows) {
    if (r.section != "copy") continue;
    fmt::print("  {:>6} {:>5} {:<10} {:>9.3f} {:>9.1f} {:>11.1f}%\n", r.blocks, r.direction, r.path,
               r.median_ms, r.gbps, pct(r));
  }
}

void write_csv(const std::string& path, const std::vector<Row>& rows) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) throw std::runtime_error(fmt::format("{}: cannot write: {}", path, std::strerror(errno)));
  fmt::print(f,
             "section,cell,path,direction,batch,context,block_tokens,blocks,splits,bytes,"
             "median_ms,gbps,ceiling,ceiling_gbps,pct_of_ceiling\n");
  for (const Row& r : rows)
    fmt::print(f, "{},\"{}\",{},{},{},{},{},{},{},{},{:.6f},{:.3f},{},{:.3f},{:.2f}\n", r.section,
               r.cell, r.path, r.direction, r.batch, r.context, r.block_tokens, r.blocks, r.splits,
               r.bytes, r.median_ms, r.gbps, r.ceiling, r.ceiling_gbps, pct(r));
  std::fclose(f);
}

int run(int argc, char** argv) {
  Options opt;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") {
      opt.quick = true;
    } else if (a == "--csv" && i + 1 < argc) {
      opt.csv = argv[++i];
    } else if (a == "-h" || a == "--help") {
      fmt::print("{}", kUsage);
      return 0;
    } else {
      fmt::print(stderr, "isim-kernel-bench: unknown argument '{}'\n{}", a, kUsage);
      return 2;
    }
  }
  if (opt.quick) {
    opt.warmup = 2;
    opt.reps = 7;
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    fmt::print(stderr, "isim-kernel-bench: no CUDA device; nothing to measure\n");
    return 1;
  }
  const Device dev = query_device();
  std::vector<Row> rows;
  fmt::print(stderr, "measuring ceilings...\n");
  const Ceilings c = measure_ceilings(opt, dev, rows);
  fmt::print(stderr, "measuring decode attention...\n");
  bench_decode(opt, dev, c, rows);
  fmt::print(stderr, "measuring block copies...\n");
  bench_copy(opt, dev, c, rows);
  print_table(dev, rows);
  write_csv(opt.csv, rows);
  fmt::print("\nwrote {}\n", opt.csv);
  return 0;
}

}  // namespace
}  // namespace isim::kernels::bench

int main(int argc, char** argv) {
  try {
    return isim::kernels::bench::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "isim-kernel-bench: %s\n", e.what());
    return 1;
  }
}
