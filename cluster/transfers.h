// Transfers: the fleet's links and every KV copy in flight over them, for disaggregation (a
// prefilled session's KV to its decode replica, a paused session's KV off a replica that stopped
// decoding) and for the KV tiers (demotions to a tier, fetches from a tier or a peer's GPU).
//
// Contract:
// - A part adds its links (`add`) when it is built and gets their indices; a copy starts on
//   one link (`start`) and shares it as cluster/link.h models. The part that started it is
//   told when it lands (TransferClient::landed), at the link's event, copies that land at the
//   same event in completion order (ties by start order).
// - One in-flight map and one event type serve every copy, so a link's next change is on the
//   queue at most once (priority kPrioTransfer).
// - `check` (the global invariant): every copy with a destination has its session importing
//   there (fetches: with the copy's tokens), every copy with a source has it exporting there
//   with the same KV (on two replicas), a tier fetch's destination is where the ledger places
//   it; the sessions importing on every replica are exactly the copies' destinations; no
//   session is on two replicas but one in flight.
// Events: kLink (arg: link index).
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "cluster/fleet.h"
#include "cluster/kv_tiers.h"
#include "cluster/link.h"

namespace isim::cluster {

// One copy of a session's KV in flight.
struct KvMove {
  enum Kind : uint8_t {
    kPrefilled,   // disaggregation: a prefilled session to its decode replica
    kPausedMove,  // disaggregation: a paused session off a replica that stopped decoding
    kDemote,      // tiers: to a node's CPU tier or the pool (no replica end)
    kFetchTier,   // tiers: from a tier to the replica that resumes the session
    kFetchPeer,   // tiers: from the holder's GPU to the replica that resumes the session
    kPrefetch,    // tiers: from a tier to a paused session's replica, before its resume
  } kind = kPrefilled;
  int32_t session = 0;
  int32_t src = -1, src_h = -1;  // the exporting end, or -1
  int32_t dst = -1, dst_h = -1;  // the importing end, or -1
  sim::Nanos since = 0;          // disaggregation: prefilled at; fetches: when the intercept ended
  sim::Nanos started_at = 0;     // disaggregation: when the copy started
  TierKind tier = TierKind::kNodeCpu;  // kDemote: where it goes; kFetchTier: where it comes from
  int32_t node = 0;                    // kDemote to a node's CPU tier: the node
  sim::Nanos written = 0;              // kDemote: the entry's `written`
  double intercept_s = 0;              // fetches: the intercept's duration
  int64_t tokens = 0;                  // fetches: the KV landing
};

// Bytes of `kv` tokens of KV on replica e.
inline double kv_bytes(const sim::Engine& e, int64_t kv) {
  return static_cast<double>(kv) * static_cast<double>(e.view().blocks().block_bytes) /
         static_cast<double>(e.view().block_tokens());
}

class TransferClient {
 public:
  virtual ~TransferClient() = default;
  virtual void landed(const KvMove& m) = 0;
};

class Transfers final : public Component {
 public:
  enum Event : int32_t { kLink = 0 };

  explicit Transfers(Fleet& f) : Component(f) {}
  int32_t add(const LinkSpec& spec);  // the new link's index
  const Link& link(int32_t li) const { return links_[li]; }
  void start(int32_t li, double bytes, const KvMove& m, TransferClient& to);
  // Bytes moved by link kind (LinkSpec::kind): every copy `start`ed (a prefilled session's
  // whole KV, the part a layer-wise transfer streamed during the prefill included), plus copies
  // that use no GPU link but are costed by one (`account`: host-to-pool cascades).
  void account(const std::string& kind, double bytes) { bytes_by_kind_[kind] += bytes; }
  const std::map<std::string, double>& bytes_by_kind() const { return bytes_by_kind_; }
  void handle(const sim::Event& ev) override;
  // `seen[i]`: the replicas holding session i; a copy in flight between two counts once after.
  // `touched`: the sessions with seen[i] > 0 (so the check never scans the whole trace).
  void check(std::vector<int32_t>& seen, const std::vector<int32_t>& touched) const;

 private:
  struct InFlight {
    KvMove move;
    TransferClient* to;
  };
  LinkSet links_;
  std::map<std::pair<int32_t, int64_t>, InFlight> moving_;  // by (link, transfer id)
  std::map<std::string, double> bytes_by_kind_;
};

}  // namespace isim::cluster
