// Tiers: the fleet's KV tiers in a run (cluster/kv_tiers.h has the stores and the rules), for
// replicas whose KV manager uses them: the stores and the fetches waiting for room. Their
// copies travel over cluster/transfers.h.
//
// Contract:
// - An idle eviction of a paused session (`evicting`) demotes its KV to the node's CPU tier or
//   the pool as the manager says (or drops it, counted as lost); a store makes room in the
//   manager's eviction order, a node's CPU tier sending what it gives up down to the pool. The
//   entry is ready once its copy lands.
// - At an intercept's end the router sees what each replica would fetch (`plan_fetch`, through
//   ClusterView::reachable_kv_tokens), and the KV comes back from a tier, or from the holder's
//   GPU when the session resumes elsewhere, when Mooncake's rule says so
//   (`resume_with_tiers`). The turn starts when it lands; a tier fetch without room waits
//   (FIFO, `pump_fetches` after each instant's events), a peer fetch without room resumes on
//   the holder. Prefill estimates run on copies of the replicas' cost models, so that the
//   run's own counters see the iterations only.
// - Reload prices: each replica's KV manager gets a sim::ReloadPricer for the run: bringing back
//   `tokens` costs the cheaper of a recompute (the prefill estimate) and a fetch over the link
//   to the nearest tier present (the node's CPU tier, else the pool; none: recompute).
// - Prefetch (tier_prefetch.cpp): where a replica's manager asks for it
//   (KvManager::prefetch_interval_s > 0, the smallest across the fleet sets the period), a
//   periodic check offers the manager each paused session whose KV sits, landed, in a tier its
//   replica reaches. A yes copies it back to that replica's GPU when the replica has the blocks
//   free beyond what its queued and running work needs (the prefill still to do, and a block of
//   growth per decoding session; nothing is evicted for it), no fetch waits for room there,
//   and it has neither evicted idle KV nor preempted since the previous check (the run's
//   start, for the first). The session stays paused, with its KV. If its intercept ends while
//   the copy is in flight, it resumes when the copy lands. `prefetch_hits`: its next turn started
//   with that KV there; the bytes of the others are `prefetch_wasted_bytes` (evicted again, or it
//   resumed elsewhere).
// - `check` (the global invariant): an entry's session waits, paused and holding no KV, on a
//   replica; no store holds more than its capacity.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "cluster/disagg.h"
#include "cluster/fleet.h"
#include "cluster/kv_tiers.h"
#include "cluster/run_result.h"
#include "cluster/transfers.h"

namespace isim::cluster {

// Where a resumed session's KV would come from if it ran on a replica.
struct FetchPlan {
  enum Source : uint8_t { kNone, kPeer, kNodeCpu, kPool } source = kNone;
  int64_t tokens = 0;   // KV it starts the turn with (local, or fetched)
  sim::Nanos cost = 0;  // estimated transfer + prefill of the rest
};

class Tiers final : public TransferClient {
 public:
  // Whether any replica's KV manager uses tiers (else a run has no Tiers).
  static bool used(const Fleet& f);
  // The fleet's Transfers must exist: the tiers add three links per replica to it.
  Tiers(Fleet& f, const KvTiersConfig& cfg, const LinksConfig& links);
  Tiers(const Tiers&) = delete;
  Tiers& operator=(const Tiers&) = delete;

  void evicting(int32_t r, const sim::SessionState& s);
  FetchPlan plan_fetch(const RouteRequest& q, int32_t r) const;
  // After routing a resume to r: fetches its KV (true: the turn starts when it lands, or it
  // resumed on its holder) or accounts for what is lost (false: resume as without tiers).
  bool resume_with_tiers(const RouteRequest& q, int32_t r, double intercept_s, sim::Nanos ended_at);
  void pump_fetches();
  void landed(const KvMove& m) override;
  // Prefetch: the periodic check (false: the run is over, no next one); whether session i's
  // prefetch is in flight; its intercept ended at `ended_at` while it was.
  bool prefetch_check();
  bool prefetching(int32_t i) const { return prefetch_flight_.count(i) > 0; }
  void resume_on_landing(int32_t i, sim::Nanos ended_at) { prefetch_flight_[i].resume = ended_at; }
  void check() const;
  void fill(RunResult& r) const;

 private:
  // A tier fetch waiting for room on its destination; the entry left its tier when asked.
  struct PendingFetch {
    int32_t session = 0;
    int32_t dst = 0;
    TierKind tier = TierKind::kNodeCpu;
    int64_t tokens = 0;
    double intercept_s = 0;
    sim::Nanos ended_at = 0;
  };
  void demote(int32_t r, const sim::SessionState& s, sim::Demote to);
  void store_entry(TierStore& store, const TierEntry& e, const sim::KvManager& m);
  bool fetch_peer(const RouteRequest& q, int32_t r, const FetchPlan& p, double intercept_s,
                  sim::Nanos ended_at);
  void fetch_tier(const RouteRequest& q, int32_t r, const FetchPlan& p, double intercept_s,
                  sim::Nanos ended_at);
  bool start_fetch(const PendingFetch& f);
  // Starts a copy on link k (0: PCIe, 1: NVLink, 2: NIC) of replica r.
  void start_copy(int32_t r, int k, double bytes, const KvMove& c);
  sim::Nanos prefill_cost(const sim::Engine& dst, int64_t kv, int64_t total) const;
  TierStore& node_of(int32_t r) { return nodes_[static_cast<size_t>(r / per_node_)]; }
  void set_up_prices_and_prefetch();  // from the constructor
  bool try_prefetch(TierStore& store, const TierEntry& e);
  void prefetch_landed(const KvMove& c);
  // A resumed or evicted session that had been prefetched: a hit, or wasted bytes.
  void prefetch_settled(int32_t i, bool hit);
  class Pricer;
  class PrefetchTimer;
  struct Flight {
    double bytes = 0;
    sim::Nanos resume = -1;  // its intercept ended then, during the copy (-1: not yet)
  };

  Fleet& f_;
  KvTiersConfig cfg_;
  int32_t per_node_ = 8;
  LinkSpec nvlink_, network_;
  std::vector<TierStore> nodes_;  // one CPU tier per node
  TierStore pool_{TierKind::kPool, 0};
  int32_t link0_ =
      0;  // three links per replica from here: [3r] PCIe, [3r + 1] NVLink, [3r + 2] NIC
  std::deque<PendingFetch> pending_;
  TierStats stats_;
  double fetch_s_sum_ = 0;
  // Prefill estimates by (cost model, kv before, tokens, chunk): a resume asks them of every
  // replica, and a homogeneous fleet asks the same ones. Cleared when it grows large.
  mutable std::map<std::tuple<const sim::CostModel*, int64_t, int64_t, int64_t>, sim::Nanos>
      prefill_memo_;
  // The estimates run on copies of the replicas' cost models, so that they leave the run's own
  // counters (profile extrapolations) as the iterations alone make them.
  mutable std::map<const sim::CostModel*, std::unique_ptr<sim::CostModel>> estimators_;
  std::vector<std::unique_ptr<sim::ReloadPricer>> pricers_;  // one per replica
  std::unique_ptr<Component> prefetch_timer_;                // null: no manager prefetches
  std::map<int32_t, Flight> prefetch_flight_;                // by session: copies in flight
  std::map<int32_t, double> prefetched_;  // by session: landed, bytes, turn not started
  std::vector<int64_t> pressed_;  // by replica: idle evictions + preemptions at the last check
};

}  // namespace isim::cluster
