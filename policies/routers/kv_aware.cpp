// kv-aware: Dynamo's KV router cost, deterministic (its router temperature 0):
//   cost(r) = overlap_weight x prefill blocks not already cached on r
//           + decode blocks on r if the request lands there (held GPU blocks + its new ones).
// Cached means the prompt's leading blocks in r's prefix cache (the trace's prefix hashes) or,
// for a resumed session, the KV its holder kept for it, or the KV that r would fetch from
// another replica or a lower tier (ClusterView::reachable_kv_tokens). Lowest cost wins, lowest
// index on ties. Parameter: overlap_weight (Dynamo's kv-overlap-score-weight, default 1).
#include <algorithm>

#include "policies/routers.h"
#include "sim/block_manager.h"

namespace isim::policy {

namespace {

class KvAware final : public cluster::Router {
 public:
  explicit KvAware(double w) : w_(w) {}
  std::string name() const override { return "kv-aware"; }
  std::vector<std::pair<std::string, std::string>> describe() const override {
    return {{"overlap_weight", std::to_string(w_)}};
  }
  int32_t route(const cluster::RouteRequest& q, const cluster::ClusterView& v) override {
    int32_t best = -1;
    double best_cost = 0;
    for (int32_t r = 0; r < v.replicas(); ++r) {
      if (!v.eligible(r)) continue;
      const double c = cost(q, v, r);
      if (best < 0 || c < best_cost) {
        best = r;
        best_cost = c;
      }
    }
    return best;
  }

 private:
  double cost(const cluster::RouteRequest& q, const cluster::ClusterView& v, int32_t r) const {
    const sim::ReplicaView& rep = v.replica(r);
    const int64_t bt = rep.block_tokens();
    const int64_t need = sim::blocks_for(q.context_tokens, bt);
    const bool holder = q.resume && r == q.holder;
    // A decode placement prefills nothing: its cost is the decode blocks alone.
    // A resumed session's KV elsewhere that r would fetch rather than recompute counts as
    // cached there (the view asks the KV manager; without tiers only the holder has it).
    const int64_t cached = q.kv_arrives ? need
                           : holder ? std::max(q.holder_kv_tokens, v.reachable_kv_tokens(r)) / bt
                                    : std::max(rep.cached_prefix_blocks(v.prefix_chain(r)),
                                               q.resume ? v.reachable_kv_tokens(r) / bt : 0);
    const int64_t prefill = std::max<int64_t>(need - cached, 0);
    const int64_t held_here = holder ? q.holder_gpu_blocks : 0;
    const int64_t decode = rep.gpu().used() + std::max<int64_t>(need - held_here, 0);
    return w_ * static_cast<double>(prefill) + static_cast<double>(decode);
  }
  double w_;
};

}  // namespace

void add_router_kv_aware(cluster::RouterRegistry& reg) {
  reg.add("kv-aware",
          "Dynamo's KV router: least uncached prefill blocks x overlap_weight + decode blocks",
          [](const Params& p) {
            const double w =
                p.get<double>("overlap_weight", 1.0,
                              in(0, 1e6).because("10^6 blocks outweigh any replica's decode load"),
                              "weight of uncached prefill blocks against decode blocks");
            p.done("router 'kv-aware'");
            return std::make_unique<KvAware>(w);
          });
}

}  // namespace isim::policy
