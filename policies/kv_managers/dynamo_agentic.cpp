// dynamo-agentic: a baseline reproducing what NVIDIA Dynamo offers agentic workloads
// (docs/agent-kv.md, "The Dynamo-agentic baseline", lists each point's source and deviation).
// Put it behind the `session-affinity` router: Dynamo's sticky sessions bind an agent session
// to the worker that holds its KV (the router, not this manager, does that). This manager is
// the worker's side:
// - CPU offload: KV evicted from the GPU goes to the node's CPU tier (KVBM's host tier, G2),
//   and is onboarded back when the session resumes, by the fleet's fetch rule. No pool: KVBM's
//   disk and object tiers are not modelled; without a CPU tier evicted KV is dropped. A full
//   CPU tier gives up entries in the order below.
// - Eviction by the request's priority hint (nvext agent_hints priority; here the trace's
//   retention hint in force, policies/kv_managers/hints.h): the lowest priority first, then
//   least recently used (an idle session was last used at its pause, or its arrival).
// - A subagent's KV is freed when it closes (its last segment's kEnd context event: Dynamo's
//   session close): its own blocks past the prefix it shares are unhashed at once. A reset's
//   discarded tail is not (Dynamo has no compaction signal): it ages out of the prefix cache.
// - No look-ahead: no tool-wait history, no prefetch, no block-position value (plain LRU
//   prefix cache, as vLLM's).
// Parameters: default_priority (0..100, default 50: the priority of a request without a hint).
#include <algorithm>
#include <memory>

#include "policies/kv_managers.h"
#include "policies/kv_managers/hints.h"

namespace isim::policy {

namespace {

class DynamoAgentic final : public sim::KvManager {
 public:
  explicit DynamoAgentic(int32_t default_priority) : default_priority_(default_priority) {}
  std::string name() const override { return "dynamo-agentic"; }
  bool frees_worthless() const override { return true; }
  bool frees_reset_tail() const override { return false; }
  bool evict_before(const sim::SessionState& a, const sim::SessionState& b,
                    sim::Nanos now) const override {
    const int32_t pa = active_priority(a, now, default_priority_);
    const int32_t pb = active_priority(b, now, default_priority_);
    if (pa != pb) return pa < pb;
    return last_use(a) < last_use(b);
  }
  bool uses_tiers() const override { return true; }
  sim::Demote demote_to(const sim::SessionState&, sim::Nanos, bool cpu, bool) const override {
    return cpu ? sim::Demote::kNodeCpu : sim::Demote::kDrop;
  }
  std::vector<std::pair<std::string, std::string>> describe() const override {
    return {{"default_priority", std::to_string(default_priority_)}};
  }

 private:
  static sim::Nanos last_use(const sim::SessionState& s) {
    return std::max(s.arrival, s.pause_start);
  }
  int32_t default_priority_;
};

}  // namespace

void add_kv_manager_dynamo_agentic(KvManagerRegistry& reg) {
  reg.add("dynamo-agentic",
          "Dynamo's agentic baseline (use with session-affinity): CPU offload of evicted KV, "
          "evicts by priority hint then LRU, frees a subagent's KV when it closes; no look-ahead",
          [](const Params& p) {
            const auto prio = static_cast<int32_t>(
                p.get<int64_t>("default_priority", 50, in(0, 100),
                               "priority of a segment that gives none (Dynamo's 0..100)"));
            p.done("kv manager 'dynamo-agentic'");
            return std::make_unique<DynamoAgentic>(prio);
          });
}

}  // namespace isim::policy
