// local: each replica as today (sim::LocalKvManager): worthless blocks age out of the prefix
// cache like any released block, and the most recently arrived idle session is evicted first.
#include "policies/kv_managers.h"

namespace isim::policy {

void add_kv_manager_local(KvManagerRegistry& reg) {
  reg.add("local", "today's behaviour: signals ignored, newest idle session evicted first",
          [](const Params& p) {
            p.done("kv manager 'local'");
            return std::make_unique<sim::LocalKvManager>();
          });
}

}  // namespace isim::policy
