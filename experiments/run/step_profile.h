// What one step costs on a profile without running a trace (`isim profile step`): one engine's
// forward for a batch, or the lockstep step of one DP/EP group whose cores all run that batch.
//
// Contract:
// - The batch: `decode` sequences each attending `kv` KV tokens (decode_kv_tokens = decode x kv,
//   decode_kv_max = decode_kv_min = kv) and, with prefill > 0, one chunk of `prefill` tokens over
//   `prefill_kv` cached ones; total_tokens = decode + prefill, num_logits = decode + (prefill >
//   0). Bounds (InputError naming the flag): decode and prefill in [0, 2^20], kv and prefill_kv
//   in [0, 2^30], at least one of decode and prefill > 0.
// - The parallel part is a cluster group's (experiments/spec/cluster_spec.h): par.dp, par.ep,
//   ep_overlap, expert_skew; dp_spec over `links` gives the EpGroupShape a cluster group would
//   get, and the profile the group runs on is exp::group_profile's (model.ep = dp x tp).
//   check_parallel_profile's errors name "--dp" and "--ep".
// - Without a lockstep group (dp 1 without ep, or a dense model: its DP cores are independent
//   replicas), `group` is false: the engine's forward (CostModel::parts) on the profile as given,
//   step = forward. With one, every one of the dp cores runs the batch: own = forward - the
//   core's MoE part (sim::core_own_ns), and sim::group_step over dp equal cores gives the MoE
//   layer and the step (cluster/lockstep.h's rule).
// - Throughput: output tokens/s per GPU = decode / step / tp; per group (or per engine) =
//   decode x dp / step, the dp cores of a dense model counted as dp engines.
#pragma once

#include <cstdint>

#include "cluster/disagg.h"
#include "experiments/spec/cluster_spec.h"
#include "sim/cost_model.h"
#include "sim/ep_cost.h"
#include "sim/group_step.h"
#include "sim/profile.h"

namespace isim::exp {

struct StepQuery {
  int64_t decode = 0, kv = 0, prefill = 0, prefill_kv = 0;
  ParallelKnobs par;
  cluster::LinksConfig links;
};

struct StepProfile {
  sim::Profile profile;  // as the engine or group runs it (model.ep set for a group)
  sim::BatchShape batch;
  sim::ForwardParts parts;  // one engine's (one core's) forward
  bool group = false;       // a lockstep group
  sim::EpGroupShape shape;  // the group's
  sim::Nanos own = 0;       // a core's forward without its MoE part
  sim::RankLoad load;       // the busiest EP rank's (mean, sd, max); ep only
  sim::GroupStep step;      // the group's
  sim::Nanos step_ns = 0;   // the group's step, or the engine's forward
  double tokens_per_s_per_gpu = 0;
  double tokens_per_s = 0;  // per group, or per engine x dp
};

StepProfile profile_step(const sim::Profile& p, const StepQuery& q);

}  // namespace isim::exp
