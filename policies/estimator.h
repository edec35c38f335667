// Duration estimators (T_hat): how much longer will a paused session's intercept last?
//
// | name      | estimate of remaining time                                                  |
// |-----------|-----------------------------------------------------------------------------|
// | oracle    | the trace's duration minus elapsed time                                      |
// | elapsed   | the time already elapsed (no knowledge needed)                               |
// | history   | mean residual life E[D - t | D > t] over completed intercepts of the same    |
// |           | kind; `elapsed` until `min_samples` of that kind have completed, or when no   |
// |           | completed one lasted longer than t                                           |
//
// Contract: estimates are >= 0 and deterministic. Only `oracle` reads the true duration.
// `history` learns only from intercepts that have ended (`observe`), never from the future; its
// answer is exact (Fenwick trees over the trace's duration values, which fixes the index space
// but not what has been seen).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "traces/registry.h"
#include "traces/session.h"

namespace isim::policy {

class DurationEstimator {
 public:
  virtual ~DurationEstimator() = default;
  virtual std::string name() const = 0;
  virtual double remaining_s(const std::string& kind, double elapsed_s, double true_s) const = 0;
  // An intercept of `kind` ended after `duration_s`.
  virtual void observe(const std::string& /*kind*/, double /*duration_s*/) {}
  // Called once before use with every intercept the run may observe.
  virtual void prepare(const std::vector<trace::Intercept>& /*universe*/) {}
};

struct EstimatorOptions {
  int64_t history_min_samples = 8;
};

using EstimatorRegistry = Registry<DurationEstimator, const EstimatorOptions&>;
const EstimatorRegistry& estimator_registry();

}  // namespace isim::policy
