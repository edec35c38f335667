// The cost model's MoE layer and ragged-decode terms (used by sim/cost_model.cpp).
//
// Contract:
// - expected_active_experts(E, k, T) = E (1 - (1 - k/E)^T): the expected number of distinct
//   experts T tokens activate when each picks k of E experts uniformly (ASSUMPTION: uniform
//   routing; a real router is skewed, so this is an upper estimate of distinct experts at a
//   given T). 0 for T <= 0; never more than E.
// - moe_layer_us(model, tables, T): one MoE layer over T batched tokens, with A the expected
//   active experts above: moe_us(T, A) when the profile measured it; else the grouped-GEMM
//   roofline moe_roofline_us. Throws std::logic_error when the profile has neither.
// - moe_roofline_us: every active expert's gate, up and down weights are read once
//   (A x 3 x hidden x expert_ffn x weight bytes / tp), and the T x k routed tokens each run
//   2 x 3 x hidden x expert_ffn FLOPs / tp; routed = max(bytes / (hbm x memory_efficiency),
//   FLOPs / (peak x compute_efficiency)). Shared experts add the same roofline as one dense
//   FFN shared_ffn wide over all T tokens. Activations, router and all-to-all are not counted.
//   Weight bytes: 1 for weight_dtype fp8 and int8, 0.5 for int4, else the model's dtype.
// - SkewLookup: LLMServingSim's alpha for a ragged decode batch. alpha(pc, n, skew_rate, kv_big,
//   kp) bins each of n, skew_rate, kv_big and kp into (edge[i], edge[i+1]] (past the last edge:
//   the last bin) and returns the cell with that pc (raw, exact) and those bins, else
//   alpha_default. skew_rate = (mean KV - min KV) / (max KV - min KV) over the decodes: nb / n
//   exactly for the profiler's two-level batches (nb decodes at kv_big, the rest at one smaller
//   KV), and the same formula LLMServingSim's simulator uses for any other batch.
#pragma once

#include <array>
#include <cstdint>
#include <map>

#include "sim/profile.h"

namespace isim::sim {

double expected_active_experts(int experts, int per_token, double tokens);
double moe_roofline_us(const ModelShape& m, const MoeRoofline& f, double tokens);
double moe_layer_us(const ModelShape& m, const TablesForward& t, double tokens, bool* outside);

class SkewLookup {
 public:
  SkewLookup() = default;
  explicit SkewLookup(const DecodeSkew& s);
  bool given() const { return given_; }
  double alpha(double pc, double n, double skew_rate, double kv_big, double kp) const;

 private:
  static int bin(const std::vector<double>& edges, double v);
  bool given_ = false;
  DecodeSkew skew_;
  std::map<std::array<double, 5>, double> cells_;  // (pc, bin of n, skew_rate, kv_big, kp)
};

}  // namespace isim::sim
