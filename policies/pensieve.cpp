// Pensieve (EuroSys 2025): a chunk's retention value is V = Cost(position) / T_idle, where
// Cost is what recomputing the chunk would take at that context position (the profile's
// attention time there, plus the per-token dense cost of the chunk as the constant:
// CostModel::recompute_cost) and T_idle the time since its conversation was last active. The lowest
// V goes first, so idle conversations and their leading (cheapest) chunks are evicted before recent
// and deep ones. With a `linear` profile attention has no cost of its own and Pensieve orders like
// LRU.
#include "policies/tiered_cache.h"

namespace isim::policy {

namespace {

class Pensieve final : public TieredCache {
 public:
  using TieredCache::TieredCache;
  std::string name() const override { return "pensieve"; }

  double value(const sim::ReplicaView& e, const sim::SessionState&, int64_t pos,
               double idle_s) const override {
    const auto cost = e.cost_model().recompute_cost(params().chunk_tokens, pos);
    return static_cast<double>(cost) / idle_s;
  }
};

}  // namespace

void add_policy_pensieve(PolicyRegistry& reg) {
  reg.add("pensieve",
          "Pensieve: conversation KV cached in GPU/CPU tiers; evict lowest Cost(position) / "
          "idle-time chunks first, leading chunks recomputed",
          [](const PolicyParams& p) {
            return std::make_unique<Pensieve>(parse_tier_params("pensieve", p));
          });
}

}  // namespace isim::policy
