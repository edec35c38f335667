// The `cluster:` section of an experiment: how many replicas, of what, behind which router,
// and, for prefill/decode disaggregation, their roles, the KV links, the split rule, role
// switching and the role planner.
//
//   cluster:
//     replicas: 4                 # N identical replicas (the experiment's profile and engine)
//     router: session-affinity    # or {name: kv-aware, overlap_weight: 2}
//
//   cluster:
//     replicas:                   # or groups: a heterogeneous fleet
//       - {name: h100, count: 2, profile: h100.yaml, tp: 1, engine: {max_num_seqs: 128}}
//       - {name: a100, count: 4, role: decode}   # role: prefill, decode or mixed (default)
//       - {name: kimi, count: 2, dp: 32, ep: true, ep_overlap: 0, expert_skew: 1}
//                                 # 2 DP/EP groups of 32 engine cores (cluster/lockstep.h)
//     router: kv-aware
//
//   cluster:                      # disaggregated: every key below but replicas is optional
//     replicas: 16
//     roles: {prefill: 4, decode: 12}   # or "4:12"; or {prefill: 2, decode: 12, mixed: 2}
//     links:
//       replicas_per_node: 8
//       intra_node: {kind: nvlink, gbps: 450, latency_us: 3}
//       inter_node: {kind: infiniband, gbps: 50, latency_us: 10}
//       transfer: whole                   # or layer
//     split: {mode: threshold, threshold_tokens: 512}   # or `split: always` (the default)
//     switching: {cost_s: 0, drain_first: false, paused_kv: keep}   # or drop, move
//     planner: static             # or {name: dynamo-threshold, PARAM: VALUE, ...}
//
//   cluster:                      # KV tiers (cluster/kv_tiers.h), for managers that use them
//     replicas: 8
//     kv_tiers:
//       node_cpu: {capacity_gib: 1024, gbps: 55, latency_us: 10}   # per node, 0: none
//       pool: {capacity_gib: 0, gbps: 50, latency_us: 10}          # 0: no pool
//       fetch_threshold_tokens: 1024
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
// - Replicas are numbered in group order: group 0's replicas first. A group with `dp` D has
//   count x D engine cores, each a replica to the router, a DP group's cores consecutive.
//   On a MoE model, a group with dp > 1 or ep steps in lockstep (cluster/lockstep.h) over
//   `links` (replicas_per_node cores per NVLink domain); on a dense model its cores are
//   independent replicas and ep is an error. Replicas (count x dp over the groups) <= kMaxEngines,
//   "cluster.replicas: must be <= 65536 (WHY)"; dp <= 1024; ep_overlap in [0, 1]; expert_skew in
//   [1, 64]; with ep the profile's experts must divide over dp x tp ranks (checked when the
//   profile is loaded). Lockstep groups in a disaggregated fleet are refused.
// - Roles come from `roles:` or from the groups' `role:`, never both. `roles:` counts assign
//   roles in replica order: the prefill replicas first, then decode, then mixed; prefill +
//   decode + mixed (each >= 0, absent = 0) must equal the replica count. "P:D" is
//   {prefill: P, decode: D}; `mixed` is every replica mixed. A fleet with any prefill or
//   decode replica is disaggregated (disagg.enabled) and needs at least one of each.
// - links, split and switching are checked whenever given, and used (and written to
//   config.resolved.yaml) only by a disaggregated fleet; every default is in cluster/disagg.h.
//   A split map with threshold_tokens and no mode is mode threshold; threshold_tokens with
//   mode always is an error.
// - kv_tiers is checked whenever given and used by replicas whose KV manager uses tiers
//   (engine.kv_manager: global-lru, agent-aware); config.resolved.yaml then records it and the
//   links (the nodes and peer fetches), every default filled in.
// - `planner` names a registered planner (policies/planners.h), created once here so that an
//   unknown name or parameter fails before any run; its parameters' errors start
//   "cluster.planner.KEY". A planner other than static needs a disaggregated fleet.
// - Every error is "FILE:LINE: cluster.KEY: reason" (parameter errors: "cluster.planner.KEY").
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "cluster/disagg.h"
#include "core/knobs.h"
#include "core/params.h"
#include "core/strict_yaml.h"
#include "sim/engine.h"
#include "sim/profile.h"

namespace isim::exp {

// The most engine cores (replicas x dp) a fleet may hold: each holds ~60 KB before it serves a
// session (its engine, policy, KV manager and pools' bookkeeping; measured: 16,000 replicas of
// the quickstart spec peak at 0.9 GB), so about 4 GB at this limit, before the sessions' own KV
// bookkeeping. cluster.replicas, a group's count x dp and a plan's fleet are checked against it.
inline constexpr int64_t kMaxEngines = int64_t{1} << 16;  // 65,536
inline constexpr const char* kEnginesWhy = "each engine core holds ~60 KB: ~4 GB at the limit";

// `cluster.replicas: N` (N identical replicas) as a knob table, for its bound and `isim list`;
// a group's `count` has the same bound.
struct FleetKnobs {
  int32_t replicas = 1;
  static Bound bound() { return in(1, kMaxEngines).because(kEnginesWhy); }
  template <class Visit>
  void knobs(Visit&& k) {
    k("replicas", replicas, bound(), "an integer >= 1 or a list of replica groups",
      "identical replicas (or a list of groups, each `count` bounded alike)");
  }
};

// A replica group's data and expert parallelism (cluster/lockstep.h), one knob table: each of
// the group's `count` replicas is a group of `dp` engine cores; on a MoE model they step
// together, with ep the experts spread over the group's dp x tp GPUs.
struct ParallelKnobs {
  int32_t dp = 1;
  bool ep = false;
  double ep_overlap = 0;
  double expert_skew = 1;
  template <class Visit>
  void knobs(Visit&& k) {
    k("dp", dp, in(1, 1024), "an integer", "engine cores per group (vLLM data_parallel_size)");
    k("ep", ep, none(), "true or false", "experts spread over dp x tp GPUs (expert parallel)");
    k("ep_overlap", ep_overlap, in(0, 1), "a number", "share of dispatch/combine hidden");
    k("expert_skew", expert_skew, in(1, 64), "a number",
      "hottest EP rank's mean load over the mean (1: uniform)");
  }
};

struct ReplicaGroup {
  std::string name;  // "" for `replicas: N`
  int32_t count = 1;
  std::string profile;          // "" = the experiment's
  int32_t tp = 0;               // 0 = the profile's
  sim::EngineConfig engine;     // the experiment's engine with the group's overrides
  YAML::Node engine_overrides;  // as given (for config.resolved.yaml)
  cluster::Role role = cluster::Role::kMixed;
  bool role_given = false;  // `role:` written in the group
  ParallelKnobs par;
  bool parallel() const { return par.dp > 1 || par.ep; }
  int32_t engines() const { return count * par.dp; }
};

struct ClusterSpec {
  bool given = false;
  std::vector<ReplicaGroup> groups;
  std::string router = "session-affinity";
  Params router_params{{}, "cluster.router"};
  cluster::DisaggConfig disagg;  // enabled when any replica is prefill or decode

  int32_t replicas() const {
    int32_t n = 0;
    for (const auto& g : groups) n += g.engines();
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
// Reads `dp`, `ep`, `ep_overlap` and `expert_skew` of the map `g` into `r`, with the bounds
// above (errors "FILE:LINE: PATH.KEY: ..."); `isim plan` reads its deployments' with it.
void parse_parallel_keys(const YamlMap& g, ReplicaGroup& r);
// InputError when `grp`'s dp/ep cannot run on profile `p`: ep on a dense model (at `ep_at`), a
// MoE profile without moe_us or moe_roofline tables, experts not dividing over dp x tp EP ranks
// (at `dp_at`). `dp_at`/`ep_at` are "FILE[:LINE]: KEY" texts. Nothing for dp 1 without ep.
void check_parallel_profile(const ReplicaGroup& grp, const sim::Profile& p,
                            const std::string& dp_at, const std::string& ep_at);
// The profile a DP/EP group of a MoE model runs on: `p` with model.ep = dp x tp, so that each
// GPU holds its share of the routed experts (whole experts with ep; each expert split dp x tp
// ways without, as vLLM's MoE over DP x TP: the same bytes), which sets its KV capacity. `p`
// unchanged for dp 1 without ep or a dense model; InputError at `at` when the profile was made
// for another ep (model.ep > 1).
sim::Profile group_profile(const ReplicaGroup& grp, sim::Profile p, const std::string& at);
// The section as config.resolved.yaml records it (every default filled in).
YAML::Node resolved_cluster(const ClusterSpec& c);
// Whether a group's KV manager uses the fleet's KV tiers (cluster/kv_tiers.h).
bool uses_tiers(const ClusterSpec& c);

// --- The disaggregation parts, shared with `isim plan` (experiments/spec/cluster_spec_disagg.cpp)
// --

// "P:D" with whole numbers P, D >= 0 as {P, D}; nothing for any other text.
std::optional<std::pair<int32_t, int32_t>> parse_pd_split(const std::string& text);
// The roles of `n` replicas split P:D as a ratio: round(n x P / (P + D)) prefill replicas (at
// least 1, at most n - 1), the rest decode, prefill first. n >= 2, P >= 1, D >= 1.
std::vector<cluster::Role> pd_ratio_roles(int32_t p, int32_t d, int32_t n);
// Reads `links:`, `split:` and `switching:` of the map `cl` into `d` (defaults kept).
void parse_disagg_settings(const YamlMap& cl, cluster::DisaggConfig& d);
// Writes links, split and switching of `d` into `out`, every default filled in.
void resolved_disagg_settings(const cluster::DisaggConfig& d, YAML::Node& out);
// Writes the links into `out` (replicas_per_node, intra_node, inter_node).
void resolved_links(const cluster::LinksConfig& l, YAML::Node& out);
// Writes the links and the KV tiers of `d` into `out` (for a fleet whose managers use tiers).
void resolved_tiers(const cluster::DisaggConfig& d, YAML::Node& out);
// A planner named `name` with `params`: InputError "WHERE: unknown ..." for an unknown name;
// the planner checks its parameters (errors "PARAMS.where.KEY: ...").
std::unique_ptr<cluster::Planner> make_planner(const std::string& name, const Params& params,
                                               const std::string& where);

}  // namespace isim::exp
