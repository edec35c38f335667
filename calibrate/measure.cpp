#include "calibrate/measure.h"
#include "calibrate/vllm_memory.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "calibrate/knee.h"
#include "calibrate/model.h"
#include "core/input_error.h"
#include "kernels/runner/cuda_module.h"
#include "kernels/runner/swap_bench.h"

namespace isim::calib {
namespace {

using kernels::runner::PhaseTimes;
using kernels::runner::Runner;
using kernels::runner::Step;
using kernels::runner::StepOptions;
using kernels::runner::SwapBench;
using Clock = std::chrono::steady_clock;

constexpr int32_t kBlockTokens = 16;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::vector<double> as_double(const std::vector<int64_t>& v) {
  return {v.begin(), v.end()};
}

// Lays sequences out on consecutive blocks; every sequence gets its own blocks.
class BatchBuilder {
 public:
  explicit BatchBuilder(int32_t vocab) : vocab_(vocab) {}
  BatchBuilder& add(int64_t new_tokens, int64_t kv_before, bool logits) {
    Step s;
    for (int64_t i = 0; i < new_tokens; ++i)
      s.tokens.push_back(static_cast<int32_t>((next_token_++ * 31 + 7) % vocab_));
    s.kv_before = kv_before;
    s.blocks = kernels::runner::block_range(next_block_, kv_before + new_tokens, kBlockTokens);
    next_block_ += static_cast<int32_t>(s.blocks.size());
    s.logits = logits;
    steps_.push_back(std::move(s));
    return *this;
  }
  std::vector<Step> take() { return std::move(steps_); }

 private:
  int32_t vocab_;
  int64_t next_token_ = 0;
  int32_t next_block_ = 0;
  std::vector<Step> steps_;
};

int64_t blocks_for(int64_t tokens) {
  return (tokens + kBlockTokens - 1) / kBlockTokens;
}

// A validation batch: `decodes` sequences at `decode_kv` cached tokens each plus optional chunks.
struct MixedSpec {
  int64_t decodes = 0, decode_kv = 0;
  int64_t chunk = 0, chunk_kv = 0;
  std::string name() const {
    std::string s;
    if (decodes > 0) s += fmt::format("decode {}x{}", decodes, decode_kv);
    if (chunk > 0) s += fmt::format("{}chunk {}@{}", s.empty() ? "" : " + ", chunk, chunk_kv);
    return s;
  }
};

std::vector<MixedSpec> validation_specs(const std::string& backend) {
  const int64_t f = backend == "cuda" ? 8 : 1;  // the CUDA grids reach 8x further
  return {{16, 256 * f, 0, 0},
          {0, 0, 128 * f, 0},
          {8, 512 * f, 32 * f, 256 * f},
          {32, 64 * f, 128 * f, 1024 * f}};
}

std::vector<Step> mixed_batch(const MixedSpec& m, int32_t vocab) {
  BatchBuilder b(vocab);
  for (int64_t i = 0; i < m.decodes; ++i) b.add(1, m.decode_kv - 1, true);
  if (m.chunk > 0) b.add(m.chunk, m.chunk_kv, true);
  return b.take();
}

// Runs `batch` warmup + reps times with phase timers; returns the median of metric(times).
template <typename Metric>
double median_phase(Runner& r, const std::vector<Step>& batch, const Grids& g, Metric metric) {
  const StepOptions timed{.keep_logits = false, .time_phases = true};
  for (int i = 0; i < g.warmup; ++i) r.step(batch, timed);
  std::vector<double> v;
  for (int i = 0; i < g.reps; ++i) v.push_back(metric(r.step(batch, timed).times));
  return median(v);
}

double median_wall_ms(Runner& r, const std::vector<Step>& batch, const Grids& g) {
  for (int i = 0; i < g.warmup; ++i) r.step(batch);
  std::vector<double> v;
  for (int i = 0; i < g.reps; ++i) {
    const auto t0 = Clock::now();
    r.step(batch);
    v.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  return median(v);
}

struct Backend {
  std::unique_ptr<Runner> runner;
  std::unique_ptr<SwapBench> swap;
  std::string device;
  double memory_gib = 0;  // CUDA: totalGlobalMem, what the device lets CUDA allocate
  bool cuda = false;
  std::vector<std::pair<std::string, std::string>> facts;  // provenance
};

std::string read_first(const std::string& path, const std::string& key) {
  std::ifstream f(path);
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

std::string pct(double e) {
  return fmt::format("{:+.1f}%", 100 * e);
}

}  // namespace

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

kernels::runner::ModelDims shard_dims(const sim::ModelShape& m, int tp) {
  if (tp < 1) throw InputError(fmt::format("--tp {}: must be >= 1", tp));
  for (const auto& [name, v] :
       {std::pair{"heads", m.heads}, std::pair{"ffn", m.ffn}, std::pair{"vocab", m.vocab}})
    if (v % tp != 0)
      throw InputError(fmt::format("--tp {}: does not divide model {} = {}", tp, name, v));
  if (m.kv_heads % tp != 0 && tp % m.kv_heads != 0)
    throw InputError(
        fmt::format("--tp {}: kv_heads = {} neither divides nor is divided by it", tp, m.kv_heads));
  kernels::runner::ModelDims d;
  d.layers = m.layers;
  d.hidden = m.hidden;
  d.heads = m.heads / tp;
  d.kv_heads = std::max(1, m.kv_heads / tp);  // replicated when tp > kv_heads
  d.head_dim = m.head_dim;
  d.ffn = m.ffn / tp;
  d.vocab = m.vocab / tp;  // vocab-parallel lm_head
  d.dtype = m.dtype == "bf16"   ? kernels::Dtype::kBF16
            : m.dtype == "fp32" ? kernels::Dtype::kF32
                                : kernels::Dtype::kF16;
  return d;
}

sim::BatchShape batch_shape(const std::vector<Step>& batch) {
  sim::BatchShape b;
  for (const Step& s : batch) {
    const auto n = static_cast<int64_t>(s.tokens.size());
    b.total_tokens += n;
    if (s.logits) ++b.num_logits;
    if (n == 1) {
      ++b.num_decode;
      b.decode_kv_tokens += s.kv_before + 1;
    } else {
      b.prefills.push_back({n, s.kv_before});
    }
  }
  return b;
}

void add_validation(sim::Profile& p, const std::vector<ValidationBatch>& v) {
  for (const ValidationBatch& b : v)
    p.validation.push_back({b.name, b.predicted_ms, b.measured_ms});
}

sim::Profile calibrate(const CalibrateOptions& o) {
  const auto say = [&](const std::string& line) {
    if (o.progress) o.progress(line);
  };
  Grids g = default_grids(o.backend, o.quick);  // validates the backend name first
  extend_grids(g, o.cover_tokens, o.cover_context);
  if (!std::filesystem::exists(o.model_path))
    throw InputError(fmt::format("--model {}: no such file", o.model_path));
  const ModelSpec model = load_model(o.model_path);
  kernels::runner::RunnerConfig rc;
  rc.dims = shard_dims(model.shape, o.tp);
  rc.block_tokens = kBlockTokens;
  rc.seed = o.seed;
  // One attention thread on CPU: the reference spawns its threads per call, which on a small
  // model costs more than it saves and makes the timings noisy.
  rc.threads = 1;
  const int32_t layers = rc.dims.layers;
  const int32_t vocab = rc.dims.vocab;

  // Pool: enough distinct blocks for the largest batch of any table or validation batch.
  int64_t need = g.dense_tokens.back();
  need = std::max(need, g.decode_sequences.back() + blocks_for(g.decode_kv_tokens.back()) +
                            g.decode_sequences.back());
  need = std::max(need, blocks_for(g.prefill_chunk.back() + g.prefill_kv.back()));
  need = std::max(need, g.lm_head_sequences.back());
  need = std::max(need, 2 * g.swap_blocks.back());
  for (const MixedSpec& m : validation_specs(o.backend))
    need = std::max(need, m.decodes * blocks_for(m.decode_kv) + blocks_for(m.chunk + m.chunk_kv));
  rc.num_blocks = need;
  say(fmt::format("isim-calibrate: model {} (tp {}), backend {}, {} KV blocks of {} tokens",
                  model.shape.name, o.tp, o.backend, rc.num_blocks, kBlockTokens));
  Backend be;
  try {
    be = open_backend(o, rc, g.swap_blocks.back());
  } catch (const std::invalid_argument& e) {  // the runner rejects this model on this backend
    throw InputError(fmt::format("--backend {} --model {}: {}", o.backend, o.model_path, e.what()));
  }
  Runner& r = *be.runner;

  sim::Profile p;
  sim::TablesForward& t = p.tables;
  // Dense by tokens.
  t.dense_us.x = as_double(g.dense_tokens);
  for (int64_t x : g.dense_tokens) {
    BatchBuilder b(vocab);
    for (int64_t i = 0; i < x; ++i) b.add(1, 0, false);
    const double us =
        median_phase(r, b.take(), g, [](const PhaseTimes& pt) { return pt.dense_us; });
    t.dense_us.y.push_back(us / layers);
    say(fmt::format("  dense {:>5} tokens: {:.2f} us/layer", x, us / layers));
  }
  // Decode attention by (sequences, total KV tokens).
  t.decode_attention_us.x = as_double(g.decode_sequences);
  t.decode_attention_us.y = as_double(g.decode_kv_tokens);
  for (int64_t n : g.decode_sequences) {
    for (int64_t kv : g.decode_kv_tokens) {
      BatchBuilder b(vocab);
      const int64_t each = std::max<int64_t>(1, kv / n);
      for (int64_t i = 0; i < n; ++i) b.add(1, each - 1, false);
      const double us =
          median_phase(r, b.take(), g, [](const PhaseTimes& pt) { return pt.decode_attention_us; });
      t.decode_attention_us.z.push_back(us / layers);
    }
    say(fmt::format("  decode attention, {} sequences: {} KV points", n,
                    g.decode_kv_tokens.size()));
  }
  // Multi-token attention by (chunk, KV tokens already cached). Its cost grows with the pairs
  // attended, quadratically in the chunk, so the cost model interpolates it per pair.
  t.prefill_interpolation = "per_pair";
  t.prefill_attention_us.x = as_double(g.prefill_chunk);
  t.prefill_attention_us.y = as_double(g.prefill_kv);
  for (int64_t c : g.prefill_chunk) {
    for (int64_t kv : g.prefill_kv) {
      BatchBuilder b(vocab);
      b.add(c, kv, false);
      const double us = median_phase(r, b.take(), g,
                                     [](const PhaseTimes& pt) { return pt.prefill_attention_us; });
      t.prefill_attention_us.z.push_back(us / layers);
    }
    say(fmt::format("  chunk attention, chunk {}: {} KV points", c, g.prefill_kv.size()));
  }
  // lm_head by sequences.
  t.lm_head_us.x = as_double(g.lm_head_sequences);
  for (int64_t n : g.lm_head_sequences) {
    BatchBuilder b(vocab);
    for (int64_t i = 0; i < n; ++i) b.add(1, 0, true);
    t.lm_head_us.y.push_back(
        median_phase(r, b.take(), g, [](const PhaseTimes& pt) { return pt.lm_head_us; }));
  }
  say(fmt::format("  lm_head: {} points", g.lm_head_sequences.size()));
  {  // Per-iteration overhead: what a one-decode call spends outside the phases.
    BatchBuilder b(vocab);
    b.add(1, 15, true);
    t.overhead_us = median_phase(r, b.take(), g, [](const PhaseTimes& pt) {
      return std::max(0.0, pt.total_us - pt.dense_us - pt.decode_attention_us -
                               pt.prefill_attention_us - pt.lm_head_us);
    });
    say(fmt::format("  overhead: {:.2f} us per iteration", t.overhead_us));
  }

  // Swap bandwidth by bytes per copy, default path; duplex at the largest size.
  const kernels::BlockPool pool = r.kv_pool();
  const int64_t block_bytes = pool.planes * pool.block_bytes;
  const std::string path = be.swap->paths().front();
  const auto swap_median = [&](const std::string& via, int64_t blocks, bool out, bool in) {
    for (int i = 0; i < g.warmup; ++i) be.swap->time(via, blocks, out, in);
    std::vector<double> vo, vi;
    for (int i = 0; i < g.reps; ++i) {
      const auto tm = be.swap->time(via, blocks, out, in);
      vo.push_back(tm.out_us);
      vi.push_back(tm.in_us);
    }
    return kernels::runner::SwapTiming{median(vo), median(vi)};
  };
  std::vector<std::pair<std::string, std::string>> path_notes;
  for (const std::string& via : be.swap->paths()) {
    std::string note;
    for (int64_t blocks : g.swap_blocks) {
      const double bytes = double(blocks * block_bytes);
      const auto out = swap_median(via, blocks, true, false);
      const auto in = swap_median(via, blocks, false, true);
      if (via == path) {
        p.swap.d2h_gbps.x.push_back(bytes);
        p.swap.d2h_gbps.y.push_back(bytes / (out.out_us * 1e3));
        p.swap.h2d_gbps.x.push_back(bytes);
        p.swap.h2d_gbps.y.push_back(bytes / (in.in_us * 1e3));
      }
      note += fmt::format("{}{} B out {:.3g} GB/s in {:.3g} GB/s", note.empty() ? "" : "; ", bytes,
                          bytes / (out.out_us * 1e3), bytes / (in.in_us * 1e3));
    }
    {  // both directions at once, largest size
      const double bytes = double(g.swap_blocks.back() * block_bytes);
      const auto both = swap_median(via, g.swap_blocks.back(), true, true);
      note += fmt::format("; both at once at {} B: out {:.3g} GB/s in {:.3g} GB/s", bytes,
                          bytes / (both.out_us * 1e3), bytes / (both.in_us * 1e3));
    }
    path_notes.emplace_back("swap_path_" + via, note);
    say(fmt::format("  swap ({}): {} sizes", via, g.swap_blocks.size()));
  }
  {
    const int64_t blocks = g.swap_blocks.back();
    const auto out = swap_median(path, blocks, true, false);
    const auto in = swap_median(path, blocks, false, true);
    const auto both = swap_median(path, blocks, true, true);
    const double f = 0.5 * (out.out_us / both.out_us + in.in_us / both.in_us);
    p.swap.duplex_factor = std::min(1.0, f);
    p.swap.per_copy_overhead_us = 0;
    say(fmt::format("  duplex factor: {:.3f}", p.swap.duplex_factor));
  }
  // Compute slowdown with copies running beside it: the profile's swap.compute_slowdown.
  std::string slowdown;
  p.swap.compute_slowdown = 0;
  if (o.backend == "cuda") {
    BatchBuilder b(vocab);
    for (int64_t i = 0; i < std::min<int64_t>(1024, g.dense_tokens.back()); ++i) b.add(1, 0, false);
    const auto batch = b.take();
    const double alone = median_wall_ms(r, batch, g);
    be.swap->start_background(g.swap_blocks.back());
    const double with = median_wall_ms(r, batch, g);
    be.swap->stop_background();
    p.swap.compute_slowdown = std::max(0.0, with / alone - 1);
    slowdown = fmt::format(
        "{:.3f} ({} decode tokens: {:.4g} ms alone, {:.4g} ms beside copies "
        "in both directions)",
        with / alone, batch.size(), alone, with);
  } else {
    slowdown =
        "1.0 (not measured: the CPU backend has no copy engine beside its compute; "
        "swap.compute_slowdown 0)";
  }

  // Profile body.
  p.provenance = {{"source", "measured"},
                  {"tool", "isim-calibrate"},
                  {"tool_version", ISIM_CALIBRATE_VERSION},
                  {"git_sha", git_sha(o.model_path)},
                  {"date", utc_now()},
                  {"device", be.device}};
  p.provenance.insert(p.provenance.end(), be.facts.begin(), be.facts.end());
  p.provenance.emplace_back("model_file", o.model_path);
  p.provenance.emplace_back(
      "settings", fmt::format("{}, warm-up {}, median of {}, seed {}, block_tokens {}",
                              o.quick ? "quick" : "full", g.warmup, g.reps, o.seed, kBlockTokens));
  if (o.backend == "cpu")
    p.provenance.emplace_back("swap_note",
                              "host memcpy between the KV pool and a host swap buffer (CPU "
                              "backend): not PCIe; x = bytes of one copy of N scattered blocks "
                              "(what the engine issues per session and direction each "
                              "iteration); per-copy cost is inside the size curve");
  else
    p.provenance.emplace_back("swap_note",
                              "PCIe copies between the device pool and pinned host staging by the "
                              "'" +
                                  path +
                                  "' path; x = bytes of one copy of N scattered blocks (what "
                                  "the engine issues per session and direction each "
                                  "iteration); per-copy cost is inside the size curve");
  p.provenance.insert(p.provenance.end(), path_notes.begin(), path_notes.end());
  p.provenance.emplace_back("compute_slowdown_with_copies", slowdown);
  if (o.tp > 1)
    p.provenance.emplace_back("tp_note", "one shard measured; all-reduce time not included");
  p.device = {be.device, be.memory_gib};
  p.model = model.shape;
  p.model.tp = o.tp;
  if (be.cuda) {  // a vLLM server's KV capacity on this device (sim/profile.h MemorySpec)
    std::string rule;
    p.memory = vllm_memory(model, be.memory_gib * 1073741824.0, o.tp, &rule);
    p.provenance.emplace_back("memory_usable", "cudaGetDeviceProperties totalGlobalMem, measured");
    p.provenance.emplace_back("memory_rule", rule);
  }
  p.block_tokens = kBlockTokens;
  p.form = sim::ForwardForm::kTables;

  // saturation_tokens: the knee of the per-iteration dense time.
  std::vector<double> iteration;
  for (double us : t.dense_us.y) iteration.push_back(us * layers);
  const Knee knee = find_knee(t.dense_us.x, iteration);
  p.saturation_tokens = static_cast<int64_t>(knee.x);
  p.provenance.emplace_back(
      "saturation_rule",
      fmt::format("knee of layers x dense_us: marginal cost within 25% of {:.4g} us/token from "
                  "{} tokens on",
                  knee.marginal, p.saturation_tokens));
  say(fmt::format("  saturation_tokens: {} (marginal {:.4g} us/token)", p.saturation_tokens,
                  knee.marginal));

  // Validation against the tables as written.
  std::ostringstream text;
  sim::write_profile(text, p);
  const sim::CostModel cost(sim::parse_profile(text.str(), "calibrated profile"));
  std::vector<ValidationBatch> checks;
  for (const MixedSpec& m : validation_specs(o.backend)) {
    const auto batch = mixed_batch(m, vocab);
    ValidationBatch v{m.name(), double(cost.forward(batch_shape(batch))) / 1e6,
                      median_wall_ms(r, batch, g)};
    say(fmt::format("  validate {}: predicted {:.4g} ms, measured {:.4g} ms, {}", v.name,
                    v.predicted_ms, v.measured_ms, pct(v.error())));
    checks.push_back(v);
  }
  add_validation(p, checks);
  say(fmt::format("  validation mean |error|: {:.1f}%", 100 * p.validation_mean_abs_error()));
  return p;
}

}  // namespace isim::calib
