// RouteView: the fleet as a router sees it while placing one session. Private to cluster/.
//
// Contract:
// - `eligible(r)`: r is in the fleet's current mask (Fleet::set_mask) and the session fits it.
// - `prefix_chain(r)`: the session's prefix hashes at r's block size; a fork being placed sees
//   its parent's chain over the shared prefix (Arrivals::fork_chain).
// - `reachable_kv_tokens(r)`: for a resume, the KV it would start with on r: what the tiers
//   would fetch or keep (Tiers::plan_fetch), or without tiers the holder's KV on the holder.
#pragma once

#include <utility>
#include <vector>

#include "cluster/fleet.h"

namespace isim::cluster {

class RouteView final : public ClusterView {
 public:
  RouteView(const Fleet& f, const RouteRequest& req)
      : f_(f), req_(req), q_(req.session), src_(f.source(q_)) {}
  int32_t replicas() const override { return f_.size(); }
  const sim::ReplicaView& replica(int32_t r) const override { return f_.engine(r).view(); }
  bool eligible(int32_t r) const override;
  const std::vector<uint64_t>& prefix_chain(int32_t r) const override;
  int64_t reachable_kv_tokens(int32_t r) const override;
  // From the fleet's index of loads (Fleet::least_outstanding) when no mask is set and the
  // session fits every replica; otherwise the scan.
  int32_t least_outstanding() const override;

 private:
  const Fleet& f_;
  const RouteRequest& req_;
  int32_t q_;
  const trace::Session& src_;
  mutable std::vector<std::pair<int64_t, std::vector<uint64_t>>> chains_;
};

}  // namespace isim::cluster
