// oracle-belady: the bound, not a policy a server could run. It reads each session's future
// through sim/oracle.h (Oracle::next_use_s), the one door, and nothing else in the policies may.
// - Eviction order among idle sessions holding GPU KV: Belady's MIN rule, the KV whose next use
//   is farthest in the future goes first (a session that will never resume before any other;
//   a waiting session's next use is now). Ties: the newest arrival first.
// - Tiers (cluster/kv_tiers.h): KV that will be used again goes to the nearest tier there is
//   (the node's CPU tier, else the pool); KV that will never be used again is dropped. A full
//   tier gives up first what is used farthest ahead (the same order), so across the hierarchy
//   what returns soonest stays nearest: a full CPU tier sends its farthest entries down to the
//   pool, a full pool drops its farthest.
// - Like agent-aware, worthless blocks (a reset's discarded tail, an ended subagent's own
//   blocks) are unhashed at once and shared prefixes are kept longest: knowing the future, the
//   bound does at least what the signals allow.
// No parameters.
#include <memory>

#include "policies/kv_managers.h"
#include "sim/oracle.h"

namespace isim::policy {

namespace {

class OracleBelady final : public sim::KvManager {
 public:
  std::string name() const override { return "oracle-belady"; }
  bool frees_worthless() const override { return true; }
  bool values_shared() const override { return true; }
  bool evict_before(const sim::SessionState& a, const sim::SessionState& b,
                    sim::Nanos now) const override {
    const double na = sim::Oracle::next_use_s(a, now), nb = sim::Oracle::next_use_s(b, now);
    if (na != nb) return na > nb;
    return a.arrival > b.arrival;
  }
  bool uses_tiers() const override { return true; }
  sim::Demote demote_to(const sim::SessionState& s, sim::Nanos now, bool cpu,
                        bool pool) const override {
    if (sim::Oracle::next_use_s(s, now) == std::numeric_limits<double>::infinity())
      return sim::Demote::kDrop;
    return cpu ? sim::Demote::kNodeCpu : pool ? sim::Demote::kPool : sim::Demote::kDrop;
  }
};

}  // namespace

void add_kv_manager_oracle_belady(KvManagerRegistry& reg) {
  reg.add("oracle-belady",
          "oracle bound (reads the future through sim/oracle.h): evicts the idle KV used "
          "farthest ahead (Belady), keeps what returns soonest in the nearest tier",
          [](const Params& p) {
            p.done("kv manager 'oracle-belady'");
            return std::make_unique<OracleBelady>();
          });
}

}  // namespace isim::policy
