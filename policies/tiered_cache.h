// TieredCache: the machinery Pensieve (EuroSys 2025) and its LRU baseline share. Conversation
// KV stays cached between turns in GPU and CPU tiers, in chunks (default 32 tokens), and is
// evicted one chunk at a time, lowest retention value first: GPU -> CPU (a pipelined swap)
// ahead of time when free GPU blocks fall under a threshold (default 25%) and on demand when
// the next waiting prefill needs the room, and CPU -> dropped when the CPU tier is full. Dropped
// chunks are always a session's leading ones; its next prefill recomputes only them (a batch at a
// time when they outgrow one), then the new tokens attend to the KV it kept. A share of GPU blocks
// (default 10%) is reserved for running decodes, and restores go through the swap-in budget.
//
// Contract: subclasses define `value(session, chunk position, idle seconds)`; lower is evicted
// first, ties by session index. Parameters (policy: {name: ..., key: value}): chunk_tokens,
// swap_threshold, reserve (fractions in [0, 1)).
#pragma once

#include <string>
#include <vector>

#include "policies/builtin.h"
#include "sim/policy.h"

namespace isim::policy {

struct TierParams {
  int64_t chunk_tokens = 32;
  double swap_threshold = 0.25;
  double reserve = 0.10;
};

// Parses the shared parameters; InputError names `where.key` and lists the valid keys.
TierParams parse_tier_params(const std::string& policy, const PolicyParams& p);

class TieredCache : public sim::Policy {
 public:
  explicit TieredCache(TierParams p) : p_(p) {}
  sim::PauseAction on_pause(const sim::SessionState&, const sim::ReplicaView&) override {
    return sim::PauseAction::kPreserve;
  }
  bool pipelined_swap() const override { return true; }
  double reserved_gpu_fraction() const override { return p_.reserve; }
  std::vector<std::pair<std::string, std::string>> describe() const override;
  void before_iteration(const sim::ReplicaView& e, sim::KvDecisions& d) override;
  bool quiet_before_iteration(const sim::ReplicaView&) const override { return false; }

  // Retention value of the chunk starting at token `pos` of paused session `s`, idle for
  // `idle_s` seconds. Lower values are evicted first.
  virtual double value(const sim::ReplicaView& e, const sim::SessionState& s, int64_t pos,
                       double idle_s) const = 0;
  // The eviction order for `blocks` GPU blocks (or CPU blocks when `from_cpu`), lowest value
  // first, a chunk at a time: (session, blocks) in the order first chosen.
  std::vector<std::pair<int32_t, int64_t>> plan(const sim::ReplicaView& e, int64_t blocks,
                                                bool from_cpu) const;

 protected:
  const TierParams& params() const { return p_; }

 private:
  struct Pick {
    double v;
    int32_t idx;  // trace index: the tie-break
    int32_t h;    // handle on the replica
    int64_t pos;  // token position of the chunk
    bool operator>(const Pick& o) const { return v != o.v ? v > o.v : idx > o.idx; }
  };
  TierParams p_;
};

}  // namespace isim::policy
