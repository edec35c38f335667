#include "experiments/spec/component_params.h"

#include <stdexcept>

#include "core/input_error.h"
#include "core/params.h"
#include "live/live_executor.h"
#include "policies/builtin.h"
#include "policies/kv_managers.h"
#include "policies/planners.h"
#include "policies/routers.h"
#include "sim/executor.h"

namespace isim::exp {

namespace {

const char* where_of(const std::string& kind) {
  if (kind == "policy") return "policy";
  if (kind == "router") return "cluster.router";
  if (kind == "planner") return "cluster.planner";
  if (kind == "kv manager") return "engine.kv_manager";
  if (kind == "executor") return "executor";
  throw std::logic_error("component kind '" + kind + "'");
}

// Builds `name` of `kind` reading `p` (throws what the component throws).
void build(const std::string& kind, const std::string& name, const Params& p) {
  if (kind == "policy") {
    policy::policy_registry().create(name, p.where, static_cast<const policy::PolicyParams&>(p));
  } else if (kind == "router") {
    policy::router_registry().create(name, p.where, p);
  } else if (kind == "planner") {
    policy::planner_registry().create(name, p.where, p);
  } else if (kind == "kv manager") {
    policy::kv_manager_registry().create(name, p.where, p);
  } else {
    // Reads the options as the executor would, without a profile or a device.
    live::check_executor(name, static_cast<const sim::ExecutorParams&>(p));
  }
}

std::unique_ptr<Params> make_params(const std::string& kind,
                                    std::map<std::string, std::string> values) {
  if (kind == "policy") return std::make_unique<policy::PolicyParams>(std::move(values), "policy");
  if (kind == "executor")
    return std::make_unique<sim::ExecutorParams>(std::move(values), "executor");
  return std::make_unique<Params>(std::move(values), where_of(kind));
}

template <class R>
void add_kind(std::vector<ComponentParams>& out, const std::string& kind, const R& reg) {
  for (const auto* e : reg.entries()) {
    const auto p = make_params(kind, {});
    try {
      build(kind, e->name, *p);
    } catch (const InputError&) {
      // needs a parameter or a device; what it read before refusing is recorded
    }
    out.push_back({kind, e->name, where_of(kind), p->table()});
  }
}

}  // namespace

std::vector<ComponentParams> component_params() {
  std::vector<ComponentParams> out;
  add_kind(out, "policy", policy::policy_registry());
  add_kind(out, "router", policy::router_registry());
  add_kind(out, "planner", policy::planner_registry());
  add_kind(out, "kv manager", policy::kv_manager_registry());
  add_kind(out, "executor", live::executor_registry());
  return out;
}

void build_component(const std::string& kind, const std::string& name,
                     const std::map<std::string, std::string>& values) {
  build(kind, name, *make_params(kind, values));
}

}  // namespace isim::exp
