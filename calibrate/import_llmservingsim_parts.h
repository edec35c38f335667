// Internal to the LLMServingSim importer (calibrate/import_llmservingsim.cpp): the MoE table,
// the ragged-decode fit, the known-hardware table and the tensor-parallel checks. Contracts are
// in calibrate/import_llmservingsim.h; every error is InputError naming the file and line or key.
#pragma once

#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "calibrate/analytic.h"
#include "calibrate/import_common.h"
#include "calibrate/import_llmservingsim.h"
#include "sim/profile.h"

namespace isim::calib::lss {

struct Meta {
  std::string gpu, hardware, hf_model, vllm, cuda, profiled_at;
  int block_tokens = 0;
  int engine_tp = 0;  // engine_effective.tensor_parallel_size; 0: not given
  std::vector<int> tp_degrees;
  std::string note;  // about hf_overrides, when it shows another TP degree's shapes
};
// meta.yaml: hf_overrides must be the model's shapes divided by one of tp_degrees.
Meta read_meta(const std::string& file, const sim::ModelShape& m);

// moe.csv (tokens, activated_experts, time_us: one MoE layer) as a grid over (tokens, activated
// experts). `rule` gets the provenance line.
sim::Grid2D read_moe_csv(const std::string& file, const sim::MoeShape& moe, std::string* rule);

// skew_fit.csv with meta.yaml's skew_fit block (bucket axes, per_tp.<tp>.alpha_default).
sim::DecodeSkew read_skew_fit(const std::string& csv, const YAML::Node& meta,
                              const std::string& meta_file, int tp, std::string* rule);

// Assumptions for the GPUs LLMServingSim published tables of, stated in provenance.
struct KnownHardware {
  const char* id;
  double memory_gib;
  double pcie_gbps;  // swap: one-way pinned-memory copies
  const char* pcie;
  double usable_bytes;   // total memory as CUDA reports it
  const char* usable;    // where that figure comes from
  const char* gpu_spec;  // calibrate/gpus/ file whose nominal figures `spec` repeats
  GpuSpec spec;          // bf16 peak, memory bandwidth, PCIe link (no NVLink on either card)
};
const std::vector<KnownHardware>& known_hardware();
const KnownHardware* find_hardware(const std::string& id);

// The TP check of the tables against the model: lm_head at one sequence streams vocab x hidden x
// dtype / tp bytes of weights, so (those bytes / its time) is the bandwidth that tp implies; it
// must lie in [kMinStream, 1] x the spec's memory bandwidth. Returns the provenance line.
inline constexpr double kMinStream = 0.6;
std::string check_tp_by_lm_head(const std::string& seq_file, const sim::Curve1D& lm_head_us,
                                const sim::ModelShape& m, int tp, const GpuSpec& spec);

// The steps that depend on the TP degree and the model kind, appended to `p` (model, tables and
// provenance set): the TP check, allreduce_us (tp > 1), the MoE layer (moe_us or moe_roofline)
// and the ragged-decode fit (decode_skew).
void add_tp_moe_skew(const std::string& dir, const Meta& meta, const sim::ModelShape& m,
                     const LlmServingSimOptions& opt, const KnownHardware* known, sim::Profile& p);
// The GPU's figures: --gpu-spec, else the known-hardware table's; an empty spec (hbm_gbps 0)
// when neither. `from` says which.
GpuSpec gpu_figures(const LlmServingSimOptions& opt, const KnownHardware* known, std::string* from);

}  // namespace isim::calib::lss
