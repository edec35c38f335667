#include "policies/planners.h"

namespace isim::policy {

const cluster::PlannerRegistry& planner_registry() {
  static const cluster::PlannerRegistry r = [] {
    cluster::PlannerRegistry reg("planner");
#define ISIM_ADD_PLANNER(name) add_planner_##name(reg);
    ISIM_PLANNERS(ISIM_ADD_PLANNER)
#undef ISIM_ADD_PLANNER
    return reg;
  }();
  return r;
}

}  // namespace isim::policy
