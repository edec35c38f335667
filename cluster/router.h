// Router: places each arriving session, and each session whose intercept ended, on a replica.
//
// Contract:
// - `route(request, view)` returns the index of an eligible replica (ClusterView::eligible);
//   anything else is a std::logic_error raised by the cluster.
// - A router sees the fleet only through the read-only ClusterView and the request, which
//   carry the past and present: loads as the replicas publish them, what their prefix caches
//   hold, where a resumed session's KV is. Never a session's future.
// - Deterministic: equal inputs (and equal `seed` parameters) give equal placements.
// - Registered by name (policies/routers.h); adding one is one file plus one registration line.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/registry.h"
#include "sim/replica_view.h"
#include "traces/session.h"

namespace isim {
class Params;  // core/params.h
}  // namespace isim

namespace isim::cluster {

struct RouteRequest {
  int32_t session = 0;            // its index in the trace
  bool resume = false;            // an intercept ended (false: a new arrival)
  int32_t holder = -1;            // resume: the replica that holds its KV (-1: none)
  int64_t holder_kv_tokens = 0;   // resume: KV tokens the holder keeps for it (GPU or CPU)
  int64_t holder_gpu_blocks = 0;  // resume: of which on the holder's GPU, in blocks
  int64_t context_tokens = 0;     // tokens the session needs in KV to continue (its prompt, or
                                  // its context plus what the intercept returned)
  bool kv_arrives = false;        // a decode placement: its KV arrives over a link, so nothing
                                  // is prefilled where it lands
};

class ClusterView {
 public:
  virtual ~ClusterView() = default;
  virtual int32_t replicas() const = 0;
  virtual const sim::ReplicaView& replica(int32_t r) const = 0;
  // The requested session could ever run on replica r (its capacity and scheduler allow it).
  virtual bool eligible(int32_t r) const = 0;
  // The requested session's prompt as content hashes in replica r's block size (empty when
  // the trace gives no prefix hashes).
  virtual const std::vector<uint64_t>& prefix_chain(int32_t r) const = 0;
  // Where a resumed session's KV is, as the KV manager knows it: the tokens of it that replica
  // r would start the turn with, its holder's own or what r would fetch from another replica or
  // a lower tier (cluster/kv_tiers.h). 0 for a new arrival.
  virtual int64_t reachable_kv_tokens(int32_t r) const = 0;
  // The eligible replica with the fewest outstanding tokens (ReplicaLoad::outstanding_tokens),
  // the lowest index among equals; -1 when none is eligible. This default scans every replica;
  // a view may answer the same from an index it keeps.
  virtual int32_t least_outstanding() const;
};

class Router {
 public:
  virtual ~Router() = default;
  virtual std::string name() const = 0;
  virtual int32_t route(const RouteRequest& q, const ClusterView& v) = 0;
  // Facts for the run's provenance (e.g. {"seed", "7"}).
  virtual std::vector<std::pair<std::string, std::string>> describe() const { return {}; }
};

using RouterRegistry = Registry<Router, const Params&>;

}  // namespace isim::cluster
