// LRU over the same GPU/CPU tiers as Pensieve (the baseline Pensieve compares against): the
// least recently active conversation loses all of its chunks (leading first, as the tiers
// require) before the next one loses any.
#include "policies/tiered_cache.h"

namespace isim::policy {

namespace {

class Lru final : public TieredCache {
 public:
  using TieredCache::TieredCache;
  std::string name() const override { return "lru"; }

  double value(const sim::ReplicaView&, const sim::SessionState&, int64_t,
               double idle_s) const override {
    return -idle_s;
  }
};

}  // namespace

void add_policy_lru(PolicyRegistry& reg) {
  reg.add("lru", "the GPU/CPU tiers of pensieve, evicting least recently used conversations first",
          [](const PolicyParams& p) { return std::make_unique<Lru>(parse_tier_params("lru", p)); });
}

}  // namespace isim::policy
