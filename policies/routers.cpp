#include "policies/routers.h"

namespace isim::policy {

const cluster::RouterRegistry& router_registry() {
  static const cluster::RouterRegistry r = [] {
    cluster::RouterRegistry reg("router");
#define ISIM_ADD_ROUTER(name) add_router_##name(reg);
    ISIM_ROUTERS(ISIM_ADD_ROUTER)
#undef ISIM_ADD_ROUTER
    return reg;
  }();
  return r;
}

int32_t least_outstanding(const cluster::ClusterView& v) {
  int32_t best = -1;
  int64_t best_load = 0;
  for (int32_t r = 0; r < v.replicas(); ++r) {
    if (!v.eligible(r)) continue;
    const int64_t load = v.replica(r).load().outstanding_tokens();
    if (best < 0 || load < best_load) {
      best = r;
      best_load = load;
    }
  }
  return best;
}

}  // namespace isim::policy
