// Cluster::View: the fleet as a router sees it while placing one session. Private to cluster/.
#pragma once

#include <utility>
#include <vector>

#include "cluster/cluster.h"

namespace isim::cluster {

// The fleet as a router sees it while placing one session.
class Cluster::View final : public ClusterView {
 public:
  View(const Cluster& c, const RouteRequest& req)
      : c_(c), req_(req), q_(req.session), src_(c.trace_[static_cast<size_t>(q_)]) {}
  int32_t replicas() const override { return c_.size(); }
  const sim::ReplicaView& replica(int32_t r) const override {
    return c_.engines_[static_cast<size_t>(r)]->view();
  }
  bool eligible(int32_t r) const override {
    if (!c_.mask_.empty() && !c_.mask_[static_cast<size_t>(r)]) return false;
    return c_.fits_all_[static_cast<size_t>(q_)] ||
           c_.engines_[static_cast<size_t>(r)]->never_fits(src_).empty();
  }
  const std::vector<uint64_t>& prefix_chain(int32_t r) const override {
    const int64_t bt = replica(r).block_tokens();
    if (c_.fork_session_ == q_ && c_.fork_block_tokens_ == bt) return c_.fork_chain_;
    for (const auto& [b, chain] : chains_)
      if (b == bt) return chain;
    chains_.emplace_back(bt, sim::prefix_chain(src_, bt));
    return chains_.back().second;
  }
  int64_t reachable_kv_tokens(int32_t r) const override { return c_.reachable_kv(req_, r); }

 private:
  const Cluster& c_;
  const RouteRequest& req_;
  int32_t q_;
  const trace::Session& src_;
  mutable std::vector<std::pair<int64_t, std::vector<uint64_t>>> chains_;
};

}  // namespace isim::cluster
