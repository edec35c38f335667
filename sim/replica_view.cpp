// ReplicaView's answers, read from the replica's parts.
#include "sim/replica_view.h"

#include <fmt/format.h>

#include "sim/batch.h"
#include "sim/engine_config.h"
#include "sim/event_queue.h"
#include "sim/prefix_cache.h"
#include "sim/scheduler.h"
#include "sim/swap_planner.h"

namespace isim::sim {

Nanos ReplicaView::now() const {
  return queue_.now();
}
const SessionState& ReplicaView::session(int32_t h) const {
  return sessions_[h];
}
const std::vector<int32_t>& ReplicaView::running() const {
  return queues_.running();
}
const std::vector<int32_t>& ReplicaView::paused() const {
  return queues_.paused();
}
const BlockPool& ReplicaView::gpu() const {
  return kv_.gpu();
}
const BlockPool& ReplicaView::cpu() const {
  return kv_.cpu();
}
const BlockCounts& ReplicaView::blocks() const {
  return kv_.blocks();
}
int64_t ReplicaView::block_tokens() const {
  return kv_.block_tokens();
}
int64_t ReplicaView::running_kv_tokens() const {
  return queues_.running_kv_tokens();
}
int32_t ReplicaView::decoding_sessions() const {
  return queues_.decoding_sessions();
}
int64_t ReplicaView::waiting_head_need() const {
  return queues_.waiting_head_need();
}
int64_t ReplicaView::prefill_reserve() const {
  return kv_.prefill_reserve();
}
Nanos ReplicaView::last_forward() const {
  return batch_.last_forward();
}
const SwapBudget& ReplicaView::swap_budget() const {
  return swaps_.budget();
}
ReplicaLoad ReplicaView::load() const {
  return queues_.load();
}
int64_t ReplicaView::cached_prefix_blocks(const std::vector<uint64_t>& chain) const {
  return prefix_.cached_prefix_blocks(chain);
}

TimeSample ReplicaView::sample(Nanos t) const {
  TimeSample ts;
  ts.t_s = to_seconds(t);
  ts.running = static_cast<int64_t>(queues_.running().size());
  ts.waiting = static_cast<int64_t>(queues_.waiting().size());
  ts.paused = static_cast<int64_t>(queues_.paused().size());
  ts.swapped = static_cast<int64_t>(queues_.swapped().size());
  ts.gpu_blocks_used = kv_.gpu().used();
  ts.cpu_blocks_used = kv_.cpu().used();
  ts.queued_tokens = queues_.load().queued_prefill_tokens;
  const IterationRecord& r = batch_.record();
  ts.batch_tokens = batch_.busy() ? r.batch_tokens : 0;
  ts.preemptions = counters_.preemptions;
  // Busy time up to t: an iteration in flight counts only its part before t.
  Nanos busy = counters_.busy_time;
  if (batch_.busy()) busy -= std::max<Nanos>(r.start + r.duration - t, 0);
  ts.busy_s = to_seconds(busy);
  return ts;
}

std::string never_fits(const ReplicaView& v, const Scheduler& s, const trace::Session& src) {
  // Prefills may not use the blocks a policy reserves for decodes, and a resumed session may
  // have to prefill its whole context.
  const int64_t gpu_tokens = (v.gpu().total() - v.prefill_reserve()) * v.block_tokens();
  const int64_t need = src.max_context();
  if (need > gpu_tokens)
    return fmt::format(
        "its context reaches {} tokens but the GPU holds {} ({} blocks of {}, {} reserved for "
        "decodes)",
        need, gpu_tokens, v.gpu().total(), v.block_tokens(), v.prefill_reserve());
  const int64_t budget = v.config().max_num_batched_tokens;
  if (s.whole_prefills() && need > budget)
    return fmt::format(
        "its context reaches {} tokens, more than max_num_batched_tokens={}, so {} "
        "could never prefill it whole after a discard",
        need, budget, s.name());
  return "";
}

}  // namespace isim::sim
