// The numeric parameters of every registered component, read from the components themselves.
//
// Contract:
// - component_params() builds each registered policy, router, planner, KV manager and executor
//   once with empty Params and returns, per component, the rows its bounded reads recorded
//   (core/params.h: key, default, bound, help), in registry order. A component that refuses
//   empty Params (a planner needing a list, live-cuda without a device) still lists what it
//   read before refusing. The key and its bound are written once, where the component reads
//   them; `isim list` and tests/experiments/test_component_bounds.cpp both use these rows.
// - build_component(kind, name, values) builds one with the given parameter texts, with errors
//   prefixed as a spec's are ("policy.KEY", "cluster.router.KEY", "cluster.planner.KEY",
//   "engine.kv_manager.KEY", "executor.KEY"); it throws the component's InputError.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/params.h"

namespace isim::exp {

struct ComponentParams {
  std::string kind;  // "policy", "router", "planner", "kv manager", "executor"
  std::string name;
  std::string where;  // the prefix of its errors ("cluster.router")
  std::vector<ParamRow> rows;
};

std::vector<ComponentParams> component_params();

void build_component(const std::string& kind, const std::string& name,
                     const std::map<std::string, std::string>& values);

}  // namespace isim::exp
