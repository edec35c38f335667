#include "calibrate/analytic.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include "core/input_error.h"
#include "core/strict_yaml.h"
#include "sim/profile_check.h"

namespace isim::calib {

namespace {

std::string factors_text(const Efficiency& e) {
  return fmt::format(
      "compute {}, memory {}, attention {}, pcie {}, overhead_us {}, attention_per_seq_us {}, "
      "pcie_latency_us {}, duplex {}",
      e.compute, e.memory, e.attention, e.pcie, e.overhead_us, e.attention_per_seq_us,
      e.pcie_latency_us, e.duplex);
}

// Least-squares k for y = k x (through the origin) over the chosen points.
double slope_through_origin(const std::vector<double>& x, const std::vector<double>& y,
                            const std::vector<bool>& use) {
  double xy = 0, xx = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (!use[i]) continue;
    xy += x[i] * y[i];
    xx += x[i] * x[i];
  }
  return xx > 0 ? xy / xx : 0;
}

size_t count(const std::vector<bool>& v) {
  return static_cast<size_t>(std::count(v.begin(), v.end(), true));
}

}  // namespace

Roofline::Roofline(const GpuSpec& gpu, const sim::ModelShape& model, const Efficiency& eff)
    : gpu_(gpu), model_(model), eff_(eff) {
  if (model_.dtype != "fp16" && model_.dtype != "bf16")
    throw InputError(fmt::format(
        "model {}: dtype {} has no peak in the GPU spec (analytic profiles cover fp16 and bf16, "
        "whose peak is bf16_dense_tflops)",
        model_.name, model_.dtype));
  if (model_.tp < 1) throw InputError(fmt::format("model {}: tp must be >= 1", model_.name));
  const double embed = 2.0 * model_.vocab * static_cast<double>(model_.hidden);
  if (!(model_.params > embed))
    throw InputError(fmt::format(
        "model {}: params ({}) must exceed embedding + lm_head (2 x vocab x hidden = {})",
        model_.name, model_.params, embed));
  for (double f : {eff_.compute, eff_.memory, eff_.attention, eff_.pcie})
    if (!(f > 0 && f <= 1))
      throw InputError(
          fmt::format("efficiency factors must be in (0, 1], got {}", factors_text(eff_)));
  if (!(eff_.duplex > 0 && eff_.duplex <= 1))
    throw InputError(fmt::format("duplex must be in (0, 1], got {}", eff_.duplex));
  if (!(eff_.link > 0 && eff_.link <= 1))
    throw InputError(fmt::format("link efficiency must be in (0, 1], got {}", eff_.link));
  if (eff_.overhead_us < 0 || eff_.attention_per_seq_us < 0 || eff_.pcie_latency_us < 0 ||
      eff_.allreduce_latency_us < 0)
    throw InputError(fmt::format("fixed costs must be >= 0, got {}", factors_text(eff_)));
  // A MoE model's routed and shared experts are priced apart (sim/cost_moe.h's roofline).
  const sim::MoeShape& moe = model_.moe;
  const double experts = moe.moe_layers(model_.layers) * 3.0 * model_.hidden *
                         (static_cast<double>(moe.experts) * moe.expert_ffn + moe.shared_ffn);
  if (moe.given() && !(model_.params > embed + experts))
    throw InputError(fmt::format(
        "model {}: params ({}) must exceed embedding + lm_head + the MoE layers' experts ({} + "
        "{} x 3 x hidden x (experts x expert_ffn + shared_ffn) = {})",
        model_.name, model_.params, embed, moe.moe_layers(model_.layers), experts));
  layer_params_ = (model_.params - embed - experts) / model_.layers;
  flops_ = gpu_.bf16_dense_tflops * 1e12;
  bw_ = gpu_.hbm_gbps * 1e9;
}

double Roofline::dense_compute_us(double tokens) const {
  return 2.0 * tokens * layer_params_ / model_.tp / flops_ * 1e6;
}

double Roofline::dense_memory_us(double tokens) const {
  const double tp = model_.tp;
  const double act = 4.0 * model_.hidden +
                     (2.0 * model_.heads + 2.0 * model_.kv_heads) * model_.head_dim / tp +
                     2.0 * model_.ffn / tp;
  const double d = model_.dtype_bytes();
  return (layer_params_ * model_.weight_dtype_bytes() / tp + tokens * act * d) / bw_ * 1e6;
}

double Roofline::dense_us(double tokens) const {
  return std::max(dense_compute_us(tokens) / eff_.compute, dense_memory_us(tokens) / eff_.memory);
}

double Roofline::decode_kv_us(double kv_tokens) const {
  // One layer's share of a token's KV on this GPU (MLA's latent is not split by tp).
  const double kvb = model_.kv_bytes_per_token_unsplit() / model_.tp / model_.layers;
  return kv_tokens * kvb / bw_ * 1e6;
}

double Roofline::decode_attention_us(double sequences, double kv_tokens) const {
  return decode_kv_us(kv_tokens) / eff_.memory + sequences * eff_.attention_per_seq_us;
}

double Roofline::prefill_compute_us(double chunk, double kv_tokens) const {
  return 4.0 * chunk * (kv_tokens + chunk / 2.0) * model_.heads * model_.head_dim /
         static_cast<double>(model_.tp) / flops_ * 1e6;
}

double Roofline::prefill_memory_us(double chunk, double kv_tokens) const {
  return decode_kv_us(kv_tokens + chunk);
}

double Roofline::prefill_attention_us(double chunk, double kv_tokens) const {
  return std::max(prefill_compute_us(chunk, kv_tokens) / eff_.attention,
                  prefill_memory_us(chunk, kv_tokens) / eff_.memory);
}

double Roofline::lm_head_compute_us(double sequences) const {
  return 2.0 * sequences * model_.vocab * static_cast<double>(model_.hidden) / model_.tp / flops_ *
         1e6;
}

double Roofline::lm_head_memory_us(double sequences) const {
  const double d = model_.dtype_bytes();
  const double weights = static_cast<double>(model_.vocab) * model_.hidden * d / model_.tp;
  return (weights + sequences * (model_.hidden + model_.vocab) * d) / bw_ * 1e6;
}

double Roofline::lm_head_us(double sequences) const {
  return std::max(lm_head_compute_us(sequences) / eff_.compute,
                  lm_head_memory_us(sequences) / eff_.memory);
}

double Roofline::pcie_gbps(double bytes) const {
  const double ns = eff_.pcie_latency_us * 1e3 + bytes / (gpu_.pcie_gbps * eff_.pcie);
  return bytes / ns;  // bytes per ns == GB/s
}

double Roofline::allreduce_us(double bytes) const {
  if (model_.tp == 1) return 0;
  const double link = (gpu_.nvlink_gbps > 0 ? gpu_.nvlink_gbps : gpu_.pcie_gbps) * 1e9;
  const double ring = 2.0 * (model_.tp - 1) / model_.tp;
  return eff_.allreduce_latency_us + ring * bytes / (link * eff_.link) * 1e6;
}

double Roofline::knee_tokens() const {
  // compute(t) = alpha t; memory(t) = beta0 + beta1 t (both with their efficiencies).
  const double alpha = dense_compute_us(1) / eff_.compute;
  const double beta0 = dense_memory_us(0) / eff_.memory;
  const double beta1 = dense_memory_us(1) / eff_.memory - beta0;
  if (!(alpha > beta1)) return std::numeric_limits<double>::infinity();
  return beta0 / (alpha - beta1);
}

sim::Profile analytic_profile(const GpuSpec& gpu, const ModelSpec& model,
                              const std::string& model_path, const Efficiency& eff,
                              const AnalyticGrid& grid) {
  const sim::ModelShape& m = model.shape;
  const Roofline r(gpu, m, eff);
  const double weights_gib = m.weight_bytes_per_gpu() / (1024.0 * 1024.0 * 1024.0);
  if (weights_gib >= gpu.memory_gib)
    throw InputError(fmt::format(
        "{}: model {} needs {:.3g} GiB of weights per GPU at tp {}, more than the {} GiB of {} "
        "(raise --tp)",
        gpu.path, m.name, weights_gib, m.tp, gpu.memory_gib, gpu.name));

  sim::Profile p;
  p.provenance = {
      {"source", "analytic"},
      {"description",
       "roofline from a spec sheet (calibrate/analytic.h): dense = max(FLOPs / (peak x compute), "
       "bytes / (HBM x memory)) per layer, attention and lm_head likewise, PCIe from the link "
       "rate with a per-copy latency; nothing here was measured"},
      {"gpu_spec", gpu.path},
      {"gpu_figures", fmt::format("bf16 {} TFLOPS dense, HBM {} GB/s, {} GiB, PCIe Gen{} {} GB/s "
                                  "each way",
                                  gpu.bf16_dense_tflops, gpu.hbm_gbps, gpu.memory_gib, gpu.pcie_gen,
                                  gpu.pcie_gbps)},
      {"model_file", model_path},
      {"model_config", model.source},
      {"factors", factors_text(eff)},
  };
  if (m.moe.given()) {
    p.tables.moe_roofline = {gpu.bf16_dense_tflops, gpu.hbm_gbps, eff.compute, eff.memory};
    p.provenance.emplace_back(
        "moe",
        fmt::format("{} of {} layers MoE ({} experts, {} per token, expert_ffn {}, shared_ffn {}): "
                    "dense_us covers a layer without its experts (params less embedding, "
                    "lm_head and every MoE layer's experts, over layers); each MoE layer adds "
                    "the grouped-GEMM roofline of sim/cost_moe.h (every active expert's weights "
                    "read once, T x k routed tokens; expected distinct experts under uniform "
                    "routing, an assumption) at this GPU's peaks and the compute and memory "
                    "factors; saturation_tokens is the knee of dense_us alone",
                    m.moe.moe_layers(m.layers), m.layers, m.moe.experts, m.moe.experts_per_token,
                    m.moe.expert_ffn, m.moe.shared_ffn));
  }
  if (m.tp > 1)
    p.provenance.emplace_back(
        "tensor_parallel",
        fmt::format("tp {}: FLOPs and bytes divided by {}; allreduce_us = {} us + 2 x {} / {} x "
                    "bytes / ({} GB/s {} x link {}), a ring all-reduce",
                    m.tp, m.tp, eff.allreduce_latency_us, m.tp - 1, m.tp,
                    gpu.nvlink_gbps > 0 ? gpu.nvlink_gbps : gpu.pcie_gbps,
                    gpu.nvlink_gbps > 0 ? "NVLink" : "PCIe (the spec has no nvlink_gbps)",
                    eff.link));
  p.device.name = gpu.name;
  p.device.memory_gib = gpu.memory_gib;
  p.model = m;
  p.block_tokens = 16;
  p.form = sim::ForwardForm::kTables;

  std::vector<double> dense_x = grid.dense_tokens;
  const double knee = r.knee_tokens();
  const double last = dense_x.back();
  if (std::isfinite(knee) && std::ceil(knee) < last) {
    const double k = std::max(1.0, std::ceil(knee));
    if (std::find(dense_x.begin(), dense_x.end(), k) == dense_x.end()) {
      dense_x.push_back(k);
      std::sort(dense_x.begin(), dense_x.end());
    }
    p.saturation_tokens = static_cast<int64_t>(k);
  } else {
    p.saturation_tokens = static_cast<int64_t>(last);
  }

  sim::TablesForward& t = p.tables;
  t.dense_us.x = dense_x;
  for (double x : dense_x) t.dense_us.y.push_back(r.dense_us(x));
  t.decode_attention_us.x = grid.decode_sequences;
  t.decode_attention_us.y = grid.decode_kv_tokens;
  for (double s : grid.decode_sequences)
    for (double k : grid.decode_kv_tokens)
      t.decode_attention_us.z.push_back(r.decode_attention_us(s, k));
  t.prefill_attention_us.x = grid.prefill_chunk;
  t.prefill_attention_us.y = grid.prefill_kv_tokens;
  for (double c : grid.prefill_chunk)
    for (double k : grid.prefill_kv_tokens)
      t.prefill_attention_us.z.push_back(r.prefill_attention_us(c, k));
  t.lm_head_us.x = grid.lm_head_sequences;
  for (double s : grid.lm_head_sequences) t.lm_head_us.y.push_back(r.lm_head_us(s));
  t.overhead_us = eff.overhead_us;
  const double row_bytes = static_cast<double>(m.hidden) * m.dtype_bytes();
  if (m.tp > 1) {
    for (double x : dense_x) {
      t.allreduce_us.x.push_back(x * row_bytes);
      t.allreduce_us.y.push_back(r.allreduce_us(x * row_bytes));
    }
  }

  p.swap.h2d_gbps.x = grid.copy_bytes;
  for (double b : grid.copy_bytes) p.swap.h2d_gbps.y.push_back(r.pcie_gbps(b));
  p.swap.d2h_gbps = p.swap.h2d_gbps;
  p.swap.duplex_factor = eff.duplex;
  p.swap.per_copy_overhead_us = 0;
  // A spec or model extreme enough that a table leaves the profile's limits (a time past an
  // hour, a KV block past 2 GiB) would be written and refused only when loaded.
  sim::check_profile_loads(p, fmt::format("the analytic profile of {} ({}) on {} ({})", m.name,
                                          model_path, gpu.name, gpu.path));
  return p;
}

FitResult fit_efficiency(const sim::Profile& measured, const GpuSpec& measured_gpu,
                         const Efficiency& start) {
  const std::string origin = measured.path.empty() ? "(measured profile)" : measured.path;
  if (measured.form != sim::ForwardForm::kTables)
    throw InputError(
        origin + ": forward: --fit-from needs a tables profile (a linear one has no grid to fit)");
  FitResult fit;
  fit.eff = start;
  Efficiency& e = fit.eff;
  const sim::TablesForward& t = measured.tables;
  // Roofline terms at efficiency 1 are independent of the factors.
  const Roofline unit(measured_gpu, measured.model, Efficiency{1, 1, 1, 1, 0, 0, 0, 1});

  // Dense: y = max(c / compute, m / memory).
  {
    std::vector<double> c, m, y;
    for (size_t i = 0; i < t.dense_us.x.size(); ++i) {
      c.push_back(unit.dense_compute_us(t.dense_us.x[i]));
      m.push_back(unit.dense_memory_us(t.dense_us.x[i]));
      y.push_back(t.dense_us.y[i]);
    }
    std::vector<bool> on_compute(c.size(), false);
    for (int iter = 0; iter < 100; ++iter) {
      std::vector<bool> split(c.size());
      for (size_t i = 0; i < c.size(); ++i) split[i] = c[i] / e.compute >= m[i] / e.memory;
      std::vector<bool> on_memory(c.size());
      for (size_t i = 0; i < c.size(); ++i) on_memory[i] = !split[i];
      const double kc = slope_through_origin(c, y, split);
      const double km = slope_through_origin(m, y, on_memory);
      if (kc > 0) e.compute = 1.0 / kc;
      if (km > 0) e.memory = 1.0 / km;
      if (iter > 0 && split == on_compute) break;
      on_compute = split;
    }
    const size_t nc = count(on_compute), nm = on_compute.size() - nc;
    if (nc == 0) fit.kept.emplace_back("compute: no compute-bound dense point");
    if (nm == 0) fit.kept.emplace_back("memory: no memory-bound dense point");
    fit.notes.push_back(fmt::format("compute: {} dense points, memory: {} dense points", nc, nm));
  }

  // Prefill attention: y = max(c / attention, m / memory), memory already fitted.
  {
    const sim::Grid2D& g = t.prefill_attention_us;
    std::vector<double> c, m, y;
    for (size_t i = 0; i < g.x.size(); ++i)
      for (size_t j = 0; j < g.y.size(); ++j) {
        c.push_back(unit.prefill_compute_us(g.x[i], g.y[j]));
        m.push_back(unit.prefill_memory_us(g.x[i], g.y[j]));
        y.push_back(g.z[i * g.y.size() + j]);
      }
    std::vector<bool> used(c.size(), false);
    for (int iter = 0; iter < 100; ++iter) {
      std::vector<bool> split(c.size());
      for (size_t i = 0; i < c.size(); ++i) split[i] = c[i] / e.attention >= m[i] / e.memory;
      const double k = slope_through_origin(c, y, split);
      if (k > 0) e.attention = 1.0 / k;
      if (iter > 0 && split == used) break;
      used = split;
    }
    if (count(used) == 0) fit.kept.emplace_back("attention: no FLOP-bound prefill attention point");
    fit.notes.push_back(fmt::format("attention: {} prefill attention points", count(used)));
  }

  // Decode attention: y - kv_read / memory = sequences * per_seq.
  {
    const sim::Grid2D& g = t.decode_attention_us;
    std::vector<double> s, r;
    for (size_t i = 0; i < g.x.size(); ++i)
      for (size_t j = 0; j < g.y.size(); ++j) {
        s.push_back(g.x[i]);
        r.push_back(g.z[i * g.y.size() + j] - unit.decode_kv_us(g.y[j]) / e.memory);
      }
    const double k = slope_through_origin(s, r, std::vector<bool>(s.size(), true));
    e.attention_per_seq_us = std::max(0.0, k);
    fit.notes.push_back(fmt::format("attention_per_seq_us: {} decode attention points", s.size()));
  }

  // PCIe: copy time in us = latency + bytes / (1e3 x pcie_gbps x pcie).
  {
    std::vector<double> b, us;
    for (const sim::Curve1D* c : {&measured.swap.h2d_gbps, &measured.swap.d2h_gbps})
      for (size_t i = 0; i < c->x.size(); ++i) {
        b.push_back(c->x[i]);
        us.push_back(c->x[i] / c->y[i] / 1e3);
      }
    const double n = static_cast<double>(b.size());
    double sb = 0, st = 0, sbb = 0, sbt = 0;
    for (size_t i = 0; i < b.size(); ++i) {
      sb += b[i];
      st += us[i];
      sbb += b[i] * b[i];
      sbt += b[i] * us[i];
    }
    const double den = n * sbb - sb * sb;
    const double slope = den > 0 ? (n * sbt - sb * st) / den : 0;
    if (slope > 0) {
      e.pcie = 1.0 / (slope * 1e3 * measured_gpu.pcie_gbps);
      e.pcie_latency_us = std::max(0.0, (st - slope * sb) / n) + measured.swap.per_copy_overhead_us;
      fit.notes.push_back(fmt::format("pcie: {} copy points", b.size()));
    } else {
      fit.kept.emplace_back("pcie: copy time does not grow with size");
    }
  }
  for (auto [name, f] : {std::pair<const char*, double*>{"compute", &e.compute},
                         {"memory", &e.memory},
                         {"attention", &e.attention},
                         {"pcie", &e.pcie}}) {
    if (*f > 1) {
      fit.notes.push_back(fmt::format(
          "{}: fitted {:.4g} > 1 (faster than the spec's peak; check --fit-gpu), clamped to 1",
          name, *f));
      *f = 1;
    }
  }
  e.overhead_us = t.overhead_us;
  e.duplex = measured.swap.duplex_factor;
  return fit;
}

}  // namespace isim::calib
