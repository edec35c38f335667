#include "experiments/spec/engine_spec.h"

#include <vector>

#include <fmt/format.h>

#include "policies/kv_managers.h"
#include "sim/pool_limits.h"
#include "sim/scheduler.h"

namespace isim::exp {

namespace {

// The keys of an `engine:` map: the tables of sim/engine_config.h, then the KV manager.
std::vector<std::string> engine_keys() {
  KnobNames names;
  sim::EngineConfig{}.all_knobs(names);
  names.names.emplace_back("kv_manager");
  return names.names;
}

// The keys of an `engine:` map onto `c` (the experiment's, or a cluster group's overrides):
// the tables, then what a table cannot say (registered names, one knob bounded by another).
void apply_engine(const YamlMap& en, sim::EngineConfig& c) {
  KnobReader read{en};
  c.all_knobs(read);
  if (en.has("scheduler")) sim::scheduler_registry().get(c.scheduler, en.where("scheduler"));
  if (en.has("activation_reserve_gib")) c.activation_reserve_given = true;
  if (c.kv_capacity != "auto" && c.kv_capacity != "vllm" && c.kv_capacity != "reserve")
    en.fail("kv_capacity", "expected auto, vllm or reserve, got '" + c.kv_capacity + "'");
  if (c.max_long_partial_prefills > c.max_num_partial_prefills)
    en.fail("max_long_partial_prefills",
            fmt::format("{} is more than max_num_partial_prefills {}; expected at most "
                        "max_num_partial_prefills",
                        c.max_long_partial_prefills, c.max_num_partial_prefills));
  if (en.has("kv_manager")) {
    Params params;
    read_named(en, "kv_manager", "kv manager", c.kv_manager, params);
    c.kv_manager_params = params.values;
    // Fail now, with the file's position: an unknown name or parameter.
    policy::kv_manager_registry().get(c.kv_manager, en.where("kv_manager"));
    policy::kv_manager_registry().create(c.kv_manager, en.where("kv_manager"), params);
  }
}

// Writes into `out` the feature knobs of `v` that differ from their defaults.
void write_changed_features(YAML::Node& out, sim::EngineConfig v) {
  YAML::Node mine, defaults;
  KnobWriter w{mine}, d{defaults};
  v.feature_knobs(w);
  sim::EngineConfig{}.feature_knobs(d);
  for (const auto& kv : mine) {
    const auto k = kv.first.as<std::string>();
    if (YAML::Dump(kv.second) != YAML::Dump(defaults[k])) out[k] = kv.second;
  }
}

}  // namespace

void read_named(const YamlMap& cl, const std::string& key, const std::string& what,
                std::string& name, Params& params) {
  const YAML::Node n = cl.value(key);
  const std::string path = cl.key_path(key);
  params.where = path;
  if (!n.IsMap()) {
    name = read_as<std::string>(n, cl.file(), path, "a " + what + " name or {name: ..., params}");
    return;
  }
  const YAML::Node nm = n["name"];
  if (!nm)
    throw InputError(yaml_where(cl.file(), n, path + ".name") + ": missing " + what + " name");
  name = read_as<std::string>(nm, cl.file(), path + ".name", "a " + what + " name");
  for (const auto& kv : n) {
    const auto k = yaml_key(kv.first, cl.file(), path);
    if (k == "name") continue;
    params.values[k] =
        read_as<std::string>(kv.second, cl.file(), path + "." + k, "a scalar parameter");
    params.at[k] = yaml_where(cl.file(), kv.second, path + "." + k);
  }
}

std::unique_ptr<sim::KvManager> make_kv_manager(const sim::EngineConfig& c) {
  return policy::kv_manager_registry().create(c.kv_manager, "engine.kv_manager",
                                              Params(c.kv_manager_params, "engine.kv_manager"));
}

void parse_engine(const YamlMap& parent, const std::string& key, sim::EngineConfig& c) {
  if (parent.has(key)) apply_engine(parent.map(key, engine_keys()), c);
}

YAML::Node resolved_engine(const sim::EngineConfig& c) {
  YAML::Node e;
  sim::EngineConfig cfg = c;
  KnobWriter all{e};
  cfg.knobs(all);
  if (sim::scheduler_registry().create(cfg.scheduler, "engine.scheduler")->traits().budget_knobs)
    cfg.scheduler_knobs(all);
  write_changed_features(e, cfg);
  if (!c.kv_manager_params.empty()) {
    e["kv_manager"]["name"] = c.kv_manager;
    for (const auto& [k, v] : c.kv_manager_params) e["kv_manager"][k] = v;
  } else if (c.kv_manager != "local") {
    e["kv_manager"] = c.kv_manager;
  }
  return e;
}

}  // namespace isim::exp
