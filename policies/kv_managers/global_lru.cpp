// global-lru: least recently used first. An idle session's KV was last used when it last ran:
// its pause (or its arrival, for a session that has not run yet). Signals are ignored, so a
// reset's or an ended session's blocks stay cached until pressure evicts them in LRU order.
// It uses the fleet's tiers (cluster/kv_tiers.h) as one LRU hierarchy: evicted KV goes to the
// node's CPU tier (the pool when the node has none), a full CPU tier sends its least recently
// used entries down to the pool, and a full pool drops its least recently used.
#include <algorithm>

#include "policies/kv_managers.h"

namespace isim::policy {

namespace {

class GlobalLru final : public sim::KvManager {
 public:
  std::string name() const override { return "global-lru"; }
  bool evict_before(const sim::SessionState& a, const sim::SessionState& b,
                    sim::Nanos) const override {
    return last_use(a) < last_use(b);
  }
  bool uses_tiers() const override { return true; }
  sim::Demote demote_to(const sim::SessionState&, sim::Nanos, bool cpu,
                        bool pool) const override {
    return cpu ? sim::Demote::kNodeCpu : pool ? sim::Demote::kPool : sim::Demote::kDrop;
  }

 private:
  static sim::Nanos last_use(const sim::SessionState& s) {
    return std::max(s.arrival, s.pause_start);
  }
};

}  // namespace

void add_kv_manager_global_lru(KvManagerRegistry& reg) {
  reg.add("global-lru", "least recently used idle KV evicted first, one LRU over the KV tiers; signals ignored",
          [](const Params& p) {
            p.done("kv manager 'global-lru'");
            return std::make_unique<GlobalLru>();
          });
}

}  // namespace isim::policy
