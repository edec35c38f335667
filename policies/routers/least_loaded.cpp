// least-loaded: the replica with the fewest outstanding tokens, queued prefill plus running
// decode sequences, as each replica publishes them (ReplicaLoad). This is the load signal of
// Splitwise's and llm-d's load-aware scorers; it ignores where a session's KV is.
#include "policies/routers.h"

namespace isim::policy {

namespace {

class LeastLoaded final : public cluster::Router {
 public:
  std::string name() const override { return "least-loaded"; }
  int32_t route(const cluster::RouteRequest&, const cluster::ClusterView& v) override {
    return v.least_outstanding();
  }
};

}  // namespace

void add_router_least_loaded(cluster::RouterRegistry& reg) {
  reg.add("least-loaded",
          "fewest outstanding tokens: queued prefill + running decodes (load-aware scorers)",
          [](const Params& p) {
            p.done("router 'least-loaded'");
            return std::make_unique<LeastLoaded>();
          });
}

}  // namespace isim::policy
