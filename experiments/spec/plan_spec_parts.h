// Parts of the plan-spec reader (experiments/plan/plan.h) shared by plan_spec.cpp and
// plan_spec_disagg.cpp; errors are InputError("FILE:LINE: key: reason") as everywhere there.
#pragma once

#include <string>

#include "core/params.h"
#include "core/strict_yaml.h"
#include "experiments/spec/plan_spec.h"

namespace isim::exp {

// name, or name(k=v,...) with parameters.
std::string component_label(const std::string& name, const Params& params);

// A `routers:` or `planners:` entry: NAME, or {name: NAME, key: value, ...}; `what` names the
// component in errors ("router", "planner"). params.where is `key`.
struct ComponentEntry {
  std::string name;
  Params params;
};
ComponentEntry parse_component_entry(const YAML::Node& n, const std::string& file,
                                     const std::string& key, const std::string& what);

// `pd_splits:`, `planners:` and `cluster:` of the plan `root` into p.pd_splits, p.planners,
// p.layouts and p.disagg (the defaults when absent).
void parse_disagg_axes(const YamlMap& root, PlanSpec& p);

}  // namespace isim::exp
