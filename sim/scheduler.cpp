// The registry of iteration schedulers: every name on ISIM_SCHEDULERS (sim/scheduler.h), each
// added by its own file in sim/schedulers/.
#include "sim/scheduler.h"

namespace isim::sim {

const SchedulerRegistry& scheduler_registry() {
  static const SchedulerRegistry r = [] {
    SchedulerRegistry reg("scheduler");
#define ISIM_ADD_SCHEDULER(name) schedulers::add_scheduler_##name(reg);
    ISIM_SCHEDULERS(ISIM_ADD_SCHEDULER)
#undef ISIM_ADD_SCHEDULER
    return reg;
  }();
  return r;
}

}  // namespace isim::sim
