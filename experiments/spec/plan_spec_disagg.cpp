// The disaggregation axes of a plan spec (experiments/plan/plan.h): `pd_splits:`, `planners:` and
// the `cluster:` settings of the P:D fleets.
#include <fmt/format.h>

#include "core/input_error.h"
#include "experiments/spec/cluster_spec.h"
#include "experiments/spec/plan_spec_parts.h"
#include "policies/planners.h"

namespace isim::exp {

namespace {

// One `pd_splits:` entry: mixed, or "P:D" with P, D >= 1.
SplitChoice parse_split_choice(const YAML::Node& n, const std::string& file,
                               const std::string& key) {
  const std::string expected = "mixed or P:D with whole numbers (e.g. 1:3)";
  SplitChoice s;
  s.label = read_as<std::string>(n, file, key, expected);
  if (s.label == "mixed") return s;
  const auto pd = parse_pd_split(s.label);
  const std::string at = yaml_where(file, n, key);
  if (!pd) throw InputError(at + ": expected " + expected + ", got '" + s.label + "'");
  if (pd->first == 0)
    throw InputError(at + ": needs at least one prefill replica, got '" + s.label + "'");
  if (pd->second == 0)
    throw InputError(at + ": needs at least one decode replica, got '" + s.label + "'");
  s.prefill = pd->first;
  s.decode = pd->second;
  return s;
}

// Two splits that give the same roles at every fleet size.
bool same_ratio(const SplitChoice& a, const SplitChoice& b) {
  return int64_t{a.prefill} * b.decode == int64_t{b.prefill} * a.decode;
}

void parse_pd_splits(const YamlMap& root, std::vector<SplitChoice>& out) {
  const YAML::Node n = root.value("pd_splits");
  if (!n) return;
  if (!n.IsSequence() || n.size() == 0)
    root.fail("pd_splits", "expected a non-empty list of P:D splits or mixed, e.g. [mixed, 1:3]");
  out.clear();
  for (size_t i = 0; i < n.size(); ++i) {
    const std::string key = "pd_splits[" + std::to_string(i) + "]";
    SplitChoice s = parse_split_choice(n[i], root.file(), key);
    for (const auto& o : out)
      if (o.mixed() == s.mixed() && same_ratio(o, s))
        throw InputError(yaml_where(root.file(), n[i], key) + ": " + s.label +
                         (o.label == s.label ? "" : " (the ratio of " + o.label + ")") +
                         " listed twice");
    out.push_back(std::move(s));
  }
}

// One `planners:` entry: a name, or {name: ..., params}, created once to check it.
PlannerChoice parse_planner_choice(const YAML::Node& n, const std::string& file,
                                   const std::string& key) {
  PlannerChoice r;
  ComponentEntry c = parse_component_entry(n, file, key, "planner");
  r.name = std::move(c.name);
  r.params = std::move(c.params);
  const std::string at = yaml_where(file, n, key);
  Params check = r.params;
  check.where = at;
  make_planner(r.name, check, at);
  r.label = component_label(r.name, r.params);
  return r;
}

void parse_planners(const YamlMap& root, std::vector<PlannerChoice>& out) {
  const YAML::Node n = root.value("planners");
  if (!n) return;
  if (!n.IsSequence() || n.size() == 0)
    root.fail("planners",
              "expected a non-empty list of planners, e.g. [static, dynamo-threshold]; "
              "valid: " +
                  policy::planner_registry().names_joined());
  out.clear();
  for (size_t i = 0; i < n.size(); ++i) {
    const std::string key = "planners[" + std::to_string(i) + "]";
    PlannerChoice r = parse_planner_choice(n[i], root.file(), key);
    for (const auto& o : out)
      if (o.label == r.label)
        throw InputError(yaml_where(root.file(), n[i], key) + ": " + r.label + " listed twice");
    out.push_back(std::move(r));
  }
}

// `cluster:` of a plan: only what the fleet search does not set.
void parse_plan_cluster(const YamlMap& root, cluster::DisaggConfig& d) {
  const YAML::Node n = root.value("cluster");
  if (!n) return;
  if (n.IsMap()) {
    const std::pair<const char*, const char*> searched[] = {
        {"replicas", "the plan sizes the fleet"},
        {"roles", "list P:D splits in pd_splits"},
        {"router", "list routers in routers"},
        {"planner", "list planners in planners"}};
    for (const auto& [k, why] : searched)
      if (n[k])
        throw InputError(yaml_where(root.file(), n[k], std::string("cluster.") + k) +
                         ": set by the plan (" + why + ")");
  }
  parse_disagg_settings(root.map("cluster", {"links", "split", "switching"}), d);
}

// Every split with every planner, but a mixed fleet with static only.
void make_layouts(const YamlMap& root, PlanSpec& p) {
  p.layouts.clear();
  for (size_t s = 0; s < p.pd_splits.size(); ++s)
    for (size_t k = 0; k < p.planners.size(); ++k)
      if (!p.pd_splits[s].mixed() || p.planners[k].name == "static") p.layouts.push_back({s, k});
  bool any_split = false;
  for (const auto& s : p.pd_splits) any_split = any_split || !s.mixed();
  if (any_split) return;
  const YAML::Node n = root.value("planners");
  for (size_t k = 0; k < p.planners.size(); ++k)
    if (p.planners[k].name != "static")
      throw InputError(yaml_where(root.file(), n[k], "planners[" + std::to_string(k) + "]") + ": " +
                       p.planners[k].label + " needs a P:D split (pd_splits has only mixed)");
}

}  // namespace

void parse_disagg_axes(const YamlMap& root, PlanSpec& p) {
  parse_pd_splits(root, p.pd_splits);
  parse_planners(root, p.planners);
  parse_plan_cluster(root, p.disagg);
  make_layouts(root, p);
}

}  // namespace isim::exp
