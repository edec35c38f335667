// KvManager: how a replica treats KV whose worth the agent's context signals tell, and which
// idle KV it gives up first when it needs blocks (issue 15; docs/agent-kv.md). The managers are
// registered by name in policies/kv_managers.h.
//
// Contract:
// - `frees_worthless()`: blocks released that nothing will read again are unhashed at once, so
//   the prefix cache keeps only what may be reused. Worthless means: the part of a context that
//   a reset summarised away (past its `shared` tokens), and an ended session's (ContextEvent
//   kEnd) own blocks past its shareable prefix (the trace's prompt hashes, or the parent chain
//   of a fork), which other sessions may still share. Otherwise such blocks stay cached and
//   age out in LRU order like any released block (vLLM's behaviour). `frees_reset_tail()`
//   (default: frees_worthless()) narrows it: false keeps a reset's discarded tail cached, so a
//   manager may free an ended session's blocks only (Dynamo's session close).
// - `values_shared()`: block position. The blocks a session may share with others (the trace's
//   prompt hashes, or the parent chain of a fork: SessionState::prompt_chain_blocks), and any
//   block two sessions hold at once, stay in the prefix cache after they are released until
//   every other cached block is gone (sim/block_manager.h `value`; LRU within each class).
//   A shared system prompt then outlives a session's own tail. Otherwise: plain LRU.
// - `evict_before(a, b, now)`: among idle sessions holding GPU KV (paused, or waiting with
//   blocks), whether a's KV is dropped before b's when the replica must evict. A strict weak
//   order; the engine breaks ties by trace index, so the choice is deterministic.
// - `observe_intercept(s, duration_s)`: session s's intercept (s.intercept_kind()) ended after
//   `duration_s` (the past); called before s moves on to its next segment.
// - Tiers (cluster/kv_tiers.h): `uses_tiers()` says whether the fleet's lower tiers serve this
//   manager's replica. If so, `demote_to(s, now, cpu, pool)` says where an idle eviction sends
//   paused session s's KV (`cpu`, `pool`: whether that tier exists), a full tier gives up first
//   the entry whose session `evict_before` puts first, and a session's KV elsewhere (a lower
//   tier, or another replica's GPU when it resumes there) is fetched when Mooncake's rule says
//   so. Without tiers, evicted and migrated KV is dropped (today's behaviour).
// - Reload prices: where the fleet has tiers, it gives each replica's manager a `ReloadPricer`
//   (`set_pricer`, kept for the run): what bringing back `tokens` of KV would take on that
//   replica (the fleet's choice, a fetch from the tier it would go to or a recompute) and what
//   they weigh. Without tiers a manager gets none.
// - Prefetch (tiers only): every `prefetch_interval_s()` seconds (0: never, the default) the
//   fleet asks `prefetch_now(s, now, fetch_s)` for each paused session s whose KV sits, landed,
//   in a tier (fetch_s: the estimated fetch time to its replica); true brings it back to that
//   replica's GPU now, when the replica has the room (sessions keep their phase: paused).
// - Past only: a manager sees SessionState's public fields and past-only accessors, the current
//   segment's signals included (what the harness says as the segment starts), never the
//   trace's future.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "sim/session_state.h"
#include "sim/time.h"

namespace isim::sim {

enum class Demote : uint8_t { kDrop, kNodeCpu, kPool };

class ReloadPricer {
 public:
  virtual ~ReloadPricer() = default;
  virtual double reload_s(int64_t tokens) const = 0;  // bringing them back, seconds
  virtual double bytes(int64_t tokens) const = 0;     // their KV, bytes
};

class KvManager {
 public:
  virtual ~KvManager() = default;
  virtual std::string name() const = 0;
  virtual bool frees_worthless() const { return false; }
  virtual bool frees_reset_tail() const { return frees_worthless(); }
  virtual bool evict_before(const SessionState& a, const SessionState& b, Nanos now) const = 0;
  virtual bool values_shared() const { return false; }
  virtual void observe_intercept(const SessionState& /*s*/, double /*duration_s*/) {}
  virtual bool uses_tiers() const { return false; }
  virtual Demote demote_to(const SessionState& /*s*/, Nanos /*now*/, bool /*cpu*/,
                           bool /*pool*/) const {
    return Demote::kDrop;
  }
  virtual std::vector<std::pair<std::string, std::string>> describe() const { return {}; }
  virtual void set_pricer(const ReloadPricer* /*p*/) {}
  virtual double prefetch_interval_s() const { return 0; }
  virtual bool prefetch_now(const SessionState& /*s*/, Nanos /*now*/, double /*fetch_s*/) const {
    return false;
  }
};

// Today's rule, the default: the most recently arrived session's KV goes first (it has the
// least invested in the queue; vLLM's recompute preemption picks the newest request too).
class LocalKvManager final : public KvManager {
 public:
  std::string name() const override { return "local"; }
  bool evict_before(const SessionState& a, const SessionState& b, Nanos) const override {
    return a.arrival > b.arrival;
  }
};

}  // namespace isim::sim
