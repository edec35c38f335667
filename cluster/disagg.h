// Disaggregated serving: the settings of roles, KV links, the prefill split and role switching,
// as the experiment's `cluster:` section gives them (experiments/spec/cluster_spec.h reads them).
//
// Contract:
// - `enabled` is false for a fleet without roles: every replica is mixed, nothing transfers,
//   and the outputs are exactly those of the fleet before disaggregation existed.
// - `roles` has one entry per replica (replica order) when enabled; at least one prefill and one
//   decode replica, or none of either (all mixed, a planner may then create them).
// - Links are per source replica and kind: a transfer uses the egress link of the replica that
//   sends, NVLink when both replicas are on one node (`replicas_per_node` consecutive replicas
//   form a node), the inter-node link otherwise. Transfers on one link share its bandwidth
//   fairly (cluster/link.h). Default figures are public, cited where they are set.
// - `transfer`: "whole" (the KV moves after the prefill's last chunk) or "layer" (it streams
//   layer by layer during the last prefill iteration; the decode replica may start once the
//   last layer lands).
// - The split: a new session, or a resumed turn, goes to a prefill replica when its uncached
//   input exceeds `threshold_tokens` ("threshold", llm-d's rule) or always ("always"); else it
//   is served where it is (a decode or mixed replica prefills it locally).
// - `resume_kv`: what a resumed turn sent to a prefill replica does with the KV its holder kept.
//   "fetch" (default): the KV moves over the holder's link to the prefill replica (NVLink within
//   a node, the inter-node link otherwise; both ends hold its blocks in flight), the turn starts
//   when it lands (the wait counts in its TTFT) and only what was not held is prefilled; when
//   the prefill replica has no room (or the KV is not on the holder's GPU) it falls back to
//   "recompute", counted. "recompute" (the ablation): the holder's KV is dropped (lost reuse,
//   cause migration) and the prefill replica recomputes it. A fleet with KV tiers
//   (cluster/tiers.h) decides by the tiers' rule instead.
// - Switching: a replica leaving its role first drains (drain_first) or keeps serving the work
//   it holds in the old role (zero-downtime), is unavailable for `cost_s`, then takes the new
//   role. KV it holds for paused sessions is kept or dropped (`paused_kv`), and counted.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cluster/kv_tiers.h"
#include "cluster/link_spec.h"
#include "cluster/planner.h"
#include "core/params.h"

namespace isim::cluster {

struct LinksConfig {
  int32_t replicas_per_node = 8;
  LinkSpec intra_node = default_nvlink();
  LinkSpec inter_node = default_infiniband();
  std::string transfer = "whole";  // or "layer"
};

struct SplitConfig {
  std::string mode = "always";  // or "threshold"
  int64_t threshold_tokens = 0;
  std::string resume_kv = "fetch";  // or "recompute"
};

struct SwitchConfig {
  double cost_s = 0;  // the "zero-downtime, same parallel mapping" case
  bool drain_first = false;
  // KV held for paused sessions by a replica that stops decoding: "keep", "drop" (lost
  // reuse, cause role_switch) or "move" (over a link to a decode replica with room).
  std::string paused_kv = "keep";
  // A worker restart, as Dynamo scales a pool (drain, restart, load the model again): the
  // switch drains the replica (restart implies drain_first), then the worker is down for
  // `cost_s` and loses ALL its KV: its paused sessions' KV is dropped (lost reuse, cause
  // role_switch; paused_kv does not apply) and its prefix cache emptied, both counted.
  bool restart = false;
};

struct DisaggConfig {
  bool enabled = false;
  std::vector<Role> roles;  // by replica
  LinksConfig links;
  SplitConfig split;
  SwitchConfig switching;
  std::string planner = "static";
  Params planner_params{{}, "cluster.planner"};
  // The fleet's KV tiers (cluster/kv_tiers.h), used whenever a replica's KV manager uses
  // them, disaggregated or not; their peer fetches use `links`.
  KvTiersConfig tiers;
};

}  // namespace isim::cluster
