// The replica's listener that passes calls on or keeps them (cluster/replica_port.h).
#include "cluster/replica_port.h"

#include <stdexcept>
#include <utility>

namespace isim::cluster {

sim::Nanos turn_start(const sim::SessionState& s) {
  return s.seg == 0 ? s.arrival : s.intercept_end;
}

sim::TurnRecord turn_record(int32_t r, const sim::SessionState& s, int64_t outputs) {
  const sim::Nanos start = turn_start(s);
  sim::TurnRecord t;
  t.session = s.idx;
  t.seg = s.seg;
  t.start_s = sim::to_seconds(start);
  t.ttft_s = sim::to_seconds(s.seg_first_token - start);
  t.itl_max_s = outputs >= 2 ? sim::to_seconds(s.seg_max_gap) : -1.0;
  t.output_tokens = outputs;
  t.input_tokens = s.seg_input;
  t.finish_s = sim::to_seconds(s.last_token);
  t.replica = r;
  t.span_ns = s.last_token - s.seg_first_token;
  return t;
}

Effect& ReplicaPort::add(Effect::Kind k, int32_t session) {
  Effect& e = effects_.emplace_back();
  e.seq = static_cast<int32_t>(effects_.size());
  e.end = end_;
  e.started = started_;
  e.replica = replica_;
  e.kind = k;
  e.session = session;
  return e;
}

void ReplicaPort::paused(int32_t replica, int32_t handle, const sim::SessionState& s,
                         sim::Nanos duration) {
  if (!hold_) return target_.paused(replica, handle, s, duration);
  add(Effect::kPaused, s.idx).value = duration;
}

void ReplicaPort::finished(int32_t replica, const sim::SessionState& s) {
  if (!hold_) return target_.finished(replica, s);
  add(Effect::kFinished, s.idx).m = s.m;
}

void ReplicaPort::turn_first_token(int32_t replica, const sim::SessionState& s, sim::Nanos ttft) {
  if (!hold_) return target_.turn_first_token(replica, s, ttft);
  add(Effect::kTurnTtft, s.idx).value = ttft;
}

void ReplicaPort::prefilled(int32_t replica, int32_t handle, const sim::SessionState& s,
                            sim::Nanos iteration_start) {
  if (!hold_) return target_.prefilled(replica, handle, s, iteration_start);
  throw std::logic_error("ReplicaPort: an export inside a window (roles never window)");
}

void ReplicaPort::first_token(int32_t replica, const sim::SessionState& s, sim::Nanos ttft) {
  if (!hold_) target_.first_token(replica, s, ttft);
}

void ReplicaPort::segment_done(int32_t replica, const sim::SessionState& s, int64_t outputs,
                               double decode_s) {
  if (!hold_) return target_.segment_done(replica, s, outputs, decode_s);
  Effect& e = add(Effect::kTurn, s.idx);
  e.turn = turn_record(replica, s, outputs);
  e.value = turn_start(s);
  e.first = s.seg_first_token;
  e.gaps = s.seg_gaps.runs();  // the session's buffer is reused by its next turn
}

void ReplicaPort::evicting(int32_t replica, const sim::SessionState& s) {
  if (!hold_) target_.evicting(replica, s);
}

}  // namespace isim::cluster
