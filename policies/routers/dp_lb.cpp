// dp-lb: vLLM's data-parallel load balancer (DPLBAsyncMPClient in vllm/v1/engine/core_client.py):
// the engine core with the lowest 4 x waiting + running requests, lowest index on ties.
// Deviations: the counts are the cores' current ones (vLLM's front end sees counts its
// coordinator publishes every 100 ms, plus its own optimistic increments); a session's waiting
// and swapped turns count as waiting, and a paused session (in a tool call) counts nowhere, as a
// request vLLM has finished.
#include "policies/routers.h"

#include "sim/replica_queues.h"

namespace isim::policy {

namespace {

class DpLoadBalance final : public cluster::Router {
 public:
  std::string name() const override { return "dp-lb"; }
  int32_t route(const cluster::RouteRequest&, const cluster::ClusterView& v) override {
    int32_t best = -1;
    int64_t best_score = 0;
    for (int32_t r = 0; r < v.replicas(); ++r) {
      if (!v.eligible(r)) continue;
      const sim::ReplicaQueues& q = v.replica(r).queues();
      const auto waiting = static_cast<int64_t>(q.waiting().size() + q.swapped().size());
      const auto score = 4 * waiting + static_cast<int64_t>(q.running().size());
      if (best < 0 || score < best_score) {
        best = r;
        best_score = score;
      }
    }
    return best;
  }
};

}  // namespace

void add_router_dp_lb(cluster::RouterRegistry& reg) {
  reg.add("dp-lb", "vLLM's data-parallel balancer: fewest 4 x waiting + running requests",
          [](const Params& p) {
            p.done("router 'dp-lb'");
            return std::make_unique<DpLoadBalance>();
          });
}

}  // namespace isim::policy
