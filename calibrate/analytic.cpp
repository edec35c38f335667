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

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// 1 when the weights fit the GPU at the model's ep; for a MoE model at ep 1 that does not fit,
// the smallest ep that does. InputError when none does.
int smallest_fitting_ep(const GpuSpec& gpu, const sim::ModelShape& m) {
  auto fits = [&](const sim::ModelShape& s) {
    return s.weight_bytes_per_gpu() / kGiB < gpu.memory_gib;
  };
  if (fits(m)) return 1;
  if (m.moe.given() && m.ep == 1) {
    sim::ModelShape s = m;
    for (s.ep = 2; s.ep <= m.moe.experts; ++s.ep)
      if (fits(s)) return s.ep;
  }
  throw InputError(fmt::format(
      "{}: model {} needs {:.3g} GiB of weights per GPU at tp {}{}, more than the {} GiB of {} "
      "(raise --tp{})",
      gpu.path, m.name, m.weight_bytes_per_gpu() / kGiB, m.tp,
      m.ep > 1 ? fmt::format(" and ep {}", m.ep) : std::string(), gpu.memory_gib, gpu.name,
      m.moe.given() ? " or --ep" : ""));
}

}  // namespace

Roofline::Roofline(const GpuSpec& gpu, const sim::ModelShape& model, const Efficiency& eff)
    : gpu_(gpu), model_(model), eff_(eff) {
  if (model_.dtype != "fp16" && model_.dtype != "bf16")
    throw InputError(fmt::format(
        "model {}: dtype {} is not modelled (analytic profiles cover fp16 and bf16 activations "
        "and KV cache; fp8 weights are weight_dtype: fp8)",
        model_.name, model_.dtype));
  if (model_.tp < 1) throw InputError(fmt::format("model {}: tp must be >= 1", model_.name));
  if (model_.ep != 1 && !model_.moe.given())
    throw InputError(fmt::format("model {}: ep {}: expert parallelism needs a MoE model",
                                 model_.name, model_.ep));
  if (model_.ep < 1 || (model_.moe.given() && model_.ep > model_.moe.experts))
    throw InputError(fmt::format("model {}: ep must be in [1, {}] (the routed experts), got {}",
                                 model_.name, model_.moe.experts, model_.ep));
  if (model_.mla.given() && model_.mla.value_head_dim(model_.head_dim) <= 0)
    throw InputError(
        fmt::format("model {}: mla: head_dim {} must exceed qk_rope_head_dim {} "
                    "unless v_head_dim is given",
                    model_.name, model_.head_dim, model_.mla.qk_rope_head_dim));
  if (model_.weight_dtype == "fp8" && !(gpu_.fp8_dense_tflops > 0))
    throw InputError(fmt::format(
        "{}: fp8_dense_tflops: missing (model {} has fp8 weights, whose GEMMs run at the dense "
        "FP8 tensor-core peak; add it with its source)",
        gpu_.path, model_.name));
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
  bf16_flops_ = gpu_.bf16_dense_tflops * 1e12;
  gemm_flops_ = model_.weight_dtype == "fp8" ? gpu_.fp8_dense_tflops * 1e12 : bf16_flops_;
  bw_ = gpu_.hbm_gbps * 1e9;
}

double Roofline::dense_compute_us(double tokens) const {
  return 2.0 * tokens * layer_params_ / model_.tp / gemm_flops_ * 1e6;
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

double Roofline::lm_head_compute_us(double sequences) const {
  return 2.0 * sequences * model_.vocab * static_cast<double>(model_.hidden) / model_.tp /
         bf16_flops_ * 1e6;
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

double Roofline::alltoall_us(double bytes, int ranks) const {
  if (ranks <= 1) return 0;
  const double link = (gpu_.nvlink_gbps > 0 ? gpu_.nvlink_gbps : gpu_.pcie_gbps) * 1e9;
  return eff_.allreduce_latency_us + (ranks - 1.0) / ranks * bytes / (link * eff_.link) * 1e6;
}

double Roofline::gemm_bf16_us(double m, double n, double k, bool* compute_side) const {
  const double flops = 2.0 * m * n * k / (bf16_flops_ * eff_.compute);
  const double bytes = (n * k + m * k + m * n) * 2.0 / (bw_ * eff_.memory);
  if (compute_side) *compute_side = flops >= bytes;
  return std::max(flops, bytes) * 1e6;
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
  const int min_ep = smallest_fitting_ep(gpu, m);

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
  if (m.weight_dtype == "fp8")
    p.provenance.emplace_back(
        "gemm_peak", fmt::format("fp8 weights (W8A8 block-fp8): the dense layers' and the experts' "
                                 "GEMMs at fp8_dense_tflops {} TFLOPS; attention and lm_head at "
                                 "bf16 {} TFLOPS",
                                 gpu.fp8_dense_tflops, gpu.bf16_dense_tflops));
  if (m.mla.given())
    p.provenance.emplace_back(
        "mla",
        fmt::format("attention as vLLM's MLA backends run it: prefill 2 x heads / tp x (qk {} + v "
                    "{}) FLOPs per attended pair, K and V expanded per head; decode absorbed "
                    "over the latent, max(2 x heads / tp x (2 x {} + {}) FLOPs, ({} + {}) x {} "
                    "bytes) per KV token, plus attention_per_seq_us per sequence",
                    m.head_dim, m.mla.value_head_dim(m.head_dim), m.mla.kv_lora_rank,
                    m.mla.qk_rope_head_dim, m.mla.kv_lora_rank, m.mla.qk_rope_head_dim,
                    m.dtype_bytes()));
  if (m.ep > 1)
    p.provenance.emplace_back(
        "expert_parallel",
        fmt::format("ep {}: each GPU holds the routed experts / {} (weights {:.4g} GiB per GPU); "
                    "the MoE layer's time is sim/cost_moe.h's",
                    m.ep, m.ep, m.weight_bytes_per_gpu() / kGiB));
  if (min_ep > 1)
    p.provenance.emplace_back(
        "min_ep", fmt::format("{}: at ep 1 the weights ({:.4g} GiB per GPU at tp {}) exceed the {} "
                              "GiB of {}; spread over ep >= {} GPUs they fit (a DP/EP group "
                              "sets ep from its size)",
                              min_ep, m.weight_bytes_per_gpu() / kGiB, m.tp, gpu.memory_gib,
                              gpu.name, min_ep));
  if (m.moe.given()) {
    p.tables.moe_roofline = {r.gemm_peak_tflops(), gpu.hbm_gbps, eff.compute, eff.memory};
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

}  // namespace isim::calib
