// The fleet parts of summary.json (outputs.h add_fleet_json): the cluster section and the KV
// reuse lost by cause.
#include "experiments/run/outputs.h"

namespace isim::exp {

namespace {

// The DP groups' steps (cluster/lockstep.h): how often cores ran dummy batches and how long
// they waited for the slowest core.
nlohmann::ordered_json lockstep_json(const cluster::LockstepStats& s) {
  nlohmann::ordered_json j;
  j["groups"] = s.groups;
  j["steps"] = s.steps;
  j["core_steps"] = s.core_steps;
  j["dummy_core_steps"] = s.dummy_core_steps;
  j["dummy_fraction"] =
      s.core_steps > 0 ? static_cast<double>(s.dummy_core_steps) / s.core_steps : 0.0;
  j["core_wait_s"] = s.wait_s;
  j["moe_s"] = s.moe_s;
  j["exposed_comm_s"] = s.exposed_comm_s;
  return j;
}

nlohmann::ordered_json lost_reuse_json(const sim::Counters& c) {
  nlohmann::ordered_json j;
  for (int k = 0; k < sim::kLostCauses; ++k)
    j[sim::lost_cause_name(static_cast<sim::LostCause>(k))] = c.lost_reuse[static_cast<size_t>(k)];
  j["prefix_eviction"] = c.prefix_evicted_tokens;
  j["total"] = c.lost_reuse_total();
  return j;
}

nlohmann::ordered_json tiers_json(const cluster::TierStats& t) {
  nlohmann::ordered_json j;
  j["lookups"] = t.lookups;
  const double n = static_cast<double>(std::max<int64_t>(t.lookups, 1));
  for (int h = 0; h < cluster::kTierHits; ++h)
    j["hit_rate"][cluster::tier_hit_name(h)] =
        static_cast<double>(t.hits[static_cast<size_t>(h)]) / n;
  int64_t lost = 0;
  for (int l = 0; l < cluster::kTierLosses; ++l) {
    j["lost_tokens"][cluster::tier_loss_name(l)] = t.lost_tokens[static_cast<size_t>(l)];
    lost += t.lost_tokens[static_cast<size_t>(l)];
  }
  j["lost_tokens"]["total"] = lost;
  j["demotions"] = {{"node_cpu", t.demotions[0]}, {"pool", t.demotions[1]}};
  j["demoted_tokens"] = {{"node_cpu", t.demoted_tokens[0]}, {"pool", t.demoted_tokens[1]}};
  j["fetches"] = {{"peer_gpu", t.fetches[0]}, {"node_cpu", t.fetches[1]}, {"pool", t.fetches[2]}};
  j["fetched_tokens"] = {{"peer_gpu", t.fetched_tokens[0]},
                         {"node_cpu", t.fetched_tokens[1]},
                         {"pool", t.fetched_tokens[2]}};
  j["recompute_saved_tokens"] = t.recompute_saved();
  for (int l = 0; l < cluster::kTierLinks; ++l)
    j["link_bytes"][cluster::tier_link_name(l)] = t.link_bytes[static_cast<size_t>(l)];
  j["peak_gib"] = {{"node_cpu", t.peak_gib[0]}, {"pool", t.peak_gib[1]}};
  j["fetch_s_mean"] = t.fetch_s_mean;
  j["prefetches"] = t.prefetches;
  j["prefetch_hits"] = t.prefetch_hits;
  j["prefetch_wasted_bytes"] = t.prefetch_wasted_bytes;
  return j;
}

// The known link kinds always (0 when unused: the same results.csv columns in every run),
// then any other kind, and the total.
nlohmann::ordered_json link_bytes_json(const cluster::RunResult& r) {
  nlohmann::ordered_json j;
  double total = 0;
  for (const char* k : {"nvlink", "infiniband", "roce", "pcie"}) j[k] = 0.0;
  for (const auto& [kind, bytes] : r.link_bytes) {
    j[kind] = bytes;
    total += bytes;
  }
  j["total"] = total;
  return j;
}

nlohmann::ordered_json cluster_json(const cluster::RunResult& r, bool per_replica) {
  nlohmann::ordered_json j;
  j["router"] = r.fleet.router;
  if (per_replica)  // results.csv needs the same columns in every row: no per-router facts
    for (const auto& [k, v] : r.router_facts) j["router_" + k] = v;
  j["replicas"] = r.fleet.replicas;
  j["busy_imbalance"] = r.fleet.busy_imbalance;
  j["queued_imbalance"] = r.fleet.queued_imbalance;
  j["migrations"] = r.fleet.migrations;
  // Every KV copy over a link, by kind (prefill transfers, paused-KV moves, tier and peer
  // fetches, host-to-pool cascades), and the role switches (0 without roles).
  j["link_bytes"] = link_bytes_json(r);
  j["role_switches"] = r.disagg.enabled ? r.disagg.role_switches : 0;
  if (r.disagg.enabled) {
    const auto& d = r.disagg;
    auto& x = j["disagg"];
    x["planner"] = d.planner;
    if (per_replica)
      for (const auto& [k, v] : d.planner_facts) x["planner_" + k] = v;
    x["kv_transfers"] = d.transfers;
    x["kv_transfer_bytes"] = d.transfer_bytes;
    x["kv_transfer_s_mean"] = d.transfer_s_mean;
    x["kv_transfer_wait_s_mean"] = d.transfer_wait_s_mean;
    x["role_switches"] = d.role_switches;
    x["switch_dropped_tokens"] = d.switch_dropped_tokens;
    x["switch_moves"] = d.switch_moves;
    x["switch_moved_tokens"] = d.switch_moved_tokens;
    x["switch_kept_tokens"] = d.switch_kept_tokens;
    x["resume_fetches"] = d.resume_fetches;
    x["resume_fetched_tokens"] = d.resume_fetched_tokens;
    x["resume_fetch_bytes"] = d.resume_fetch_bytes;
    x["resume_fetch_s_mean"] = d.resume_fetch_s_mean;
    x["resume_fetch_fallbacks"] = d.resume_fetch_fallbacks;
    x["restarts"] = d.restarts;
    x["restart_paused_tokens"] = d.restart_paused_tokens;
    x["restart_cached_tokens"] = d.restart_cached_tokens;
  }
  if (r.tiers.enabled) j["kv_tiers"] = tiers_json(r.tiers);
  if (r.lockstep.groups > 0) j["lockstep"] = lockstep_json(r.lockstep);
  if (!per_replica) return j;
  auto& per = j["per_replica"];
  per = nlohmann::ordered_json::array();
  for (const auto& x : r.replicas) {
    nlohmann::ordered_json e;
    e["replica"] = x.replica;
    e["group"] = x.group;
    if (r.disagg.enabled) e["role"] = x.role;
    e["admitted"] = x.admitted;
    e["resumed"] = x.resumed_here;
    e["iterations"] = x.counters.iterations;
    e["busy_s"] = sim::to_seconds(x.counters.busy_time);
    e["mean_queued_tokens"] = x.mean_queued_tokens;
    e["prefill_tokens"] = x.counters.prefill_tokens;
    e["decode_tokens"] = x.counters.decode_tokens;
    e["recomputed_tokens"] = x.counters.recomputed_tokens;
    e["preemptions"] = x.counters.preemptions;
    e["lost_kv_reuse_tokens"] = lost_reuse_json(x.counters);
    e["gpu_blocks"] = x.blocks.gpu;
    e["cpu_blocks"] = x.blocks.cpu;
    per.push_back(std::move(e));
  }
  return j;
}

}  // namespace

void add_fleet_json(nlohmann::ordered_json& j, const cluster::RunResult& r, bool per_replica) {
  j["lost_kv_reuse_tokens"] = lost_reuse_json(r.summary.counters);
  j["cluster"] = cluster_json(r, per_replica);
}

}  // namespace isim::exp
