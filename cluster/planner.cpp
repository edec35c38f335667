#include "cluster/planner.h"

namespace isim::cluster {

const char* role_name(Role r) {
  switch (r) {
    case Role::kMixed:
      return "mixed";
    case Role::kPrefill:
      return "prefill";
    case Role::kDecode:
      return "decode";
  }
  return "?";
}

}  // namespace isim::cluster
