// The replica's waste accounting and busy spans.
#include "sim/waste_meter.h"

#include <algorithm>

#include "sim/invariant.h"

namespace isim::sim {

void WasteMeter::open(Nanos t) {
  if (accounted_until_ < 0) accounted_until_ = t;
}

void WasteMeter::close(Nanos end) {
  if (accounted_until_ >= 0) account(accounted_until_, end, false, false);
  accounted_until_ = std::max(accounted_until_, end);
}

void WasteMeter::catch_up(Nanos t) {
  account(accounted_until_, t, false, false);
  accounted_until_ = t;
}

void WasteMeter::iteration(Nanos t, Nanos stall, Nanos busy) {
  account(t, t + stall, false, true);
  account(t + stall, t + stall + busy, true, false);
  accounted_until_ = t + stall + busy;
  add_span(t, t + stall + busy);
}

void WasteMeter::decode_step(Nanos t, Nanos busy, int64_t used, int64_t free, int64_t active,
                             int64_t recompute) {
  if (busy > 0) {
    const double dt = to_seconds(busy);
    waste_.free += static_cast<double>(free) * dt;
    add_forward(dt, static_cast<double>(used), static_cast<double>(active),
                static_cast<double>(recompute));
  }
  accounted_until_ = t + busy;
  add_span(t, t + busy);
}

void WasteMeter::add_span(Nanos t, Nanos end) {
  if (!busy_spans_.empty() && busy_spans_.back().end >= t)
    busy_spans_.back().end = std::max(busy_spans_.back().end, end);
  else
    busy_spans_.push_back({t, end});
}

void WasteMeter::check_clock(int32_t replica, Nanos now) const {
  if (now < last_check_) invariant_fail(replica, "clock went backwards");
  last_check_ = now;
}

void WasteMeter::account(Nanos from, Nanos to, bool in_batch_phase, bool stall) {
  if (to <= from) return;
  const BlockPool& gpu = kv_.gpu();
  const double dt = to_seconds(to - from);
  const auto used = static_cast<double>(gpu.used());
  waste_.free += static_cast<double>(gpu.free()) * dt;
  if (stall) {
    waste_.swap_stall += used * dt;
    return;
  }
  if (!in_batch_phase) {
    waste_.preserved += used * dt;
    return;
  }
  const BatchBlocks b = batch_blocks();
  add_forward(dt, used, static_cast<double>(b.active), static_cast<double>(b.recompute));
}

void WasteMeter::add_forward(double dt, double used, double active, double recompute) {
  waste_.active += active * dt;
  waste_.recompute += recompute * dt;
  waste_.preserved += (used - active - recompute) * dt;
}

WasteMeter::BatchBlocks WasteMeter::batch_blocks() const {
  const BlockPool& gpu = kv_.gpu();
  // Blocks shared by several running sessions (a common prefix) count once.
  BatchBlocks out;
  ++account_stamp_;
  if (block_stamp_.size() != static_cast<size_t>(gpu.total()))
    block_stamp_.assign(static_cast<size_t>(gpu.total()), 0);
  for (int32_t h : queues_.running()) {
    const auto& s = table_[h];
    int64_t& into = s.recompute_left > 0 ? out.recompute : out.active;
    if (!prefix_.shares_blocks()) {
      into += static_cast<int64_t>(s.gpu_blocks.size());
      continue;
    }
    // Only a block held more than once can be counted twice, and only the shareable prefix
    // (prompt blocks named by the trace's hashes; a fork family's whole chain) is ever held by
    // two sessions (other blocks carry hashes salted with the session's own index): stamp
    // those alone. KvResidency::check_blocks verifies it.
    const size_t lead = shareable_gpu_blocks(s);
    auto n = static_cast<int64_t>(s.gpu_blocks.size() - lead);
    for (size_t k = 0; k < lead; ++k) {
      const BlockId b = s.gpu_blocks[k];
      if (gpu.refcount(b) == 1) {
        n += 1;
        continue;
      }
      auto& st = block_stamp_[static_cast<size_t>(b)];
      if (st != account_stamp_) {
        st = account_stamp_;
        n += 1;
      }
    }
    into += n;
  }
  return out;
}

}  // namespace isim::sim
