#include "policies/builtin.h"

namespace isim::policy {

void expect_no_params(const std::string& policy, const PolicyParams& p) {
  p.done("policy '" + policy + "'");
}

const PolicyRegistry& policy_registry() {
  static const PolicyRegistry r = [] {
    PolicyRegistry reg("policy");
#define ISIM_ADD_POLICY(name) add_policy_##name(reg);
    ISIM_POLICIES(ISIM_ADD_POLICY)
#undef ISIM_ADD_POLICY
    return reg;
  }();
  return r;
}

}  // namespace isim::policy
