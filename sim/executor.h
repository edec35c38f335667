// Executor: where an iteration's time comes from. The engine hands it each batch and each swap
// and advances the clock by what it returns.
//
// Contract:
// - `run(batch)` returns the forward time of one iteration (>= 0).
// - `transfer(...)` returns the time to move `bytes` in `copies` copy calls over PCIe.
// - `cost_model()` is the profile-based model that policies use for estimates (min-waste),
//   whichever executor runs; live executors also carry one.
// - The `sim` executor computes both from the profile and is deterministic.
#pragma once

#include <memory>
#include <string>

#include "sim/cost_model.h"
#include "traces/registry.h"

namespace isim::sim {

class Executor {
 public:
  virtual ~Executor() = default;
  virtual std::string name() const = 0;
  virtual Nanos run(const BatchShape& batch) = 0;
  virtual Nanos transfer(int64_t bytes, int64_t copies, Direction dir, bool duplex) = 0;
  virtual const CostModel& cost_model() const = 0;
};

class SimExecutor final : public Executor {
 public:
  explicit SimExecutor(const Profile& p) : model_(p) {}
  std::string name() const override { return "sim"; }
  Nanos run(const BatchShape& batch) override { return model_.forward(batch); }
  Nanos transfer(int64_t bytes, int64_t copies, Direction dir, bool duplex) override {
    return model_.transfer(bytes, copies, dir, duplex);
  }
  const CostModel& cost_model() const override { return model_; }

 private:
  CostModel model_;
};

using ExecutorRegistry = Registry<Executor, const Profile&>;
// Every executor this build has. Live executors are added by the layers that own them.
const ExecutorRegistry& executor_registry();

}  // namespace isim::sim
