#include <string>
#include <utility>

#include "experiments/experiment.h"
#include "traces/input_error.h"
#include "traces/strict_yaml.h"

namespace isim::exp {

namespace {

// Keys whose scalar value is short for a map with one field: `policy: swap` is
// {name: swap}, `cluster.split: always` is {mode: always}.
const std::pair<const char*, const char*> kShorthands[] = {
    {"policy", "name"},
    {"cluster.router", "name"},
    {"cluster.planner", "name"},
    {"cluster.split", "mode"},
};

// When `key` lies below `path` and the spec gives `path` as a scalar, that scalar becomes
// {field: scalar}, so that `-p policy.estimator=history` refines `policy: min-waste`.
void expand_shorthand(YAML::Node& root, const std::string& key, const std::string& path,
                      const std::string& field) {
  if (key.rfind(path + ".", 0) != 0) return;
  YAML::Node parent = root;
  std::string last = path;
  for (auto dot = last.find('.'); dot != std::string::npos; dot = last.find('.')) {
    const YAML::Node next = std::as_const(parent)[last.substr(0, dot)];  // reading adds no key
    if (!next || !next.IsMap()) return;
    parent.reset(next);
    last = last.substr(dot + 1);
  }
  const YAML::Node v = std::as_const(parent)[last];
  if (!v || !v.IsScalar()) return;
  YAML::Node m(YAML::NodeType::Map);
  m[field] = v.Scalar();
  parent[last] = m;
}

// Records that the key `part` of map `m`, and its value, came from `origin`.
void note_entry(const YAML::Node& m, const std::string& part, const std::string& origin,
                YamlOrigins* origins) {
  if (!origins) return;
  for (const auto& e : m)
    if (e.first.IsScalar() && e.first.Scalar() == part) {
      origins->add(e.first, origin);
      origins->add(e.second, origin);
    }
}

}  // namespace

void check_override_root(const YAML::Node& root, const std::string& file, const std::string& kv) {
  if (!root.IsMap())
    throw InputError(yaml_where(file, root, "(document)") + ": expected a map of keys for -p " +
                     kv + " to set, got " + yaml_describe(root));
}

void apply_overrides(YAML::Node& root, const std::string& file,
                     const std::vector<std::string>& overrides, YamlOrigins& origins) {
  for (const auto& o : overrides) {
    check_override_root(root, file, o);
    apply_override(root, o, &origins);
  }
}

void apply_override(YAML::Node& root, const std::string& kv, YamlOrigins* origins) {
  auto eq = kv.find('=');
  if (eq == std::string::npos || eq == 0)
    throw InputError("-p " + kv + ": expected key=value (e.g. arrival.rate=2)");
  const std::string origin = "-p " + kv;
  if (!root.IsMap())
    throw InputError(origin + ": expected a spec that is a map of keys, got " +
                     yaml_describe(root));
  std::string key = kv.substr(0, eq);
  YAML::Node value = parse_yaml_value(kv.substr(eq + 1), origin);
  // One policy named on the command line replaces the list of policies.
  if (key == "policy") root.remove("policies");
  for (const auto& [path, field] : kShorthands) expand_shorthand(root, key, path, field);
  // Likewise an executor parameter turns `executor: NAME` into {name: NAME, ...}.
  if (key.rfind("executor.", 0) == 0 && key != "executor.name" &&
      (!root["executor"] || root["executor"].IsScalar())) {
    YAML::Node m(YAML::NodeType::Map);
    m["name"] = root["executor"] ? root["executor"].as<std::string>() : std::string("sim");
    root["executor"] = m;
  }
  YAML::Node cur = root;
  size_t start = 0;
  while (true) {
    auto dot = key.find('.', start);
    std::string part =
        key.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (part.empty()) throw InputError(origin + ": empty key component");
    if (dot == std::string::npos) {
      cur[part] = value;
      note_entry(cur, part, origin, origins);
      return;
    }
    YAML::Node next = cur[part];
    if (!next || next.IsNull()) {
      cur[part] = YAML::Node(YAML::NodeType::Map);
      note_entry(cur, part, origin, origins);
      next = cur[part];
    }
    if (!next.IsMap()) throw InputError(origin + ": '" + key.substr(0, dot) + "' is not a map");
    cur.reset(next);
    start = dot + 1;
  }
}

}  // namespace isim::exp
