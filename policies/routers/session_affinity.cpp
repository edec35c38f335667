// session-affinity: a resumed session returns to the replica that holds its KV; a new session
// goes least-loaded. Sticky sessions as the vLLM production stack's session router and SGLang's
// router keep them (by a session id); Evolving Infra and InferCept both rely on a session
// resuming where its context is.
#include "policies/routers.h"

namespace isim::policy {

namespace {

class SessionAffinity final : public cluster::Router {
 public:
  std::string name() const override { return "session-affinity"; }
  int32_t route(const cluster::RouteRequest& q, const cluster::ClusterView& v) override {
    if (q.resume && q.holder >= 0 && v.eligible(q.holder)) return q.holder;
    return v.least_outstanding();
  }
};

}  // namespace

void add_router_session_affinity(cluster::RouterRegistry& reg) {
  reg.add("session-affinity",
          "a resumed session returns to the replica holding its KV; new ones go least-loaded",
          [](const Params& p) {
            p.done("router 'session-affinity'");
            return std::make_unique<SessionAffinity>();
          });
}

}  // namespace isim::policy
