// The cluster's invariant checks (cluster/cluster.h: Checks): each replica the events reached,
// every replica, and the fleet's global one (each session in exactly one place, as the ledger
// says; the KV in flight between replicas or tiers by check_transfers and check_tier_copies).
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cluster/cluster.h"
#include "cluster/disagg_state.h"
#include "cluster/tier_state.h"

namespace isim::cluster {

void Cluster::check_changed() {
  for (size_t r = 0; r < engines_.size(); ++r) {
    if (!changed_[r]) continue;
    engines_[r]->check_invariants();
    changed_[r] = 0;
  }
  check_global();
}

void Cluster::check_now() const {
  for (const auto& e : engines_) e->check_invariants();
  check_global();
}

void Cluster::check_global() const {
  auto fail = [](const std::string& m) { throw std::logic_error("global invariant: " + m); };
  std::vector<int32_t> seen(trace_.size(), 0);
  for (const auto& e : engines_) {
    const int32_t r = e->view().replica();
    for (int32_t h = 0; h < static_cast<int32_t>(e->view().sessions().size()); ++h) {
      const sim::SessionState& s = e->view().session(h);
      if (s.idx < 0) continue;
      if (++seen[static_cast<size_t>(s.idx)] > 1 && !d_ && !t_)
        fail(fmt::format("session {} is on two replicas", s.idx));
      if (s.phase == sim::Phase::kImporting) continue;  // check_transfers places it
      const Location& at = ledger_.where(s.idx);
      if (ledger_.status(s.idx) != Status::kOnReplica || at.replica != r || at.handle != h)
        fail(fmt::format("session {} is on replica {} but the ledger places it on {}", s.idx, r,
                         at.replica));
    }
  }
  size_t tier_importing = 0;
  if (t_) check_tier_copies(seen, tier_importing);
  if (d_) check_transfers(seen, tier_importing);
  for (size_t i = 0; i < trace_.size(); ++i)
    if (ledger_.status(static_cast<int32_t>(i)) == Status::kOnReplica && seen[i] != 1)
      fail(fmt::format("session {} is lost: the ledger places it on replica {}", i,
                       ledger_.where(static_cast<int32_t>(i)).replica));
}

}  // namespace isim::cluster
