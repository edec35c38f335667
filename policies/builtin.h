// The intercept policies, registered by name.
//
// Contract: `policy_registry()` lists every policy this build has, each with a one-line
// description; `create(name, where, params)` builds one or throws InputError listing the valid
// names. A policy rejects parameters it does not know (InputError naming `where.key` and the
// parameters it takes).
//
// Adding a policy: write one class deriving from sim::Policy in its own file here, add a
// factory declaration below, and one `reg.add(...)` line in builtin.cpp. The registry test
// fails until the new name is listed there.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "sim/policy.h"
#include "traces/params.h"
#include "traces/registry.h"

namespace isim::policy {

// Parameters from YAML (`policy: {name: X, key: value}`) or `-p policy.key=value`; errors
// name `policy.KEY` unless `where` says otherwise (traces/params.h).
struct PolicyParams : Params {
  PolicyParams() : Params({}, "policy") {}
  using Params::Params;
};

using PolicyRegistry = Registry<sim::Policy, const PolicyParams&>;
const PolicyRegistry& policy_registry();

// Throws InputError unless `p` is empty; for policies that take no parameters (p.done()).
void expect_no_params(const std::string& policy, const PolicyParams& p);

std::unique_ptr<sim::Policy> make_discard(const PolicyParams& p);
std::unique_ptr<sim::Policy> make_improved_discard(const PolicyParams& p);
std::unique_ptr<sim::Policy> make_preserve(const PolicyParams& p);
std::unique_ptr<sim::Policy> make_swap(const PolicyParams& p);
std::unique_ptr<sim::Policy> make_min_waste(const PolicyParams& p);
std::unique_ptr<sim::Policy> make_pensieve(const PolicyParams& p);
std::unique_ptr<sim::Policy> make_lru(const PolicyParams& p);

}  // namespace isim::policy
