// The engine's accounting (waste, load, samples); its invariant check is engine_invariants.cpp.
#include <algorithm>

#include "sim/engine.h"

namespace isim::sim {

void Engine::account(Nanos from, Nanos to, bool in_batch_phase, bool stall) {
  if (to <= from) return;
  const double dt = to_seconds(to - from);
  const auto used = static_cast<double>(gpu_.used());
  waste_.free += static_cast<double>(gpu_.free()) * dt;
  if (stall) {
    waste_.swap_stall += used * dt;
    return;
  }
  if (!in_batch_phase) {
    waste_.preserved += used * dt;
    return;
  }
  // Blocks shared by several running sessions (a common prefix) count once.
  double active = 0, recompute = 0;
  ++account_stamp_;
  if (block_stamp_.size() != static_cast<size_t>(gpu_.total()))
    block_stamp_.assign(static_cast<size_t>(gpu_.total()), 0);
  for (int32_t h : running_) {
    const auto& s = session(h);
    if (!shared_blocks_) {
      (s.recompute_left > 0 ? recompute : active) += static_cast<double>(s.gpu_blocks.size());
      continue;
    }
    // Only a block held more than once can be counted twice, and only the shareable prefix
    // (prompt blocks named by the trace's hashes; a fork family's whole chain) is ever held by
    // two sessions (other blocks carry hashes salted with the session's own index): stamp
    // those alone. check_invariants verifies it.
    const size_t lead = shareable_gpu_blocks(s);
    double n = static_cast<double>(s.gpu_blocks.size() - lead);
    for (size_t k = 0; k < lead; ++k) {
      const BlockId b = s.gpu_blocks[k];
      if (gpu_.refcount(b) == 1) {
        n += 1;
        continue;
      }
      auto& st = block_stamp_[static_cast<size_t>(b)];
      if (st != account_stamp_) {
        st = account_stamp_;
        n += 1;
      }
    }
    (s.recompute_left > 0 ? recompute : active) += n;
  }
  waste_.active += active * dt;
  waste_.recompute += recompute * dt;
  waste_.preserved += (used - active - recompute) * dt;
}

size_t Engine::gpu_blocks_within(const SessionState& s, int64_t chain_blocks) {
  const int64_t before = s.dropped_blocks + static_cast<int64_t>(s.cpu_blocks.size());
  const int64_t lead = std::max<int64_t>(chain_blocks - before, 0);
  return std::min(s.gpu_blocks.size(), static_cast<size_t>(lead));
}

size_t Engine::shareable_gpu_blocks(const SessionState& s) const {
  // A fork's family shares blocks past the prompt (the parent's context): all of its chain.
  return gpu_blocks_within(s, s.chain_shared ? static_cast<int64_t>(s.chain.size())
                                             : s.prompt_chain_blocks);
}

void Engine::close(Nanos end) {
  if (accounted_until_ >= 0) account(accounted_until_, end, false, false);
  accounted_until_ = std::max(accounted_until_, end);
}

TimeSample Engine::sample(Nanos t) const {
  TimeSample ts;
  ts.t_s = to_seconds(t);
  ts.running = static_cast<int64_t>(running_.size());
  ts.waiting = static_cast<int64_t>(waiting_.size());
  ts.paused = static_cast<int64_t>(paused_.size());
  ts.swapped = static_cast<int64_t>(swapped_.size());
  ts.gpu_blocks_used = gpu_.used();
  ts.cpu_blocks_used = cpu_.used();
  ts.queued_tokens = load().queued_prefill_tokens;
  ts.batch_tokens = busy_ ? record_.batch_tokens : 0;
  // Busy time up to t: an iteration in flight counts only its part before t.
  Nanos busy = counters_.busy_time;
  if (busy_) busy -= std::max<Nanos>(record_.start + record_.duration - t, 0);
  ts.busy_s = to_seconds(busy);
  return ts;
}

int64_t Engine::running_kv_tokens() const {
  int64_t m = 0;
  for (int32_t h : running_) m += session(h).kv;
  return m;
}

int64_t Engine::waiting_head_need() const {
  if (waiting_.empty()) return 0;
  const auto& s = session(waiting_.begin()->h);
  return std::max<int64_t>(
      blocks_for(s.context, block_tokens_) - static_cast<int64_t>(s.gpu_blocks.size()), 0);
}

int32_t Engine::decoding_sessions() const {
  int32_t r = 0;
  for (int32_t h : running_) r += decoding(session(h));
  return r;
}

void Engine::refresh_running_load() const {
  int64_t pending = 0, decodes = 0;
  for (int32_t h : running_) {
    const auto& s = session(h);
    pending += s.pending_prefill(block_tokens_);
    decodes += decoding(s);
  }
  running_pending_ = pending;
  running_decodes_ = decodes;
  running_load_stale_ = false;
}

ReplicaLoad Engine::load() const {
  if (running_load_stale_) refresh_running_load();
  ReplicaLoad l;
  l.queued_prefill_tokens = running_pending_ + queued_tokens_;
  // Sessions whose KV is landing here decode next: they count at once, so a burst spreads.
  l.decode_sequences = running_decodes_ + static_cast<int64_t>(importing_.size());
  return l;
}

}  // namespace isim::sim
