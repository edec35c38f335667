// RunResult: what one simulated run produced, for one replica or a fleet.
//
// Contract:
// - `summary` is over the whole fleet: its counters and waste are the merge of every replica's,
//   its block counts their sums. For a cluster of one it is exactly the replica's.
// - `replicas` has one entry per replica in index order; `fleet` derives from them:
//   load imbalance is max / mean over replicas of busy time and of time-averaged queued
//   prefill tokens (1 = perfectly even; 0 when the mean is 0).
// - `timeseries` is the fleet's (sums over replicas at each sample time); `replica_timeseries`
//   holds every replica's samples (long format: time-major, replica order within a time).
#pragma once

#include <array>
#include <string>
#include <utility>
#include <vector>

#include "cluster/lockstep.h"
#include "sim/executor.h"
#include "sim/metrics.h"
#include "sim/replica_view.h"

namespace isim::cluster {

struct ReplicaSample {
  int32_t replica = 0;
  sim::TimeSample s;
};

struct ReplicaResult {
  int32_t replica = 0;
  std::string group;
  std::string role;  // its role at the end ("mixed" for a fleet without roles)
  sim::Counters counters;
  sim::WasteBreakdown waste;
  sim::BlockCounts blocks;
  int64_t admitted = 0;           // arrivals routed here
  int64_t resumed_here = 0;       // intercept ends resumed here (migrations in included)
  double mean_queued_tokens = 0;  // over the time series samples
};

struct FleetStats {
  std::string router;
  int32_t replicas = 1;
  double busy_imbalance = 0;    // max / mean busy seconds
  double queued_imbalance = 0;  // max / mean of mean queued prefill tokens
  int64_t migrations = 0;       // resumes on another replica than the holder
};

// Disaggregated serving: KV transfers, role switches, and the roles over time.
struct RoleSample {
  double t_s = 0;
  int32_t mixed = 0, prefill = 0, decode = 0, switching = 0;
  int64_t prefill_queued_tokens = 0;  // queued prefill on prefill replicas
  int32_t decode_waiting = 0;         // sessions waiting on decode replicas (their queues and
                                      // transfers not yet started)
};

struct DisaggStats {
  bool enabled = false;
  std::string planner;
  int64_t transfers = 0;
  double transfer_bytes = 0;
  double transfer_s_mean = 0;       // start to landing, per transfer
  double transfer_wait_s_mean = 0;  // prefill end to transfer start (no decode room yet)
  int64_t role_switches = 0;
  int64_t switch_dropped_tokens = 0;  // paused KV dropped by role switches
  int64_t switch_moves = 0;           // paused sessions whose KV a role switch moved
  int64_t switch_moved_tokens = 0;
  int64_t switch_kept_tokens = 0;  // paused KV a move found no room for (kept)
  std::vector<RoleSample> roles;   // one per time-series sample
  std::vector<std::pair<std::string, std::string>> planner_facts;
  // split.resume_kv fetch: resumed turns whose held KV moved to their prefill replica, its
  // tokens, the mean intercept end to landing, and the fetches that fell back to recompute.
  int64_t resume_fetches = 0;
  int64_t resume_fetched_tokens = 0;
  double resume_fetch_bytes = 0;  // not in transfer_bytes (the prefills' transfers)
  double resume_fetch_s_mean = 0;
  int64_t resume_fetch_fallbacks = 0;
  // switching.restart: switches that restarted their worker, and the KV each restart lost
  // (paused sessions' KV, and prefix-cache blocks' tokens).
  int64_t restarts = 0;
  int64_t restart_paused_tokens = 0;
  int64_t restart_cached_tokens = 0;
};

// KV tiers across the fleet (cluster/kv_tiers.h); enabled when a replica's manager uses them.
enum TierHit : int { kHitGpu, kHitPeerGpu, kHitNodeCpu, kHitPool, kHitMiss, kTierHits };
enum TierLoss : int { kLostGpu, kLostNodeCpu, kLostPool, kLostDeclined, kTierLosses };
enum TierLink : int { kLinkPcie, kLinkNvlink, kLinkNetwork, kLinkCascade, kTierLinks };
const char* tier_hit_name(int h);
const char* tier_loss_name(int l);
const char* tier_link_name(int l);

struct TierStats {
  bool enabled = false;
  int64_t lookups = 0;                             // resumes of a session that had computed KV
  std::array<int64_t, kTierHits> hits{};           // where its KV was found (miss: nowhere)
  std::array<int64_t, kTierLosses> lost_tokens{};  // KV given up, by the tier that gave it up
  std::array<int64_t, 2> demotions{}, demoted_tokens{};  // to node_cpu, pool
  std::array<int64_t, 3> fetches{}, fetched_tokens{};    // from peer_gpu, node_cpu, pool
  std::array<double, kTierLinks> link_bytes{};
  std::array<double, 2> peak_gib{};  // node_cpu (the fullest node), pool
  double fetch_s_mean = 0;           // intercept end to landing, per fetch
  // Prefetches (sim/kv_manager.h): tier KV brought back to a paused session's GPU before its
  // intercept ended; hits: its turn started with that KV there; wasted: the bytes of the rest
  // (evicted again, or the session resumed elsewhere).
  int64_t prefetches = 0, prefetch_hits = 0;
  double prefetch_wasted_bytes = 0;
  int64_t recompute_saved() const {
    return fetched_tokens[0] + fetched_tokens[1] + fetched_tokens[2];
  }
};

struct RunResult {
  std::vector<sim::SessionRecord> sessions;
  sim::Summary summary;
  std::vector<sim::TimeSample> timeseries;
  std::vector<ReplicaSample> replica_timeseries;
  std::vector<ReplicaResult> replicas;
  FleetStats fleet;
  std::vector<std::string> skipped;
  int64_t not_started = 0;  // user-phases sessions never started, dropped from `sessions`
  std::vector<std::pair<std::string, std::string>> policy_facts;  // e.g. the estimator
  std::vector<std::pair<std::string, std::string>> router_facts;
  sim::ExecutorReport executor;  // live executors: measured seconds, integrity, token streams
  DisaggStats disagg;
  TierStats tiers;
  LockstepStats lockstep;              // groups == 0: none
  std::vector<sim::TurnRecord> turns;  // completed turns, by (start, session, segment)
  sim::GapArena gaps;                  // their gaps (sim/turn_metrics.h), when kept
  bool gaps_kept = false;
  sim::TokenTallies tallies;  // every completed turn's tokens
  // KV bytes moved by link kind (cluster/transfers.h), in kind order; empty: no links.
  std::vector<std::pair<std::string, double>> link_bytes;
  // With threads > 1 (simulate's `threads`): how the replicas' windows went, or why this fleet
  // ran on one thread (cluster/cluster.h). Not written to the run folder.
  std::string threads_note;
};

}  // namespace isim::cluster
