// The `engine:` section of an experiment (and of a cluster group's overrides): its keys, their
// checks, and its resolved form.
//
// Contract: `parse_engine(parent, key, c)` applies the map at `key` (when present) onto `c`
// through EngineConfig's knob tables (sim/engine_config.h): every key is checked (unknown keys
// list the valid ones, values name the key and what was expected, numbers their bound) and a
// scheduler or kv manager name must be registered. `resolved_engine(c)` writes the settings as
// config.resolved.yaml shows them (the token-budget knobs only for a scheduler whose traits read
// them, optional features only when set away from their defaults). `engine.kv_manager` is a name or {name, PARAM:
// VALUE, ...}; the manager checks its parameters when the spec is read.
#pragma once

#include <memory>
#include <string>

#include <yaml-cpp/yaml.h>

#include "core/params.h"
#include "core/strict_yaml.h"
#include "sim/engine.h"
#include "sim/kv_manager.h"

namespace isim::exp {

void parse_engine(const YamlMap& parent, const std::string& key, sim::EngineConfig& c);
YAML::Node resolved_engine(const sim::EngineConfig& c);

// `key` of `m`: NAME, or {name: NAME, PARAM: VALUE, ...} (`what`: "router", "planner",
// "kv manager"); the parameters' errors start with the key's path.
void read_named(const YamlMap& m, const std::string& key, const std::string& what,
                std::string& name, Params& params);
// The KV manager `c` names, with its parameters (engine.kv_manager: {name, PARAM: VALUE}).
std::unique_ptr<sim::KvManager> make_kv_manager(const sim::EngineConfig& c);

}  // namespace isim::exp
