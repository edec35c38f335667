// The `engine:` section of an experiment (and of a cluster group's overrides): its keys, their
// checks, and its resolved form.
//
// Contract: `parse_engine(parent, key, c)` applies the map at `key` (when present) onto `c`;
// every key is checked (unknown keys list the valid ones, values name the key and what was
// expected) and a scheduler or kv manager name must be registered. `resolved_engine(c)` writes
// the settings as config.resolved.yaml shows them (vLLM v1 knobs only for the vllm-v1 scheduler,
// defaults of optional features left out).
#pragma once

#include <string>

#include <yaml-cpp/yaml.h>

#include "sim/engine.h"
#include "traces/strict_yaml.h"

namespace isim::exp {

void parse_engine(const YamlMap& parent, const std::string& key, sim::EngineConfig& c);
YAML::Node resolved_engine(const sim::EngineConfig& c);

}  // namespace isim::exp
