// SessionTable: the sessions one replica holds, by handle.
//
// Contract:
// - A handle names a slot from `take` until `free`; freed slots are reused, the most recently
//   freed first, and a free slot holds a SessionState whose idx is -1.
// - `take` sets the session's handle and the replica it was last (and, if never before, first)
//   on; it names nothing else (the prefix cache adopts the session's chain).
// - `check` reads only: each held session knows its handle, 0 <= kv <= context, a running or
//   importing session holds no KV on CPU or dropped, and its recompute causes sum to
//   recompute_left.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/session_state.h"

namespace isim::sim {

class SessionTable {
 public:
  SessionState& operator[](int32_t h) { return slots_[static_cast<size_t>(h)]; }
  const SessionState& operator[](int32_t h) const { return slots_[static_cast<size_t>(h)]; }
  // Every slot, by handle (free ones have idx -1).
  const std::vector<SessionState>& slots() const { return slots_; }
  size_t size() const { return slots_.size(); }
  int32_t take(SessionState&& s, int32_t replica);
  void free(int32_t h);
  void check(int32_t replica) const;

 private:
  friend struct EngineTestAccess;    // tests/cluster/test_invariant_faults.cpp plants faults
  std::vector<SessionState> slots_;  // by handle
  std::vector<int32_t> free_slots_;  // handles to reuse, most recently freed last
};

}  // namespace isim::sim
