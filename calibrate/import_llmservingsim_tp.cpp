// The LLMServingSim importer's known-hardware table and its tensor-parallel check.
#include <filesystem>

#include <fmt/format.h>

#include "calibrate/import_aiconfigurator.h"

#include "calibrate/import_llmservingsim_parts.h"
#include "core/input_error.h"
#include "core/strict_yaml.h"

namespace isim::calib::lss {

namespace {

GpuSpec spec(const char* name, double tflops, double hbm, double memory, int gen, double pcie) {
  GpuSpec g;
  g.name = name;
  g.bf16_dense_tflops = tflops;
  g.hbm_gbps = hbm;
  g.memory_gib = memory;
  g.pcie_gen = gen;
  g.pcie_gbps = pcie;
  return g;
}

}  // namespace

// Assumptions, stated in provenance: nominal memory, and one-way pinned-memory PCIe bandwidth
// from ../shared/data/README.md ("Gen4 x16 reaches about 25 GB/s one way; Gen5 x16 about 55 GB/s
// host-to-device with copy engines"). `spec` repeats calibrate/gpus/<gpu_spec> (a test compares
// them): the nominal PCIe link there is the all-reduce's, as neither card has NVLink.
const std::vector<KnownHardware>& known_hardware() {
  static const std::vector<KnownHardware> table = {
      {"RTX4090", 24, 25, "PCIe Gen4 x16", 25250627584.0,
       "torch.cuda total memory of an RTX 4090 (hardware.device_total_memory_bytes in "
       "../shared/data/llmservingsim/vllm-RTX4090-llama-3.1-8b/meta.json, a device property)",
       "RTX-4090.yaml", spec("RTX-4090-24GB", 165.2, 1008, 24, 4, 32)},
      {"RTXPRO6000", 96, 55, "PCIe Gen5 x16", (96.0 - 0.4835) * 1073741824.0,
       "assumed: nominal 96 GiB less the 0.4835 GiB that CUDA withholds on the RTX 4090 "
       "(24 GiB nominal, 25,250,627,584 B reported); no CUDA total of this card was found",
       "RTX-PRO-6000.yaml", spec("RTX-PRO-6000-96GB", 503.8, 1792, 96, 5, 64)},
  };
  return table;
}

const KnownHardware* find_hardware(const std::string& id) {
  for (const KnownHardware& h : known_hardware())
    if (id == h.id) return &h;
  return nullptr;
}

std::string check_tp_by_lm_head(const std::string& seq_file, const sim::Curve1D& lm_head_us,
                                const sim::ModelShape& m, int tp, const GpuSpec& spec) {
  const double us = lm_head_us.eval(1);
  const double bytes = static_cast<double>(m.vocab) * m.hidden * m.dtype_bytes() / tp;
  const double gbps = us > 0 ? bytes / (us * 1e3) : 0;
  const double share = gbps / spec.hbm_gbps;
  const std::string what = fmt::format(
      "lm_head at 1 sequence takes {} us; at tp {} it streams vocab {} x hidden {} x {} B / {} = "
      "{:.4g} GB of weights, i.e. {:.0f} GB/s = {:.2f} of {}'s {} GB/s",
      us, tp, m.vocab, m.hidden, m.dtype_bytes(), tp, bytes / 1e9, gbps, share, spec.name,
      spec.hbm_gbps);
  if (share > 1 || share < kMinStream)
    throw InputError(fmt::format(
        "{}: lm_head: these tables cannot be tp {} of model {}: {}; expected {} to 1 (a tp {} "
        "shard streams 1/{} of the weights: is --tp the degree this folder was measured at?)",
        seq_file, tp, m.name, what, kMinStream, tp, tp));
  return what + fmt::format(" (within {}..1: the tables are this tp's shard)", kMinStream);
}

GpuSpec gpu_figures(const LlmServingSimOptions& opt, const KnownHardware* known,
                    std::string* from) {
  if (!opt.gpu_spec.empty()) {
    *from = opt.gpu_spec;
    return load_gpu_spec(opt.gpu_spec);
  }
  if (known == nullptr) return {};
  *from =
      fmt::format("calibrate/gpus/{} (the known-hardware table's {})", known->gpu_spec, known->id);
  return known->spec;
}

void add_tp_moe_skew(const std::string& dir, const Meta& meta, const sim::ModelShape& m,
                     const LlmServingSimOptions& opt, const KnownHardware* known, sim::Profile& p) {
  auto& pv = p.provenance;
  const int tp = opt.tp;
  const std::string meta_file = dir + "/meta.yaml";
  std::string gpu_from;
  const GpuSpec gpu = gpu_figures(opt, known, &gpu_from);
  const bool have_gpu = gpu.hbm_gbps > 0;
  const auto need_gpu = [&](const char* why) {
    if (!have_gpu)
      throw InputError(
          fmt::format("{}: hardware: unknown '{}': {} needs the GPU's figures; give "
                      "--gpu-spec calibrate/gpus/GPU.yaml",
                      meta_file, meta.hardware, why));
  };

  // What the tables are: LLMServingSim profiles one rank's shard on one GPU.
  if (meta.engine_tp > 1)
    throw InputError(fmt::format(
        "{}: engine_effective.tensor_parallel_size: {}: expected 1 (LLMServingSim's tables are one "
        "rank's layer run on one GPU; where a {}-GPU run's all-reduce falls in them is unknown)",
        meta_file, meta.engine_tp, meta.engine_tp));
  pv.emplace_back(
      "tables_tp",
      fmt::format("tp {}: the CSVs are one rank's decoder layer, measured on ONE GPU "
                  "(engine_effective.tensor_parallel_size {}) with hf_overrides giving that "
                  "rank's shapes (heads, kv_heads, intermediate, vocab / tp); no table has an "
                  "all-reduce row, so {}",
                  tp, meta.engine_tp > 0 ? std::to_string(meta.engine_tp) : "not given",
                  tp > 1 ? "the two all-reduces of every layer are added (allreduce_rule)"
                         : "none is needed at tp 1"));
  if (have_gpu) pv.emplace_back("gpu_figures", gpu_from);

  if (tp > 1) {
    if (!opt.allreduce_dir.empty()) {
      const AllreduceCurve c =
          aiconfigurator_allreduce(opt.allreduce_dir, tp, m.dtype, opt.allreduce);
      p.tables.allreduce_us = c.us;
      pv.emplace_back("allreduce_rule", fmt::format("from {}: {} (measured on that folder's "
                                                    "GPUs, not on {})",
                                                    opt.allreduce_dir, c.rule, meta.gpu));
    } else {
      need_gpu("the all-reduce of tp > 1");
      GpuSpec link = gpu;
      if (opt.link_gbps > 0) link.nvlink_gbps = opt.link_gbps;
      Efficiency e;
      if (opt.allreduce_latency_us >= 0) e.allreduce_latency_us = opt.allreduce_latency_us;
      sim::ModelShape shard = m;
      shard.tp = tp;
      const Roofline r(link, shard, e);
      const double row = static_cast<double>(m.hidden) * m.dtype_bytes();
      for (const double x : p.tables.dense_us.x) {
        p.tables.allreduce_us.x.push_back(x * row);
        p.tables.allreduce_us.y.push_back(round_us(r.allreduce_us(x * row)));
      }
      const double gbps = link.nvlink_gbps > 0 ? link.nvlink_gbps : link.pcie_gbps;
      pv.emplace_back(
          "allreduce_rule",
          fmt::format("analytic ring all-reduce (calibrate/analytic.h), 2 per layer (after o_proj "
                      "and after the FFN or MoE block) of tokens x hidden {} x {} B: {} us + 2 x "
                      "{} / {} x bytes / ({} GB/s x link efficiency {}); link: {}; ASSUMED, "
                      "nothing measured: the latency is the NVLink custom all-reduce's small-"
                      "message figure, a PCIe ring is likely slower",
                      m.hidden, m.dtype_bytes(), e.allreduce_latency_us, tp - 1, tp, gbps, e.link,
                      opt.link_gbps > 0 ? std::string("--link-gbps")
                      : gpu.nvlink_gbps > 0
                          ? "NVLink of " + gpu_from
                          : fmt::format("PCIe Gen{} x16 of {} (no NVLink: GPU-to-GPU traffic "
                                        "crosses PCIe)",
                                        gpu.pcie_gen, gpu_from)));
    }
  }

  const std::string moe_file = dir + "/moe.csv";
  const bool has_moe = std::filesystem::exists(moe_file);
  if (m.moe.given() && has_moe) {
    std::string rule;
    p.tables.moe_us = read_moe_csv(moe_file, m.moe, &rule);
    pv.emplace_back("moe_rule", rule);
  } else if (m.moe.given()) {
    need_gpu("the analytic MoE layer (no moe.csv)");
    const Efficiency e;
    p.tables.moe_roofline = {gpu.bf16_dense_tflops, gpu.hbm_gbps, e.compute, e.memory};
    pv.emplace_back(
        "moe_rule",
        fmt::format("no moe.csv in this folder (LLMServingSim measured the MoE layer at tp 1 "
                    "only): the grouped-GEMM roofline of sim/cost_moe.h over {} ({} TFLOPS, {} "
                    "GB/s) at calibrate/analytic.h's default efficiencies (compute {}, memory "
                    "{}), every active expert's weights read once / tp, the expected distinct "
                    "experts E(1 - (1 - k/E)^T), E = {}, k = {}, assuming uniform routing",
                    gpu_from, gpu.bf16_dense_tflops, gpu.hbm_gbps, e.compute, e.memory,
                    m.moe.experts, m.moe.experts_per_token));
  }

  const std::string skew_file = dir + "/skew_fit.csv";
  const YAML::Node root = load_yaml_file(meta_file, "");
  const YAML::Node fit = root["skew_fit"];
  if (fit && !fit.IsMap())
    throw InputError(yaml_where(meta_file, fit, "skew_fit") +
                     ": expected a map (enabled, bucket_axes, per_tp)");
  const YAML::Node enabled = fit ? fit["enabled"] : YAML::Node();
  const bool fitted =
      !enabled || read_as<bool>(enabled, meta_file, "skew_fit.enabled", "true or false");
  if (std::filesystem::exists(skew_file) && fitted) {
    std::string rule;
    p.tables.decode_skew = read_skew_fit(skew_file, root, meta_file, tp, &rule);
    pv.emplace_back("decode_skew_rule", rule);
  } else {
    pv.emplace_back("decode_skew_rule",
                    fitted ? "no skew_fit.csv: decode attention at the mean KV"
                           : "meta.yaml skew_fit.enabled is false (no bucket axes, no "
                             "alpha_default), so skew_fit.csv is not imported: decode attention "
                             "at the mean KV");
  }
}

}  // namespace isim::calib::lss
