// The two pools a disaggregated fleet routes into (cluster/roles.h). Private to cluster/.
#pragma once

#include "cluster/planner.h"

namespace isim::cluster {

enum Pool : int { kPrefillPool = 0, kLocalPool = 1 };  // local: decode and mixed replicas
inline bool in_pool(Role r, int pool) {
  return (r == Role::kPrefill) == (pool == kPrefillPool);
}

}  // namespace isim::cluster
