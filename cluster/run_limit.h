// RunLimit: how far a lone replica may run ahead in coalesced decode steps (sim/decode_run.h's
// RunHorizon), for the cluster that owns it.
//
// Contract:
// - Only a fleet of one replica without roles, tiers, transfers or lockstep groups uses one
//   (Cluster's constructor): there every event on the queue is someone else's that may change
//   or read the replica (arrivals, intercept ends), and nothing else runs while it is busy.
// - `run_limit(r, t1)`: the earliest of the next queued event, the first time-series sample
//   due at or after t1 (Sampler::next_at_or_after) and the horizon of the current
//   Cluster::run_until (`set_until`): a caller reading the fleet when it returns sees the same
//   replica state as stepping; and while a window runs (cluster/window.h), its end: the effects
//   it holds (an intercept end among them) reach the queue only after it.
#pragma once

#include <algorithm>

#include "cluster/sampler.h"
#include "sim/decode_run.h"
#include "sim/event_queue.h"

namespace isim::cluster {

class RunLimit final : public sim::RunHorizon {
 public:
  RunLimit(const sim::EventQueue& queue, const Sampler& sampler)
      : queue_(queue), sampler_(sampler) {}
  void set_until(sim::Nanos until) { until_ = until; }
  void set_window_end(sim::Nanos end) { window_end_ = end; }
  sim::Nanos run_limit(int32_t /*replica*/, sim::Nanos t1) const override {
    const sim::Nanos next = queue_.empty() ? sim::kForever : queue_.top().time;
    return std::min({next, sampler_.next_at_or_after(t1), until_, window_end_});
  }

 private:
  const sim::EventQueue& queue_;
  const Sampler& sampler_;
  sim::Nanos until_ = sim::kForever;
  sim::Nanos window_end_ = sim::kForever;
};

}  // namespace isim::cluster
