#include "sim/executor.h"

#include <stdexcept>

namespace isim::sim {

LiveTimes Executor::execute(const LiveWork&) {
  throw std::logic_error("Executor::execute called on an executor that is not live");
}

void add_sim_executor(ExecutorRegistry& reg) {
  reg.add("sim", "computes iteration and swap times from the profile (deterministic)",
          [](const Profile& p, const ExecutorParams& params) -> std::unique_ptr<Executor> {
            params.done("executor 'sim'");
            return std::make_unique<SimExecutor>(p);
          });
}

const ExecutorRegistry& executor_registry() {
  static const ExecutorRegistry r = [] {
    ExecutorRegistry reg("executor");
    add_sim_executor(reg);
    return reg;
  }();
  return r;
}

}  // namespace isim::sim
