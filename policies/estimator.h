// Duration estimators (T_hat): how much longer will a paused session's intercept last?
//
// | name      | estimate of remaining time                                                  |
// |-----------|-----------------------------------------------------------------------------|
// | oracle    | the trace's duration minus elapsed time (through sim::Oracle, by name)       |
// | elapsed   | the time already elapsed (no knowledge needed)                               |
// | history   | mean residual life E[D - t | D > t] over completed intercepts of the same    |
// |           | kind; `elapsed` until `min_samples` of that kind have completed, or when no   |
// |           | completed one lasted longer than t; also P(D <= t + H | D > t) (p_within)    |
//
// Contract: estimates are >= 0 and deterministic. Estimators see the past only: the kind of
// the pause, how long it has lasted, and the intercepts that have ended (`observe`). The one
// exception is `oracle`, the only estimator that overrides `remaining_for` and the only file
// that includes sim/oracle.h. `history` is exact over what it has observed: it keeps each
// kind's ended durations in an order-statistics tree of whole nanoseconds, so its answer does
// not depend on the order of observation.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/registry.h"
#include "sim/session_state.h"

namespace isim::policy {

class DurationEstimator {
 public:
  virtual ~DurationEstimator() = default;
  virtual std::string name() const = 0;
  // Past only: a pause of `kind` that has lasted `elapsed_s`.
  virtual double remaining_s(const std::string& kind, double elapsed_s) const = 0;
  // The estimate for paused session `s`; only the oracle looks further than its kind.
  virtual double remaining_for(const sim::SessionState& s, double elapsed_s) const {
    return remaining_s(s.intercept_kind(), elapsed_s);
  }
  // Past only: the chance that a pause of `kind` that has lasted `elapsed_s` ends within
  // `horizon_s` more, P(D <= e + H | D > e) over the intercepts of that kind that have ended; a
  // negative number when it has no basis (the base class; `history` before `min_samples`), and
  // 0 when none of them lasted longer than e.
  virtual double p_within(const std::string& /*kind*/, double /*elapsed_s*/,
                          double /*horizon_s*/) const {
    return -1;
  }
  // An intercept of `kind` ended after `duration_s`.
  virtual void observe(const std::string& /*kind*/, double /*duration_s*/) {}
};

struct EstimatorOptions {
  int64_t history_min_samples = 8;
};

using EstimatorRegistry = Registry<DurationEstimator, const EstimatorOptions&>;
const EstimatorRegistry& estimator_registry();

}  // namespace isim::policy
