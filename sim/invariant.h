// The failure every replica part's invariant check throws, and the names its messages use.
//
// Contract: `invariant_fail` throws std::logic_error("invariant (replica R): ...") and never
// returns; the parts' checks (SessionTable, ReplicaQueues, KvResidency, WasteMeter) only read
// state and call it at their first fault.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "sim/session_state.h"

namespace isim::sim {

[[noreturn]] inline void invariant_fail(int32_t replica, const std::string& m) {
  throw std::logic_error(fmt::format("invariant (replica {}): {}", replica, m));
}

inline const char* phase_name(Phase p) {
  static const char* names[kPhases] = {"pending",   "waiting",   "running",  "paused", "swapped",
                                       "exporting", "importing", "finished", "skipped"};
  return names[static_cast<size_t>(p)];
}

}  // namespace isim::sim
