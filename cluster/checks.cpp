// The cluster's invariant checks (cluster/checks.h): each replica the events reached, every
// replica, and the fleet's global one (each session in exactly one place, as the ledger says;
// the KV in flight by Transfers::check, the tiers' entries by Tiers::check).
#include "cluster/checks.h"

#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cluster/tiers.h"
#include "cluster/transfers.h"

namespace isim::cluster {

void Checker::check_changed() {
  for (int32_t r : f_.take_changed()) {
    if (!f_.changed(r)) continue;
    f_.engine(r).check_invariants();
    f_.clear_changed(r);
  }
  check_global();
}

void Checker::check_now() const {
  for (int32_t r = 0; r < f_.size(); ++r) f_.engine(r).check_invariants();
  check_global();
}

void Checker::check_global() const {
  auto fail = [](const std::string& m) { throw std::logic_error("global invariant: " + m); };
  const Ledger& ledger = f_.ledger();
  const Transfers* transfers = f_.parts().transfers;
  if (seen_.size() != f_.trace().size()) seen_.assign(f_.trace().size(), 0);
  touched_.clear();
  struct Reset {  // leaves seen_ all zero however the check ends
    std::vector<int32_t>& seen;
    const std::vector<int32_t>& touched;
    ~Reset() {
      for (int32_t i : touched) seen[static_cast<size_t>(i)] = 0;
    }
  } reset{seen_, touched_};
  for (int32_t r = 0; r < f_.size(); ++r) {
    const sim::Engine& e = f_.engine(r);
    for (int32_t h = 0; h < static_cast<int32_t>(e.view().sessions().size()); ++h) {
      const sim::SessionState& s = e.view().session(h);
      if (s.idx < 0) continue;
      if (seen_[static_cast<size_t>(s.idx)]++ == 0) touched_.push_back(s.idx);
      if (seen_[static_cast<size_t>(s.idx)] > 1 && !transfers)
        fail(fmt::format("session {} is on two replicas", s.idx));
      if (s.phase == sim::Phase::kImporting) continue;  // Transfers::check places it
      const Location& at = ledger.where(s.idx);
      if (ledger.status(s.idx) != Status::kOnReplica || at.replica != r || at.handle != h)
        fail(fmt::format("session {} is on replica {} but the ledger places it on {}", s.idx, r,
                         at.replica));
    }
  }
  if (const Tiers* tiers = f_.parts().tiers) tiers->check();
  if (const Lockstep* lockstep = f_.parts().lockstep) lockstep->check();
  if (transfers) transfers->check(seen_, touched_);
  // Every session the ledger places on a replica was seen there exactly once: count those seen,
  // and name a missing one only when the counts differ (a full scan, on failure only).
  int64_t placed_seen = 0;
  for (int32_t i : touched_)
    if (ledger.status(i) == Status::kOnReplica && seen_[static_cast<size_t>(i)] == 1) ++placed_seen;
  if (placed_seen == ledger.on_replica()) return;
  for (size_t i = 0; i < seen_.size(); ++i)
    if (ledger.status(static_cast<int32_t>(i)) == Status::kOnReplica && seen_[i] != 1)
      fail(fmt::format("session {} is lost: the ledger places it on replica {}", i,
                       ledger.where(static_cast<int32_t>(i)).replica));
  fail(fmt::format("the ledger places {} sessions on replicas, the replicas hold {}",
                   ledger.on_replica(), placed_seen));
}

}  // namespace isim::cluster
