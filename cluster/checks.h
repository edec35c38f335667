// Checks: which invariants a run checks, and how often, and the fleet's global check.
//
// Contract:
// - From a bool: all of them, after every event, or none (tests pass `true`). `engines`: each
//   replica after each of its iterations; `global`: the fleet after each instant; `each_event`:
//   both after every event and after each instant's iteration starts too (on the replicas the
//   event reached through Fleet::replica since their last check: an engine whose iteration just
//   ended checked itself last thing), so no state goes unchecked. The engines' checks cost
//   O(blocks) each; the global one O(sessions), so `global_only` is the one a large fleet can
//   afford, and `per_iteration` (the CLI's --check-invariants) the cheaper full check.
// - The global check: every session is on exactly one replica or in the cluster (never
//   arrived, skipped, finished) as the ledger says, or its KV is in flight between two replicas
//   or from a tier (Transfers::check); the tiers' entries are consistent (Tiers::check). No KV
//   block has two owners (each engine's own check). `check_now` checks every replica, then the
//   fleet. A failure is a std::logic_error starting "global invariant: ".
#pragma once

#include "cluster/fleet.h"

namespace isim::cluster {

struct Checks {
  bool engines = false, global = false, each_event = false;
  Checks(bool all = false) : engines(all), global(all), each_event(all) {}  // NOLINT: from bool
  static Checks global_only() {
    Checks c;
    c.global = true;
    return c;
  }
  static Checks per_iteration() {
    Checks c(true);
    c.each_event = false;
    return c;
  }
};

class Checker {
 public:
  Checker(Fleet& f, Checks c) : f_(f), global_(c.global), each_(c.each_event) {
    if (each_) f_.track_changes();
  }
  // After an event (and after an instant's own steps): with each_event, the changed replicas
  // and the fleet.
  void after_event() {
    if (each_) check_changed();
  }
  // After an instant's iterations started.
  void after_instant() {
    if (each_)
      check_changed();
    else if (global_)
      check_global();
  }
  void check_global() const;
  void check_now() const;

 private:
  void check_changed();

  Fleet& f_;
  bool global_, each_;
  // check_global's scratch: sessions seen on replicas this check (by trace index, all zero
  // between checks) and which entries it touched, so a check costs O(sessions on replicas).
  mutable std::vector<int32_t> seen_;
  mutable std::vector<int32_t> touched_;
};

}  // namespace isim::cluster
