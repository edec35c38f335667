#include "experiments/cluster_spec.h"
#include "experiments/experiment.h"

#include "policies/routers.h"
#include "traces/input_error.h"

namespace isim::exp {

namespace {

void parse_router(const YamlMap& cl, ClusterSpec& c) {
  const YAML::Node n = cl.value("router");
  if (!n) return;
  const std::string key = cl.key_path("router");
  if (n.IsMap()) {
    const YAML::Node name = n["name"];
    if (!name) throw InputError(yaml_where(cl.file(), n, key + ".name") + ": missing router name");
    c.router = read_as<std::string>(name, cl.file(), key + ".name", "a router name");
    for (const auto& kv : n) {
      const auto k = read_as<std::string>(kv.first, cl.file(), key, "a parameter name");
      if (k == "name") continue;
      c.router_params.values[k] =
          read_as<std::string>(kv.second, cl.file(), key + "." + k, "a scalar parameter");
    }
  } else {
    c.router = read_as<std::string>(n, cl.file(), key, "a router name or {name: ..., params}");
  }
  // Fail now, with the file's position: an unknown name or parameter.
  c.router_params.where = key;
  const std::string at = yaml_where(cl.file(), n, key);
  policy::router_registry().get(c.router, at);
  policy::router_registry().create(c.router, at, c.router_params);
}

ReplicaGroup parse_group(const YAML::Node& n, const std::string& file, const std::string& key,
                         const std::string& base_dir, const sim::EngineConfig& engine,
                         const EngineReader& read_engine) {
  const YamlMap g(n, file, key, {"name", "count", "profile", "tp", "engine"},
                  "a map {name, count, profile, tp, engine}");
  ReplicaGroup r;
  r.name = g.get<std::string>("name", "", "a string");
  r.count = g.require<int32_t>("count", "an integer >= 1");
  if (r.count < 1) g.fail("count", "must be >= 1");
  r.profile = resolve_spec_path(base_dir, g.get<std::string>("profile", "", "a profile YAML path"));
  r.tp = g.get<int32_t>("tp", 0, "an integer >= 1");
  if (g.has("tp") && r.tp < 1) g.fail("tp", "must be >= 1");
  r.engine = engine;
  if (g.has("engine")) {
    read_engine(g, "engine", r.engine);
    r.engine_overrides = YAML::Clone(g.value("engine"));
  }
  return r;
}

}  // namespace

ClusterSpec parse_cluster(const YamlMap& root, const std::string& base_dir,
                          const sim::EngineConfig& engine, const EngineReader& read_engine) {
  ClusterSpec c;
  if (!root.has("cluster")) return c;
  c.given = true;
  const YamlMap cl = root.map("cluster", {"replicas", "router"});
  const YAML::Node reps = cl.value("replicas");
  if (!reps || reps.IsScalar()) {
    ReplicaGroup g;
    g.count = cl.get<int32_t>("replicas", 1, "an integer >= 1 or a list of replica groups");
    if (g.count < 1) cl.fail("replicas", "must be >= 1");
    g.engine = engine;
    c.groups.push_back(std::move(g));
  } else if (reps.IsSequence() && reps.size() > 0) {
    std::vector<std::string> names;
    for (size_t i = 0; i < reps.size(); ++i) {
      const std::string key = "cluster.replicas[" + std::to_string(i) + "]";
      c.groups.push_back(parse_group(reps[i], root.file(), key, base_dir, engine, read_engine));
      const std::string& nm = c.groups.back().name;
      if (nm.empty()) c.groups.back().name = "group" + std::to_string(i);
      for (const auto& other : names)
        if (other == c.groups.back().name)
          throw InputError(yaml_where(root.file(), reps[i], key + ".name") + ": '" + other +
                           "' names two groups");
      names.push_back(c.groups.back().name);
    }
  } else {
    cl.fail("replicas", "expected an integer >= 1 or a non-empty list of replica groups");
  }
  parse_router(cl, c);
  return c;
}

YAML::Node resolved_cluster(const ClusterSpec& c) {
  YAML::Node r;
  if (c.groups.size() == 1 && c.groups.front().name.empty()) {
    r["replicas"] = c.groups.front().count;
  } else {
    for (const auto& g : c.groups) {
      YAML::Node y;
      y["name"] = g.name;
      y["count"] = g.count;
      if (!g.profile.empty()) y["profile"] = g.profile;
      if (g.tp > 0) y["tp"] = g.tp;
      if (g.engine_overrides.IsMap()) y["engine"] = g.engine_overrides;
      r["replicas"].push_back(y);
    }
  }
  if (c.router_params.empty()) {
    r["router"] = c.router;
  } else {
    r["router"]["name"] = c.router;
    for (const auto& [k, v] : c.router_params.values) r["router"][k] = v;
  }
  return r;
}

}  // namespace isim::exp
