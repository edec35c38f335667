#include "sim/executor.h"

namespace isim::sim {

const ExecutorRegistry& executor_registry() {
  static const ExecutorRegistry r = [] {
    ExecutorRegistry reg("executor");
    reg.add("sim", "computes iteration and swap times from the profile (deterministic)",
            [](const Profile& p) { return std::make_unique<SimExecutor>(p); });
    return reg;
  }();
  return r;
}

}  // namespace isim::sim
