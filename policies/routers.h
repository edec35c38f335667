// The routers, registered by name.
//
// Contract: `router_registry()` lists every router with a one-line description that cites where
// its rule comes from; `create(name, where, params)` builds one or throws InputError listing
// the valid names. A router rejects parameters it does not know (Params::done).
//
// Adding a router: one file in policies/routers/ defining `void add_router_NAME(RouterRegistry&)`
// (one `reg.add(...)`), plus its NAME on the ISIM_ROUTERS line below.
#pragma once

#include "cluster/router.h"
#include "core/params.h"

namespace isim::policy {

#define ISIM_ROUTERS(X) \
  X(round_robin) X(least_loaded) X(session_affinity) X(kv_aware) X(power_of_two) X(dp_lb)

#define ISIM_DECLARE_ROUTER(name) void add_router_##name(cluster::RouterRegistry& reg);
ISIM_ROUTERS(ISIM_DECLARE_ROUTER)
#undef ISIM_DECLARE_ROUTER

const cluster::RouterRegistry& router_registry();

}  // namespace isim::policy
