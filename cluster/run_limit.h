// RunLimit: how far a replica may run ahead in coalesced decode steps (sim/decode_run.h's
// RunHorizon), for the cluster that owns it.
//
// Contract:
// - Only a fleet without roles, tiers, transfers, lockstep groups or anything else that makes
//   it serial (cluster/cluster.h) uses one (Cluster's constructor).
// - A lone replica (`settles` false; it runs one instant at a time, never in windows):
//   `run_limit(r, t1)` is the earliest of the next queued event (every event on the queue is
//   someone else's that may change or read the replica: arrivals, intercept ends), the first
//   time-series sample due at or after t1 (Sampler::next_at_or_after) and the horizon of the
//   current Cluster::run_until (`set_until`): a caller reading the fleet when it returns sees
//   the same replica state as stepping.
// - Several replicas (`settles` true): the fleet settles a replica's run before it reads or
//   changes it (Fleet::set_settles), so fleet events do not bound a run: only the sample and
//   the horizon do (the sampler and the caller of run_until read the replicas' state as it
//   is). Both are the same for every replica whatever the thread count.
#pragma once

#include <algorithm>

#include "cluster/sampler.h"
#include "sim/decode_run.h"
#include "sim/event_queue.h"

namespace isim::cluster {

class RunLimit final : public sim::RunHorizon {
 public:
  RunLimit(const sim::EventQueue& queue, const Sampler& sampler, bool settles)
      : queue_(queue), sampler_(sampler), settles_(settles) {}
  void set_until(sim::Nanos until) { until_ = until; }
  sim::Nanos run_limit(int32_t /*replica*/, sim::Nanos t1) const override {
    const sim::Nanos own = std::min(sampler_.next_at_or_after(t1), until_);
    if (settles_) return own;
    const sim::Nanos next = queue_.empty() ? sim::kForever : queue_.top().time;
    return std::min(next, own);
  }

 private:
  const sim::EventQueue& queue_;
  const Sampler& sampler_;
  bool settles_;
  sim::Nanos until_ = sim::kForever;
};

}  // namespace isim::cluster
