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
#include "calibrate/measure_backend.h"
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

std::string pct(double e) {
  return fmt::format("{:+.1f}%", 100 * e);
}

}  // namespace

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
  check_tp(model, o.tp, "--tp", o.model_path);  // before minutes of measuring
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
