// The cluster's KV tiers in a run (cluster/kv_tiers.h): the stores, their links and the copies
// in flight. Private to cluster/.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <tuple>
#include <utility>
#include <vector>

#include "cluster/kv_tiers.h"
#include "cluster/link.h"
#include "cluster/run_result.h"
#include "sim/engine.h"

namespace isim::cluster {

struct TierCopy {
  enum Kind : uint8_t { kDemote, kFetchTier, kFetchPeer } kind = kDemote;
  int32_t session = 0;
  int32_t src = -1, src_h = -1;  // kFetchPeer: the holder
  int32_t dst = -1, dst_h = -1;  // fetches: where it lands
  TierKind tier = TierKind::kNodeCpu;  // kDemote: where it goes; kFetchTier: where it comes from
  int32_t node = 0;                    // the node's CPU tier for kNodeCpu
  sim::Nanos written = 0;              // kDemote: the entry's `written`
  sim::Nanos ended_at = 0;             // fetches: when the intercept ended
  double intercept_s = 0;              // fetches: the intercept's duration
  int64_t tokens = 0;
};

// A fetch's copy: the session's `tokens` landing in handle dst_h of replica dst, the turn
// waiting since `ended_at`.
inline TierCopy fetch_copy(TierCopy::Kind kind, int32_t session, int32_t dst, int32_t dst_h,
                           sim::Nanos ended_at, double intercept_s, int64_t tokens) {
  TierCopy c;
  c.kind = kind;
  c.session = session;
  c.dst = dst;
  c.dst_h = dst_h;
  c.ended_at = ended_at;
  c.intercept_s = intercept_s;
  c.tokens = tokens;
  return c;
}

// Bytes of `kv` tokens of KV on replica e.
inline double kv_bytes(const sim::Engine& e, int64_t kv) {
  return static_cast<double>(kv) * static_cast<double>(e.view().blocks().block_bytes) /
         static_cast<double>(e.view().block_tokens());
}

// Where a resumed session's KV would come from if it ran on a replica.
struct FetchPlan {
  enum Source : uint8_t { kNone, kPeer, kNodeCpu, kPool } source = kNone;
  int64_t tokens = 0;     // KV it starts the turn with (local, or fetched)
  sim::Nanos cost = 0;    // estimated transfer + prefill of the rest
};

// A tier fetch waiting for room on its destination; the entry left its tier when it was asked.
struct PendingFetch {
  int32_t session = 0;
  int32_t dst = 0;
  TierKind tier = TierKind::kNodeCpu;
  int64_t tokens = 0;
  double intercept_s = 0;
  sim::Nanos ended_at = 0;
};

struct TierState {
  KvTiersConfig cfg;
  int32_t per_node = 8;
  LinkSpec nvlink, network;
  std::vector<TierStore> nodes;  // one CPU tier per node
  TierStore pool{TierKind::kPool, 0};
  LinkSet links;  // three per replica: [3r] PCIe, [3r + 1] NVLink, [3r + 2] NIC
  std::map<std::pair<int32_t, int64_t>, TierCopy> copies;  // by (link, transfer id)
  std::deque<PendingFetch> pending;
  TierStats stats;
  double fetch_s_sum = 0;
  // Prefill estimates by (cost model, kv before, tokens, chunk): a resume asks them of every
  // replica, and a homogeneous fleet asks the same ones. Cleared when it grows large.
  std::map<std::tuple<const sim::CostModel*, int64_t, int64_t, int64_t>, sim::Nanos> prefill_memo;
  // The estimates run on copies of the replicas' cost models, so that they leave the run's own
  // counters (profile extrapolations) as the iterations alone make them.
  std::map<const sim::CostModel*, std::unique_ptr<sim::CostModel>> estimators;
};

}  // namespace isim::cluster
