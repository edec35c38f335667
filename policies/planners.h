// The role planners, registered by name.
//
// Contract: `planner_registry()` lists every planner with a one-line description that cites
// where its rule comes from; `create(name, where, params)` builds one or throws InputError
// listing the valid names. A planner rejects parameters it does not know (Params::done) and
// checks the ones it takes (intervals > 0, thresholds in range), naming the key.
//
// Adding a planner: one file in policies/planners/ defining
// `void add_planner_NAME(cluster::PlannerRegistry&)` (one `reg.add(...)`), plus its NAME on
// the ISIM_PLANNERS line below.
#pragma once

#include "cluster/planner.h"
#include "core/params.h"

namespace isim::policy {

#define ISIM_PLANNERS(X) \
  X(static) X(dynamo_threshold) X(dynamo_sla) X(online) X(dynamo_load) X(schedule)

#define ISIM_DECLARE_PLANNER(name) void add_planner_##name(cluster::PlannerRegistry& reg);
ISIM_PLANNERS(ISIM_DECLARE_PLANNER)
#undef ISIM_DECLARE_PLANNER

const cluster::PlannerRegistry& planner_registry();

}  // namespace isim::policy
