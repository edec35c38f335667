// The backend, the machine facts and the grids of isim-calibrate (measure_backend.h, and
// default_grids / extend_grids of measure.h).
#include "calibrate/measure_backend.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <thread>

#include "core/input_error.h"
#include "kernels/dtype.h"
#include "kernels/runner/cuda_module.h"

namespace isim::calib {

namespace {

std::string read_first(const std::string& path, const std::string& key) {
  std::ifstream f(path);  // a /proc file the machine writes, not a user's input
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind(key, 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string v = line.substr(colon + 1);
    v.erase(0, v.find_first_not_of(" \t"));
    return v;
  }
  return "";
}

std::string shell_line(const std::string& cmd) {
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[256];
    if (fgets(buf, sizeof buf, p)) out = buf;
    pclose(p);
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

}  // namespace

Backend open_backend(const CalibrateOptions& o, const kernels::runner::RunnerConfig& rc,
                     int64_t swap_blocks) {
  Backend b;
  if (o.backend == "cpu") {
    b.runner = kernels::runner::make_cpu_runner(rc);
    b.swap = kernels::runner::make_cpu_swap_bench(*b.runner, swap_blocks);
    const std::string cpu = read_first("/proc/cpuinfo", "model name");
    b.device = "cpu: " + (cpu.empty() ? std::string("unknown") : cpu);
    const std::string mem = read_first("/proc/meminfo", "MemTotal");  // "16384 kB"
    b.memory_gib = mem.empty() ? 1.0 : std::stod(mem) / (1024.0 * 1024.0);
    b.facts = {{"backend", "cpu (float32, Eigen GEMMs, CPU reference attention on 1 thread)"},
               {"cpu_model", cpu.empty() ? "unknown" : cpu},
               {"cpu_mhz_at_start", read_first("/proc/cpuinfo", "cpu MHz")},
               {"hardware_threads", std::to_string(std::thread::hardware_concurrency())},
               {"load_average_at_start", shell_line("cut -d' ' -f1-3 /proc/loadavg 2>/dev/null")}};
    return b;
  }
  std::string why;
  const kernels::runner::CudaModule* cuda = kernels::runner::cuda_module(&why);
  if (!cuda) throw InputError("--backend cuda: " + why + "; use --backend cpu");
  const kernels::runner::CudaDeviceInfo info = cuda->device_info();
  if (!info.available) throw InputError("--backend cuda: no usable CUDA device (" + info.why + ")");
  b.runner = cuda->make_runner(rc);
  b.swap = cuda->make_swap_bench(*b.runner, swap_blocks);
  b.device = info.name;
  b.memory_gib = info.memory_gib;
  b.cuda = true;
  b.facts = {{"backend", fmt::format("cuda ({}, cuBLAS GEMMs, kernels/ paged attention)",
                                     kernels::dtype_name(rc.dims.dtype))},
             {"driver", info.driver},
             {"cuda", info.runtime},
             {"sm_count", std::to_string(info.sm_count)},
             {"clocks", info.clocks.empty() ? "unreadable" : info.clocks}};
  return b;
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string git_sha(const std::string& model_path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path dir = fs::absolute(model_path, ec).parent_path();
  std::string sha =
      shell_line("git -C '" + dir.string() + "' rev-parse --short=12 HEAD 2>/dev/null");
  return sha.empty() ? "unknown" : sha;
}

void extend_grids(Grids& g, int64_t cover_tokens, int64_t cover_context) {
  auto extend = [](std::vector<int64_t>& axis, int64_t cover) {
    if (cover <= 0 || axis.empty()) return;
    while (axis.back() < cover) axis.push_back(std::max<int64_t>(axis.back() * 2, 1));
  };
  extend(g.dense_tokens, cover_tokens);
  extend(g.prefill_chunk, cover_tokens);
  extend(g.prefill_kv, cover_context);
}

Grids default_grids(const std::string& backend, bool quick) {
  Grids g;
  if (backend == "cpu") {
    for (int64_t x = 1; x <= (quick ? 512 : 2048); x *= 2) g.dense_tokens.push_back(x);
    g.decode_sequences =
        quick ? std::vector<int64_t>{1, 4, 16, 32} : std::vector<int64_t>{1, 4, 16, 32, 64};
    g.decode_kv_tokens = quick ? std::vector<int64_t>{64, 256, 1024, 4096}
                               : std::vector<int64_t>{64, 256, 1024, 4096, 16384};
    g.prefill_chunk =
        quick ? std::vector<int64_t>{8, 32, 128} : std::vector<int64_t>{8, 32, 128, 512};
    g.prefill_kv =
        quick ? std::vector<int64_t>{0, 256, 1024} : std::vector<int64_t>{0, 256, 1024, 4096};
    g.lm_head_sequences =
        quick ? std::vector<int64_t>{1, 4, 16, 64} : std::vector<int64_t>{1, 4, 16, 64, 256};
    for (int64_t b = 1; b <= (quick ? 1024 : 4096); b *= 4) g.swap_blocks.push_back(b);
    g.warmup = 1;
    g.reps = quick ? 5 : 9;
    return g;
  }
  if (backend != "cuda")
    throw InputError(fmt::format("--backend: unknown backend '{}' (valid: cpu, cuda)", backend));
  // Like vLLM's CUDA-graph capture sizes: fine steps at small batches, coarser above.
  g.dense_tokens =
      quick ? std::vector<int64_t>{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192}
            : std::vector<int64_t>{1,   2,   4,   8,   16,   24,   32,   48,   64,   96,   128, 192,
                                   256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192};
  g.decode_sequences =
      quick ? std::vector<int64_t>{1, 16, 64, 256} : std::vector<int64_t>{1, 4, 16, 64, 128, 256};
  g.decode_kv_tokens = quick ? std::vector<int64_t>{256, 4096, 65536, 262144}
                             : std::vector<int64_t>{256, 1024, 4096, 16384, 65536, 262144};
  g.prefill_chunk = quick ? std::vector<int64_t>{16, 256, 1024, 4096}
                          : std::vector<int64_t>{16, 64, 256, 1024, 4096, 8192};
  g.prefill_kv = quick ? std::vector<int64_t>{0, 2048, 8192, 32768}
                       : std::vector<int64_t>{0, 1024, 4096, 16384, 65536};
  g.lm_head_sequences =
      quick ? std::vector<int64_t>{1, 16, 256} : std::vector<int64_t>{1, 4, 16, 64, 256, 1024};
  g.swap_blocks = quick ? std::vector<int64_t>{1, 16, 256, 1024}
                        : std::vector<int64_t>{1, 4, 16, 64, 256, 1024};
  g.warmup = quick ? 2 : 3;
  g.reps = quick ? 5 : 10;
  return g;
}

}  // namespace isim::calib
