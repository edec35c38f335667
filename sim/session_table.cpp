// The replica's session slots and their per-session invariants.
#include "sim/session_table.h"

#include <fmt/format.h>

#include "sim/invariant.h"

namespace isim::sim {

int32_t SessionTable::take(SessionState&& s, int32_t replica) {
  int32_t h;
  if (!free_slots_.empty()) {
    h = free_slots_.back();
    free_slots_.pop_back();
    slots_[static_cast<size_t>(h)] = std::move(s);
  } else {
    h = static_cast<int32_t>(slots_.size());
    slots_.push_back(std::move(s));
  }
  SessionState& t = (*this)[h];
  t.h = h;
  t.m.replica_last = replica;
  if (t.m.replica_first < 0) t.m.replica_first = replica;
  return h;
}

void SessionTable::free(int32_t h) {
  slots_[static_cast<size_t>(h)] = SessionState{};
  slots_[static_cast<size_t>(h)].idx = -1;
  free_slots_.push_back(h);
}

void SessionTable::check(int32_t r) const {
  for (size_t h = 0; h < slots_.size(); ++h) {
    const SessionState& s = slots_[h];
    if (s.idx < 0) continue;  // a free slot
    if (s.h != static_cast<int32_t>(h))
      invariant_fail(r, fmt::format("session {} lost its handle", s.idx));
    if (s.kv < 0 || s.kv > s.context)
      invariant_fail(
          r, fmt::format("session {}: kv {} outside [0, context {}]", s.idx, s.kv, s.context));
    if (s.phase == Phase::kRunning &&
        (!s.cpu_blocks.empty() || (s.dropped_blocks > 0 && s.restored_blocks == 0)))
      invariant_fail(r, fmt::format("session {} runs with KV still on CPU or dropped", s.idx));
    if (s.restored_blocks < 0 || s.restored_blocks > static_cast<int64_t>(s.gpu_blocks.size()) ||
        (s.restored_blocks > 0 && (s.phase != Phase::kRunning || s.dropped_blocks == 0)))
      invariant_fail(r,
                     fmt::format("session {}: {} lead blocks restored outside a running "
                                 "restore ({} dropped, {} on GPU)",
                                 s.idx, s.restored_blocks, s.dropped_blocks, s.gpu_blocks.size()));
    if (s.phase == Phase::kImporting && (!s.cpu_blocks.empty() || s.dropped_blocks > 0))
      invariant_fail(r, fmt::format("session {} imports KV into blocks off the GPU", s.idx));
    int64_t causes = 0;
    for (int64_t c : s.recompute_cause) causes += c;
    if (causes != s.recompute_left)
      invariant_fail(r, fmt::format("session {}: recompute causes sum to {}, not {}", s.idx, causes,
                                    s.recompute_left));
  }
}

}  // namespace isim::sim
