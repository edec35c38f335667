// KV tiers across a fleet (issue 15; docs/agent-kv.md): below each replica's GPU, a CPU tier per
// node (shared by the node's replicas) and an optional remote pool (a Mooncake-store-like
// disaggregated cache). The cluster owns them; a replica's KV manager (sim/kv_manager.h) says
// where the KV of an idle session goes when its GPU evicts it, and which entry a full tier gives
// up first.
//
// Contract:
// - An entry is one paused session's KV, whole: `tokens` from the start of its context (the
//   tiers do not deduplicate prefixes shared by several sessions). It belongs to exactly one
//   tier. It counts against the tier's capacity from the moment it is written, and can be read
//   only from `ready` on, when its copy has landed.
// - A tier with capacity 0 is absent. `make_room` gives up entries in the order the callback
//   says (first = first to go) until `bytes` fit; it never gives up the entry being written.
// - Links (bandwidth in GB/s = 1e9 bytes/s, one direction, and a latency per transfer) are per
//   replica: PCIe to its node's CPU tier, and its NIC to the pool and to other nodes; NVLink
//   (cluster/disagg.h, LinksConfig) between replicas of one node. Transfers share a link fairly
//   (cluster/link.h).
// - The fetch rule is Mooncake Conductor's (Qin et al., "Mooncake", FAST 2025): a session's KV
//   elsewhere is pulled when it holds at least `fetch_threshold_tokens` more than the
//   destination has locally and transfer + prefill of the rest beats the local prefill.
// - Times are estimates from the cost model and the links' idle rates; the real transfer then
//   runs on the shared link.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "cluster/link_spec.h"
#include "sim/cost_model.h"
#include "sim/time.h"

namespace isim::cluster {

struct TierSpec {
  double capacity_gib = 0;  // 0: the tier is absent
  LinkSpec link;            // what reaches it from a GPU
  bool operator==(const TierSpec&) const = default;
};

// Defaults, public figures:
// - node CPU: a DGX H200 has 2 TB of system memory for 8 GPUs (NVIDIA DGX H200 datasheet); half
//   of it holds KV. PCIe Gen5 x16 carries 64 GB/s each way (the H200 datasheet's 128 GB/s is
//   both directions); pinned copies reach about 55 GB/s of it.
// - pool: absent unless given. Reached over the GPU's 400 Gb/s NIC (50 GB/s, as the
//   infiniband default), with RDMA setup of about 10 us.
inline TierSpec default_node_cpu() { return {1024, {"pcie", 55.0, 10e-6}}; }
inline TierSpec default_pool() { return {0, {"infiniband", 50.0, 10e-6}}; }

struct KvTiersConfig {
  TierSpec node_cpu = default_node_cpu();
  TierSpec pool = default_pool();
  // Tokens more than the destination's local KV that a source must hold to be worth a pull.
  int64_t fetch_threshold_tokens = 1024;
  bool operator==(const KvTiersConfig&) const = default;
};

enum class TierKind : uint8_t { kNodeCpu = 0, kPool = 1 };
inline constexpr int kTierKinds = 2;
const char* tier_name(TierKind k);

struct TierEntry {
  int32_t session = 0;
  int64_t tokens = 0;
  double bytes = 0;
  sim::Nanos written = 0;  // when it was demoted
  sim::Nanos ready = 0;    // when its copy landed (readable from then)
  int32_t generation = 0;  // the session's context resets when it was written
};

// One tier instance: a node's CPU tier, or the pool.
class TierStore {
 public:
  TierStore(TierKind kind, double capacity_bytes) : kind_(kind), capacity_(capacity_bytes) {}
  TierKind kind() const { return kind_; }
  bool present() const { return capacity_ > 0; }
  double capacity() const { return capacity_; }
  double used() const { return used_; }
  double peak() const { return peak_; }
  // Gives up entries, `first_to_go` order, until `bytes` fit beside what is kept. Returns
  // the entries given up (in that order); false in `fits` if even an empty tier is too small.
  std::vector<TierEntry> make_room(double bytes, bool& fits,
                                   const std::function<bool(const TierEntry&, const TierEntry&)>&
                                       first_to_go);
  void put(const TierEntry& e);  // std::logic_error if it does not fit or is there already
  const TierEntry* find(int32_t session) const;
  TierEntry take(int32_t session);  // removes it (std::logic_error if absent)
  // The copy of `session`'s entry written at `written` landed at t (nothing if that entry has
  // gone: given up or fetched before it landed).
  void mark_ready(int32_t session, sim::Nanos written, sim::Nanos t);
  const std::map<int32_t, TierEntry>& entries() const { return entries_; }

 private:
  TierKind kind_;
  double capacity_;
  double used_ = 0, peak_ = 0;
  std::map<int32_t, TierEntry> entries_;  // by session: deterministic iteration
};

// Prefill time of `tokens` new tokens after `kv_before` cached ones, in chunks of at most
// `chunk` tokens, each an iteration of its own (an idle replica's time to rebuild them).
sim::Nanos prefill_estimate(const sim::CostModel& cm, int64_t kv_before, int64_t tokens,
                            int64_t chunk);
// A lone transfer of `bytes` over `l`: latency + bytes / bandwidth.
sim::Nanos transfer_estimate(const LinkSpec& l, double bytes);

struct FetchCase {
  int64_t local = 0;         // of which the destination holds now
  int64_t remote = 0;        // of which the source holds (from the start)
  sim::Nanos transfer = 0;   // moving the remote tokens to the destination
  sim::Nanos prefill_local = 0;   // prefill of need - local
  sim::Nanos prefill_remote = 0;  // prefill of need - remote
};
// Mooncake's rule: remote - local >= threshold and transfer + prefill_remote < prefill_local.
bool fetch_pays(const FetchCase& c, int64_t threshold_tokens);

}  // namespace isim::cluster
