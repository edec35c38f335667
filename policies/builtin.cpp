#include "policies/builtin.h"

namespace isim::policy {

void expect_no_params(const std::string& policy, const PolicyParams& p) {
  p.done("policy '" + policy + "'");
}

const PolicyRegistry& policy_registry() {
  static const PolicyRegistry r = [] {
    PolicyRegistry reg("policy");
    reg.add("discard", "free all KV on pause; recompute on resume at the back of the queue (vLLM)",
            make_discard);
    reg.add("improved-discard",
            "free all KV on pause; recompute on resume in original arrival order",
            make_improved_discard);
    reg.add("preserve", "keep all KV on the GPU through the intercept", make_preserve);
    reg.add("swap",
            "copy all KV to CPU synchronously on pause and back on resume (iteration stalls)",
            make_swap);
    reg.add("min-waste",
            "InferCept: per iteration preserve, pipelined swap or chunked discard by least GPU "
            "memory waste (estimator=oracle|elapsed|history)",
            make_min_waste);
    reg.add("pensieve",
            "Pensieve: conversation KV cached in GPU/CPU tiers; evict lowest Cost(position) / "
            "idle-time chunks first, leading chunks recomputed",
            make_pensieve);
    reg.add("lru",
            "the GPU/CPU tiers of pensieve, evicting least recently used conversations first",
            make_lru);
    return reg;
  }();
  return r;
}

}  // namespace isim::policy
