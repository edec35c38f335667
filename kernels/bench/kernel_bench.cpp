// isim-kernel-bench: achieved bandwidth of the CUDA kernels against measured ceilings.
//
//   isim-kernel-bench [--quick] [--only SECTIONS] [--csv FILE]
//
// Measures the ceilings first (device-to-device copy; large pinned copies each way and both
// at once; a cuBLAS GEMM when compute cells follow), then decode attention, prefill attention,
// the models' dense GEMMs and KV block copies. Every figure is the median of
// CUDA-event timings after warm-up, on buffers larger than L2 (small cells rotate between
// disjoint block sets). Prints a table and writes one CSV row per cell. Never gates anything.
#include <cuda_runtime_api.h>

#include <algorithm>
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
    "usage: isim-kernel-bench [--quick] [--only SECTIONS] [--csv FILE]\n"
    "  --quick          fewer repetitions, cells and copy sizes\n"
    "  --only SECTIONS  comma-separated: decode, prefill, gemm, copy (default: all); the\n"
    "                   ceilings are always measured (scripts/gpu-check's kernel bench runs\n"
    "                   decode,prefill,gemm and its swap bench copy)\n"
    "  --csv FILE       where to write the results (default kernel-bench.csv)\n";

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
  if (r.ceiling_tflops > 0) return 100.0 * r.tflops / r.ceiling_tflops;
  return r.ceiling_gbps > 0 ? 100.0 * r.gbps / r.ceiling_gbps : 0;
}

void print_decode(const std::vector<Row>& rows) {
  fmt::print("\ndecode attention (head dim 128; 8B: 32 q / 8 kv heads, 70B and Qwen3-32B: 64 / 8)\n");
  fmt::print("  {:<24} {:<4} {:>5} {:>7} {:>5} {:>6} {:>9} {:>9} {:>9}\n", "model", "type",
             "batch", "context", "block", "splits", "ms", "GB/s", "% of d2d");
  for (const Row& r : rows) {
    if (r.section != "decode") continue;
    fmt::print("  {:<24} {:<4} {:>5} {:>7} {:>5} {:>6} {:>9.3f} {:>9.1f} {:>8.1f}%\n", r.model,
               r.dtype, r.batch, r.context, r.block_tokens, r.splits, r.median_ms, r.gbps, pct(r));
  }
}

void print_compute(const std::vector<Row>& rows, const char* section, const char* title) {
  fmt::print("\n{}\n", title);
  fmt::print("  {:<48} {:>9} {:>9} {:>10}\n", "cell", "ms", "TFLOP/s", "% of peak");
  for (const Row& r : rows) {
    if (r.section != section) continue;
    fmt::print("  {:<48} {:>9.3f} {:>9.1f} {:>9.1f}%\n", r.cell, r.median_ms, r.tflops, pct(r));
  }
}

void print_copy(const std::vector<Row>& rows) {
  fmt::print("\nKV block copies, 16-token blocks of one layer (K + V, 64 KiB a block)\n");
  fmt::print("  {:>6} {:>5} {:<10} {:>9} {:>9} {:>12}\n", "blocks", "dir", "path", "ms", "GB/s",
             "% of pinned");
  for (const Row& r : rows) {
    if (r.section != "copy") continue;
    fmt::print("  {:>6} {:>5} {:<10} {:>9.3f} {:>9.1f} {:>11.1f}%\n", r.blocks, r.direction, r.path,
               r.median_ms, r.gbps, pct(r));
  }
}

void print_table(const Device& dev, const std::vector<Row>& rows) {
  fmt::print("\nisim-kernel-bench on {} ({} SMs, L2 {} MiB, CUDA runtime {}, driver {})\n",
             dev.name, dev.sm_count, dev.l2_bytes >> 20, dev.runtime_version, dev.driver_version);
  fmt::print("\nceilings\n");
  for (const Row& r : rows) {
    if (r.section != "ceiling") continue;
    if (r.tflops > 0)
      fmt::print("  {:<5} {:<46} {:>9.3f} ms {:>8.1f} TFLOP/s\n", "gemm", r.cell, r.median_ms,
                 r.tflops);
    else
      fmt::print("  {:<5} {:<46} {:>9.3f} ms {:>8.1f} GB/s\n", r.direction, r.cell, r.median_ms,
                 r.gbps);
  }
  const auto has = [&](const char* section) {
    for (const Row& r : rows)
      if (r.section == section) return true;
    return false;
  };
  if (has("decode")) print_decode(rows);
  if (has("prefill"))
    print_compute(rows, "prefill", "prefill attention (fresh causal chunks, paged KV, block 16)");
  if (has("gemm")) print_compute(rows, "gemm", "dense GEMMs through cuBLAS");
  if (has("copy")) print_copy(rows);
}

// Written under PATH.partial and renamed when complete, so an interrupted bench leaves no
// truncated CSV under the final name.
void write_csv(const std::string& path, const std::vector<Row>& rows) {
  const std::string tmp = path + ".partial";
  std::FILE* f = std::fopen(tmp.c_str(), "w");
  if (!f) throw std::runtime_error(fmt::format("{}: cannot write: {}", tmp, std::strerror(errno)));
  fmt::print(f,
             "section,cell,path,direction,batch,context,block_tokens,blocks,splits,bytes,"
             "median_ms,gbps,ceiling,ceiling_gbps,pct_of_ceiling,model,dtype,tflops,"
             "ceiling_tflops\n");
  for (const Row& r : rows)
    fmt::print(f, "{},\"{}\",{},{},{},{},{},{},{},{},{:.6f},{:.3f},{},{:.3f},{:.2f},{},{},{:.3f},{:.3f}\n",
               r.section, r.cell, r.path, r.direction, r.batch, r.context, r.block_tokens,
               r.blocks, r.splits, r.bytes, r.median_ms, r.gbps, r.ceiling, r.ceiling_gbps, pct(r),
               r.model, r.dtype, r.tflops, r.ceiling_tflops);
  const bool written = std::ferror(f) == 0;
  if (std::fclose(f) != 0 || !written || std::rename(tmp.c_str(), path.c_str()) != 0)
    throw std::runtime_error(fmt::format("{}: cannot write: {}", path, std::strerror(errno)));
}

int run(int argc, char** argv) {
  Options opt;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") {
      opt.quick = true;
    } else if (a == "--only" && i + 1 < argc) {
      const std::string list = argv[++i];
      for (size_t at = 0; at <= list.size();) {
        const size_t comma = std::min(list.find(',', at), list.size());
        const std::string s = list.substr(at, comma - at);
        if (s != "decode" && s != "prefill" && s != "gemm" && s != "copy") {
          fmt::print(stderr,
                     "isim-kernel-bench: --only {}: unknown section '{}' (sections: decode, "
                     "prefill, gemm, copy)\n{}",
                     list, s, kUsage);
          return 2;
        }
        opt.only.push_back(s);
        at = comma + 1;
      }
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
  Ceilings c = measure_ceilings(opt, dev, rows);
  if (opt.wants("decode")) {
    fmt::print(stderr, "measuring decode attention...\n");
    bench_decode(opt, dev, c, rows);
  }
  if (opt.wants("prefill") || opt.wants("gemm")) {
    fmt::print(stderr, "measuring the GEMM peak, prefill attention and dense GEMMs...\n");
    bench_compute(opt, dev, c, rows);
  }
  if (opt.wants("copy")) {
    fmt::print(stderr, "measuring block copies...\n");
    bench_copy(opt, dev, c, rows);
  }
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
