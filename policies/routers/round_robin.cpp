// round-robin: every placement (arrivals and resumes alike) takes the next eligible replica in
// turn. The default of Dynamo's frontend (--router-mode round_robin) and of most HTTP load
// balancers; it ignores load and where a session's KV is.
#include "policies/routers.h"

namespace isim::policy {

namespace {

class RoundRobin final : public cluster::Router {
 public:
  std::string name() const override { return "round-robin"; }
  int32_t route(const cluster::RouteRequest&, const cluster::ClusterView& v) override {
    for (int32_t k = 0; k < v.replicas(); ++k) {
      const int32_t r = (next_ + k) % v.replicas();
      if (!v.eligible(r)) continue;
      next_ = (r + 1) % v.replicas();
      return r;
    }
    return -1;
  }

 private:
  int32_t next_ = 0;
};

}  // namespace

void add_router_round_robin(cluster::RouterRegistry& reg) {
  reg.add("round-robin", "each placement takes the next replica in turn (Dynamo's default mode)",
          [](const Params& p) {
            p.done("router 'round-robin'");
            return std::make_unique<RoundRobin>();
          });
}

}  // namespace isim::policy
