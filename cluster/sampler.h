// Sampler: the fleet's time series, every `timeseries_interval_s` (replica 0's setting; 0: none)
// of simulated time.
//
// Contract:
// - `before(t)`, called before the events of instant t: the samples due strictly before t, each
//   showing the state the events before t left (none once every session ended: only the
//   planner's own events may follow). `close(end)`: the sample due at the run's end, if any.
// - A sample is the fleet's (merged) and each replica's; with roles, the roles' too
//   (Roles::sample). More than `max_time_samples` of them is an InputError naming
//   metrics.timeseries_interval_s. `keep_replicas(false)` keeps only the fleet's series (a
//   fleet with roles keeps every replica's: the roles read them): what a reader that never
//   looks at replicas.csv (isim plan) needs, in memory that does not grow with the fleet.
#pragma once

#include <vector>

#include "cluster/fleet.h"
#include "cluster/run_result.h"

namespace isim::cluster {

class Sampler {
 public:
  explicit Sampler(Fleet& f);
  void before(sim::Nanos t);
  void close(sim::Nanos end);
  // The next sample's instant while samples are due (kForever when none will be).
  sim::Nanos due() const { return dt_ > 0 && !f_.all_done() ? next_ : sim::kForever; }
  // The first sample due at or after t (sim::kForever when none is taken).
  sim::Nanos next_at_or_after(sim::Nanos t) const;
  const std::vector<sim::TimeSample>& fleet() const { return fleet_; }
  const std::vector<ReplicaSample>& replicas() const { return replicas_; }
  void keep_replicas(bool keep) { keep_replicas_ = keep; }

 private:
  void sample(sim::Nanos t);

  Fleet& f_;
  sim::Nanos dt_ = 0, next_ = 0;
  std::vector<sim::TimeSample> fleet_;
  std::vector<ReplicaSample> replicas_;
  bool keep_replicas_ = true;
};

}  // namespace isim::cluster
