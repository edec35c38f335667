// The fleet's time series (cluster/sampler.h).
#include "cluster/sampler.h"

#include <fmt/format.h>

#include "cluster/roles.h"
#include "core/input_error.h"

namespace isim::cluster {

Sampler::Sampler(Fleet& f) : f_(f) {
  const double dt = f.spec(0).config.timeseries_interval_s;
  dt_ = dt > 0 ? sim::from_seconds(dt) : 0;
}

void Sampler::before(sim::Nanos t) {
  while (dt_ > 0 && next_ < t && !f_.all_done()) {
    sample(next_);
    next_ += dt_;
  }
}

sim::Nanos Sampler::next_at_or_after(sim::Nanos t) const {
  if (dt_ <= 0) return sim::kForever;
  if (next_ >= t) return next_;
  return next_ + (t - next_ + dt_ - 1) / dt_ * dt_;
}

void Sampler::close(sim::Nanos end) {
  if (dt_ > 0 && next_ <= end) sample(end);
}

void Sampler::sample(sim::Nanos t) {
  const int64_t cap = f_.spec(0).config.max_time_samples;
  if (static_cast<int64_t>(fleet_.size()) >= cap) {
    const double dt = f_.spec(0).config.timeseries_interval_s;
    throw InputError(fmt::format(
        "metrics.timeseries_interval_s: {} s reached the cap of {} time-series samples at "
        "t = {:.3f} s, with sessions still running (the run outlasts its trace); raise it, "
        "e.g. -p metrics.timeseries_interval_s={}",
        dt, cap, sim::to_seconds(t), dt * 10));
  }
  sim::TimeSample fleet;
  fleet.t_s = sim::to_seconds(t);
  for (int32_t r = 0; r < f_.size(); ++r) {
    // Unsettled (Fleet::peek): settling here, before the instant's events, would end a step
    // due at now() ahead of them.
    const sim::ReplicaView& v = f_.peek(r).view();
    sim::TimeSample s = v.sample(t);
    if (keep_replicas_ || f_.parts().roles) replicas_.push_back({v.replica(), s});
    fleet.merge(s);
  }
  fleet_.push_back(fleet);
  if (Roles* roles = f_.parts().roles) roles->sample(t, replicas_);  // reads the samples just taken
}

}  // namespace isim::cluster
