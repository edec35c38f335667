#include "sim/session_state.h"

namespace isim::sim {

const char* lost_cause_name(LostCause c) {
  switch (c) {
    case LostCause::kIntercept:
      return "intercept";
    case LostCause::kPreemption:
      return "preemption";
    case LostCause::kIdleEviction:
      return "idle_eviction";
    case LostCause::kMigration:
      return "migration";
    case LostCause::kRoleSwitch:
      return "role_switch";
  }
  return "?";
}

SessionState SessionState::arrive(const trace::Session& src, int32_t idx, Nanos arrival) {
  SessionState s;
  s.src_ = &src;
  s.idx = idx;
  s.arrival = arrival;
  return s;
}

const std::string& SessionState::intercept_kind() const {
  static const std::string none;
  const auto& ic = segment().intercept;
  return ic ? ic->kind : none;
}

}  // namespace isim::sim
