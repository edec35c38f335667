// The intercept policies, registered by name.
//
// Contract: `policy_registry()` lists every policy this build has, each with a one-line
// description; `create(name, where, params)` builds one or throws InputError listing the valid
// names. A policy rejects parameters it does not know (InputError naming `where.key` and the
// parameters it takes).
//
// Adding a policy: one file here defining its class (deriving from sim::Policy) and
// `void add_policy_NAME(PolicyRegistry&)` (its `reg.add(...)`), plus NAME on the ISIM_POLICIES
// line below. The build finds the file; the registry test lists every name, so a policy that
// is registered but not listed there (or listed and not registered) fails it.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "core/params.h"
#include "core/registry.h"
#include "sim/policy.h"

namespace isim::policy {

// Parameters from YAML (`policy: {name: X, key: value}`) or `-p policy.key=value`; errors
// name `policy.KEY` unless `where` says otherwise (core/params.h).
struct PolicyParams : Params {
  PolicyParams() : Params({}, "policy") {}
  using Params::Params;
};

using PolicyRegistry = Registry<sim::Policy, const PolicyParams&>;
const PolicyRegistry& policy_registry();

// Throws InputError unless `p` is empty; for policies that take no parameters (p.done()).
void expect_no_params(const std::string& policy, const PolicyParams& p);

#define ISIM_POLICIES(X) X(discard) X(preserve) X(swap) X(min_waste) X(pensieve) X(lru)

#define ISIM_DECLARE_POLICY(name) void add_policy_##name(PolicyRegistry& reg);
ISIM_POLICIES(ISIM_DECLARE_POLICY)
#undef ISIM_DECLARE_POLICY

}  // namespace isim::policy
