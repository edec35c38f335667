#include "policies/kv_managers.h"

namespace isim::policy {

const KvManagerRegistry& kv_manager_registry() {
  static const KvManagerRegistry r = [] {
    KvManagerRegistry reg("kv manager");
#define ISIM_ADD_KV_MANAGER(name) add_kv_manager_##name(reg);
    ISIM_KV_MANAGERS(ISIM_ADD_KV_MANAGER)
#undef ISIM_ADD_KV_MANAGER
    return reg;
  }();
  return r;
}

}  // namespace isim::policy
