#include "sim/cost_moe.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace isim::sim {

double expected_active_experts(int experts, int per_token, double tokens) {
  if (tokens <= 0 || experts <= 0) return 0;
  const double e = experts;
  const double k = std::min<double>(per_token, e);
  return e * (1 - std::pow(1 - k / e, tokens));
}

namespace {
// One GEMM group's roofline in us: `weights` parameters read once, `flops` FLOPs.
double roofline_us(const MoeRoofline& f, double weight_bytes, double flops) {
  return std::max(weight_bytes / (f.hbm_gbps * 1e9 * f.memory_efficiency),
                  flops / (f.peak_tflops * 1e12 * f.compute_efficiency)) *
         1e6;
}
}  // namespace

double moe_roofline_us(const ModelShape& m, const MoeRoofline& f, double tokens) {
  const MoeShape& e = m.moe;
  const double tp = m.tp, wb = m.weight_dtype_bytes();
  const double expert = 3.0 * m.hidden * static_cast<double>(e.expert_ffn);  // parameters
  const double active = expected_active_experts(e.experts, e.experts_per_token, tokens);
  double us =
      roofline_us(f, active * expert * wb / tp, 2.0 * expert * tokens * e.experts_per_token / tp);
  if (e.shared_ffn > 0) {
    const double shared = 3.0 * m.hidden * static_cast<double>(e.shared_ffn);
    us += roofline_us(f, shared * wb / tp, 2.0 * shared * tokens / tp);
  }
  return us;
}

double moe_layer_us(const ModelShape& m, const TablesForward& t, double tokens, bool* outside) {
  if (!t.moe_us.empty()) {
    const double active = expected_active_experts(m.moe.experts, m.moe.experts_per_token, tokens);
    return t.moe_us.eval_rising(tokens, active, true, true, outside);
  }
  if (!t.moe_roofline.given())
    throw std::logic_error(
        "moe_layer_us: a MoE model's profile has neither moe_us nor "
        "moe_roofline");
  return moe_roofline_us(m, t.moe_roofline, tokens);
}

SkewLookup::SkewLookup(const DecodeSkew& s) : given_(s.given()), skew_(s) {
  for (const DecodeSkew::Cell& c : s.cells) {
    cells_[{c.pc, static_cast<double>(bin(s.n_bins, c.n)),
            static_cast<double>(bin(s.skew_rate_bins, c.skew_rate)),
            static_cast<double>(bin(s.kv_big_bins, c.kv_big)),
            static_cast<double>(bin(s.kp_bins, c.kp))}] = c.alpha;
  }
}

int SkewLookup::bin(const std::vector<double>& edges, double v) {
  const int bins = static_cast<int>(edges.size()) - 1;
  for (int i = 0; i < bins; ++i)
    if (v <= edges[static_cast<size_t>(i) + 1]) return i;
  return bins - 1;
}

double SkewLookup::alpha(double pc, double n, double skew_rate, double kv_big, double kp) const {
  const auto it = cells_.find({pc, static_cast<double>(bin(skew_.n_bins, n)),
                               static_cast<double>(bin(skew_.skew_rate_bins, skew_rate)),
                               static_cast<double>(bin(skew_.kv_big_bins, kv_big)),
                               static_cast<double>(bin(skew_.kp_bins, kp))});
  return it == cells_.end() ? skew_.alpha_default : it->second;
}

}  // namespace isim::sim
