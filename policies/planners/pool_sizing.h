// PoolSizing: how many prefill and decode replicas a forecast demand needs to meet a TTFT and an
// ITL SLO, from one worker's profile (the cost model, as Dynamo's SLA planner profiles a worker
// before deployment; every worker is assumed alike).
//
// Contract (mu = max_num_batched_tokens / forward(one chunk of max_num_batched_tokens), a
// prefill replica's throughput in tokens/s):
// - `prefill_capacity(mean_prompt)`: the tokens/s one prefill replica can take while an M/D/1
//   queue of prompts of mean_prompt tokens keeps TTFT (wait + service) under ttft_s: with
//   service s = mean_prompt / mu and x = ttft_s - s, the utilisation rho_ttft = 2x / (s + 2x)
//   (mean wait rho s / (2 (1 - rho)) = x); rho = min(headroom, rho_ttft), and when an idle
//   replica already misses ttft_s (x <= 0), rho = headroom (more replicas cannot help).
//   Capacity = rho x mu.
// - `decode_batch(context)`: the largest batch b <= max_num_seqs whose decode step (b decodes
//   of `context` KV tokens each) takes <= itl_s; 1 when none does.
// - `needs(d, h, context)`: prefill = (prefill_tokens + backlog_tokens) / h /
//   prefill_capacity(prefill_tokens / prefill_requests) (0 without demand); decode =
//   max(decoders / decode_batch(context), kv_tokens / kv_capacity_tokens) (the KV term only
//   when kv_capacity_tokens > 0). Both in replicas, fractional.
#pragma once

#include <cstdint>

#include "policies/planners/forecast.h"
#include "sim/cost_model.h"

namespace isim::policy::planners {

struct SloTargets {
  double ttft_s = 2.0, itl_s = 0.05, headroom = 0.8;
};

struct PoolNeeds {
  double prefill = 0, decode = 0;
};

class PoolSizing {
 public:
  PoolSizing(const sim::Profile& profile, int64_t max_num_batched_tokens, int32_t max_num_seqs,
             int64_t kv_capacity_tokens, const SloTargets& slo);
  double prefill_tokens_per_s() const { return mu_; }
  double prefill_capacity(double mean_prompt) const;
  int32_t decode_batch(double context) const;
  PoolNeeds needs(const Demand& d, double horizon_s, double context) const;

 private:
  sim::CostModel cm_;  // a copy: the planner's look-ups are not the replica's own
  int64_t max_batched_;
  int32_t max_seqs_;
  int64_t kv_capacity_;
  SloTargets slo_;
  double mu_ = 0;
};

}  // namespace isim::policy::planners
