// global-lru: least recently used first. An idle session's KV was last used when it last ran:
// its pause (or its arrival, for a session that has not run yet). Signals are ignored, so a
// reset's or an ended session's blocks stay cached until pressure evicts them in LRU order.
// Across the replicas of a fleet each replica applies the same order to its own KV; the
// cluster-wide tiers that would make it one global order are not built yet (docs/agent-kv.md).
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

 private:
  static sim::Nanos last_use(const sim::SessionState& s) {
    return std::max(s.arrival, s.pause_start);
  }
};

}  // namespace

void add_kv_manager_global_lru(KvManagerRegistry& reg) {
  reg.add("global-lru", "least recently used idle KV evicted first; signals ignored",
          [](const Params& p) {
            p.done("kv manager 'global-lru'");
            return std::make_unique<GlobalLru>();
          });
}

}  // namespace isim::policy
