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

}  // namespace isim::policy
