// SLO-based pool sizing from a worker's profile (policies/planners/pool_sizing.h).
#include "policies/planners/pool_sizing.h"

#include <algorithm>
#include <cmath>

namespace isim::policy::planners {

PoolSizing::PoolSizing(const sim::Profile& profile, int64_t max_num_batched_tokens,
                       int32_t max_num_seqs, int64_t kv_capacity_tokens, const SloTargets& slo)
    : cm_(profile),
      max_batched_(std::max<int64_t>(max_num_batched_tokens, 1)),
      max_seqs_(std::max(max_num_seqs, 1)),
      kv_capacity_(kv_capacity_tokens),
      slo_(slo) {
  sim::BatchShape b;
  b.total_tokens = max_batched_;
  b.num_logits = 1;
  b.prefills.push_back({max_batched_, 0});
  mu_ = static_cast<double>(max_batched_) / sim::to_seconds(cm_.forward(b));
}

double PoolSizing::prefill_capacity(double mean_prompt) const {
  const double s = mean_prompt / mu_;
  const double x = slo_.ttft_s - s;
  const double rho = x > 0 ? std::min(slo_.headroom, 2 * x / (s + 2 * x)) : slo_.headroom;
  return rho * mu_;
}

int32_t PoolSizing::decode_batch(double context) const {
  int32_t best = 1;
  for (int32_t b = 1; b <= max_seqs_; ++b) {
    sim::BatchShape shape;
    shape.total_tokens = b;
    shape.num_decode = b;
    shape.decode_kv_tokens = std::llround(context * b);
    shape.num_logits = b;
    if (sim::to_seconds(cm_.forward(shape)) > slo_.itl_s) break;  // step time grows with b
    best = b;
  }
  return best;
}

PoolNeeds PoolSizing::needs(const Demand& d, double horizon_s, double context) const {
  PoolNeeds n;
  const double tokens = d.prefill_tokens + d.backlog_tokens;
  if (tokens > 0) {
    const double prompt = d.prefill_requests > 0 ? d.prefill_tokens / d.prefill_requests : tokens;
    n.prefill = tokens / horizon_s / prefill_capacity(prompt);
  }
  n.decode = d.decoders / decode_batch(context);
  if (kv_capacity_ > 0)
    n.decode = std::max(n.decode, d.kv_tokens / static_cast<double>(kv_capacity_));
  return n;
}

}  // namespace isim::policy::planners
