#include "sim/ep_cost.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>

#include "sim/cost_moe.h"

namespace isim::sim {

double expected_max_std_normal(int n) {
  if (n < 1) throw std::logic_error("expected_max_std_normal: n must be >= 1");
  if (n == 1) return 0;
  // E[max] = integral of x n phi(x) Phi(x)^(n-1) dx; Simpson's rule, 4,800 intervals.
  const double lo = -12, hi = 12;
  const int steps = 4800;
  const double h = (hi - lo) / steps;
  auto f = [n](double x) {
    const double phi = std::exp(-0.5 * x * x) / std::sqrt(2 * std::numbers::pi);
    const double cdf = 0.5 * std::erfc(-x / std::numbers::sqrt2);
    return x * n * phi * std::pow(cdf, n - 1);
  };
  double sum = f(lo) + f(hi);
  for (int i = 1; i < steps; ++i) sum += f(lo + i * h) * (i % 2 == 1 ? 4 : 2);
  return sum * h / 3;
}

RankLoad rank_load(int experts, int per_token, int ranks, double tokens, double skew, double z) {
  RankLoad r;
  if (tokens <= 0) return r;
  const double e = experts, k = std::min<double>(per_token, e), n = ranks;
  const double p = 1 / n;
  const double var1 = e > 1 ? k * p * (1 - p) * (e - k) / (e - 1) : 0;
  r.mean = tokens * k / n;
  r.sd = std::sqrt(tokens * var1);
  const double cap = tokens * std::min(k, e / n);
  r.max = std::clamp(skew * r.mean + r.sd * z, std::min(skew * r.mean, cap), cap);
  return r;
}

double alltoall_us(double tokens, double bytes_per_token, int ranks, int ranks_per_domain,
                   const LinkFigures& intra, const LinkFigures& inter) {
  if (ranks <= 1 || tokens <= 0) return 0;
  const int g = std::min(ranks, std::max(1, ranks_per_domain));
  const double per_peer = tokens * bytes_per_token / ranks;
  double us = 0;
  if (g > 1) us = intra.latency_us + per_peer * (g - 1) / (intra.gbps * 1e3);
  if (ranks > g) us = std::max(us, inter.latency_us + per_peer * (ranks - g) / (inter.gbps * 1e3));
  return us;
}

namespace {

double ep_roofline_us(const MoeRoofline& f, double bytes, double flops) {
  return std::max(bytes / (f.hbm_gbps * 1e9 * f.memory_efficiency),
                  flops / (f.peak_tflops * 1e12 * f.compute_efficiency)) *
         1e6;
}

// The routed experts of the busiest EP rank: `pairs` (token, expert) pairs over its n experts.
double rank_experts_us(const ModelShape& m, const TablesForward& t, double pairs, double n) {
  if (pairs <= 0) return 0;
  const double active = n * (1 - std::pow(1 - 1 / n, pairs));
  if (!t.moe_us.empty())
    return t.moe_us.eval_rising(pairs / m.moe.experts_per_token, active, true, true, nullptr);
  if (!t.moe_roofline.given())
    throw std::logic_error("group_moe_layer: a MoE profile has neither moe_us nor moe_roofline");
  const double expert = 3.0 * m.hidden * static_cast<double>(m.moe.expert_ffn);
  return ep_roofline_us(t.moe_roofline, active * expert * m.weight_dtype_bytes(),
                        2 * expert * pairs);
}

double shared_expert_us(const ModelShape& m, const TablesForward& t, double tokens, int tp) {
  if (m.moe.shared_ffn <= 0 || tokens <= 0 || !t.moe_roofline.given()) return 0;
  const double shared = 3.0 * m.hidden * static_cast<double>(m.moe.shared_ffn);
  return ep_roofline_us(t.moe_roofline, shared * m.weight_dtype_bytes() / tp,
                        2 * shared * tokens / tp);
}

}  // namespace

GroupMoe group_moe_layer(const ModelShape& m, const TablesForward& t, const EpGroupShape& g,
                         double z, const std::vector<int64_t>& core_tokens) {
  GroupMoe out;
  double total = 0, busiest = 0;
  for (int64_t c : core_tokens) {
    total += static_cast<double>(c);
    busiest = std::max(busiest, static_cast<double>(c));
  }
  const int ranks = g.ranks();
  const double token_bytes = static_cast<double>(m.hidden) * m.dtype_bytes();
  if (g.ep) {
    const double n = static_cast<double>(m.moe.experts) / ranks;
    out.load = rank_load(m.moe.experts, m.moe.experts_per_token, ranks, total, g.skew, z).max;
    out.expert_us = rank_experts_us(m, t, out.load, n);
    // Shared experts: measured tables include them in moe_us; the roofline adds them here.
    if (t.moe_us.empty()) out.expert_us += shared_expert_us(m, t, busiest, g.tp);
    const double sent = busiest / g.tp;
    out.bytes = sent * token_bytes * (ranks - 1) / ranks;
    out.comm_us = 2 * alltoall_us(sent, token_bytes, ranks, g.gpus_per_domain, g.intra, g.inter);
  } else {
    ModelShape wide = m;
    wide.tp = ranks;
    out.load = total;
    out.expert_us = moe_layer_us(wide, t, total, nullptr);
    // An all-gather and a reduce-scatter: every rank receives every other rank's tokens.
    const double sent = busiest * ranks;
    out.bytes = busiest * token_bytes * (ranks - 1);
    out.comm_us = 2 * alltoall_us(sent, token_bytes, ranks, g.gpus_per_domain, g.intra, g.inter);
  }
  out.exposed_us = (1 - g.overlap) * out.comm_us;
  return out;
}

}  // namespace isim::sim
