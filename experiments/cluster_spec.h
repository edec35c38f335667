// The `cluster:` section of an experiment: how many replicas, of what, behind which router.
//
//   cluster:
//     replicas: 4                 # N identical replicas (the experiment's profile and engine)
//     router: session-affinity    # or {name: kv-aware, overlap_weight: 2}
//
//   cluster:
//     replicas:                   # or groups: a heterogeneous fleet
//       - {name: h100, count: 2, profile: h100.yaml, tp: 1, engine: {max_num_seqs: 128}}
//       - {name: a100, count: 4}  # the experiment's profile and engine
//     router: kv-aware
//
// Contract:
// - A spec without `cluster:` is a cluster of one (given == false) and its outputs are exactly
//   the single-replica ones; with it, the outputs gain the fleet parts (per replica, load
//   imbalance, lost KV reuse, replicas.csv).
// - A group's `engine:` overrides the experiment's `engine:` key by key and is checked like it;
//   its `profile` is resolved against the spec's folder; `tp` (GPUs per replica) must equal
//   the profile's model.tp when given, since a profile is measured at one TP.
// - `router` names a registered router (policies/routers.h); its parameters are checked by it.
//   The default is session-affinity.
// - Replicas are numbered in group order: group 0's replicas first.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "sim/engine.h"
#include "traces/params.h"
#include "traces/strict_yaml.h"

namespace isim::exp {

struct ReplicaGroup {
  std::string name;  // "" for `replicas: N`
  int32_t count = 1;
  std::string profile;          // "" = the experiment's
  int32_t tp = 0;               // 0 = the profile's
  sim::EngineConfig engine;     // the experiment's engine with the group's overrides
  YAML::Node engine_overrides;  // as given (for config.resolved.yaml)
};

struct ClusterSpec {
  bool given = false;
  std::vector<ReplicaGroup> groups;
  std::string router = "session-affinity";
  Params router_params{{}, "cluster.router"};

  int32_t replicas() const {
    int32_t n = 0;
    for (const auto& g : groups) n += g.count;
    return groups.empty() ? 1 : n;
  }
};

// Applies the `key` map of `parent` (an `engine:` section) onto a config: the experiment
// reader's, so both check alike.
using EngineReader =
    std::function<void(const YamlMap& parent, const std::string& key, sim::EngineConfig& c)>;

// Reads `root`'s `cluster:` (given == false without one). `engine` is the experiment's engine.
ClusterSpec parse_cluster(const YamlMap& root, const std::string& base_dir,
                          const sim::EngineConfig& engine, const EngineReader& read_engine);
// The section as config.resolved.yaml records it (every default filled in).
YAML::Node resolved_cluster(const ClusterSpec& c);

}  // namespace isim::exp
