// KvResidency's moves: growth, drops, copies, evictions, with lost KV reuse counted by cause.
// Context signals and the invariant checks are kv_signals.cpp and kv_check.cpp.
#include "sim/kv_residency.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace isim::sim {

KvResidency::KvResidency(SessionTable& table, ReplicaQueues& queues, Counters& counters,
                         Executor& executor, const EngineConfig& config,
                         double reserved_gpu_fraction)
    : table_(table),
      queues_(queues),
      counters_(counters),
      executor_(executor),
      block_counts_(derive_block_counts(executor.cost_model().profile(), config)),
      block_tokens_(executor.cost_model().profile().block_tokens),
      gpu_("gpu", block_counts_.gpu),
      cpu_("cpu", block_counts_.cpu),
      live_(executor.live()) {
  prefill_reserve_ =
      static_cast<int64_t>(std::floor(reserved_gpu_fraction * static_cast<double>(gpu_.total())));
}

bool KvResidency::grow_gpu(SessionState& s, int64_t tokens) {
  int64_t need = blocks_for(tokens, block_tokens_) - static_cast<int64_t>(s.gpu_blocks.size());
  if (need <= 0) return true;
  return gpu_.allocate(need, s.gpu_blocks);
}

void KvResidency::add_recompute(SessionState& s, int64_t tokens, LostCause why) {
  if (tokens <= 0) return;
  s.recompute_left += tokens;
  s.recompute_cause[static_cast<size_t>(why)] += tokens;
}

void KvResidency::take_recompute(SessionState& s, int64_t tokens, bool recomputed) {
  tokens = std::min(tokens, s.recompute_left);
  if (tokens <= 0) return;
  s.recompute_left -= tokens;
  if (recomputed) {
    s.m.recomputed_tokens += tokens;
    counters_.recomputed_tokens += tokens;
  }
  // Causes are drawn in a fixed order, so the split is deterministic; its totals are exact
  // whenever every pending recompute completes.
  for (int c = 0; c < kLostCauses && tokens > 0; ++c) {
    const int64_t n = std::min(tokens, s.recompute_cause[static_cast<size_t>(c)]);
    s.recompute_cause[static_cast<size_t>(c)] -= n;
    tokens -= n;
    if (!recomputed) continue;
    s.m.recomputed_by_cause[static_cast<size_t>(c)] += n;
    counters_.lost_reuse[static_cast<size_t>(c)] += n;
  }
}

void KvResidency::drop_kv(SessionState& s, LostCause why) {
  if (live_)
    log_.dropped(s, static_cast<int64_t>(s.cpu_blocks.size()),
                 static_cast<int64_t>(s.gpu_blocks.size()));
  gpu_.release(s.gpu_blocks);
  cpu_.release(s.cpu_blocks);
  s.published = 0;
  // Dropped blocks were already counted when they were dropped.
  add_recompute(s, std::max<int64_t>(s.kv - s.dropped_blocks * block_tokens_, 0), why);
  s.dropped_blocks = 0;
  s.restored_blocks = 0;
  s.kv = 0;
}

void KvResidency::drop_leading(SessionState& s, int64_t n) {
  const auto held = static_cast<int64_t>(s.cpu_blocks.size() + s.gpu_blocks.size());
  // The last block may be partial and holds the newest tokens: it is never a leading chunk.
  n = std::min(n, held - 1);
  if (n <= 0) return;
  const int64_t from_cpu = std::min<int64_t>(n, static_cast<int64_t>(s.cpu_blocks.size()));
  if (live_) log_.dropped(s, from_cpu, n - from_cpu);
  std::vector<BlockId> c(s.cpu_blocks.begin(), s.cpu_blocks.begin() + from_cpu);
  s.cpu_blocks.erase(s.cpu_blocks.begin(), s.cpu_blocks.begin() + from_cpu);
  cpu_.release(c);
  std::vector<BlockId> g(s.gpu_blocks.begin(), s.gpu_blocks.begin() + (n - from_cpu));
  s.gpu_blocks.erase(s.gpu_blocks.begin(), s.gpu_blocks.begin() + (n - from_cpu));
  gpu_.release(g);
  s.dropped_blocks += n;
  add_recompute(s, n * block_tokens_, LostCause::kIntercept);
  s.published = 0;
  counters_.dropped_blocks += n;
}

Nanos KvResidency::sync_copy(SessionState& s, bool to_cpu, int64_t n) {
  // The destination list is allocated; the source list is released, and the iteration stalls.
  auto& src = to_cpu ? s.gpu_blocks : s.cpu_blocks;
  auto& dst = to_cpu ? s.cpu_blocks : s.gpu_blocks;
  if (live_) log_.moved(s, to_cpu, true, src, dst, s.dropped_blocks);
  (to_cpu ? gpu_ : cpu_).release(src);
  const int64_t bytes = n * block_bytes();
  const Direction dir = to_cpu ? Direction::kDeviceToHost : Direction::kHostToDevice;
  const Nanos stall = executor_.transfer(bytes, 1, dir, false);  // one gather or scatter
  (to_cpu ? s.m.swapped_out_bytes : s.m.swapped_in_bytes) += bytes;
  (to_cpu ? counters_.swapped_out_bytes : counters_.swapped_in_bytes) += bytes;
  return stall;
}

void KvResidency::move_blocks(SessionState& s, bool to_cpu, int64_t n) {
  // Token order is [dropped][cpu_blocks][gpu_blocks]: a swap-out moves the GPU list's head to
  // the CPU list's tail, a swap-in the CPU list's tail back to the GPU list's head.
  BlockPool& src = to_cpu ? gpu_ : cpu_;
  BlockPool& dst = to_cpu ? cpu_ : gpu_;
  std::vector<BlockId> moved;
  if (!dst.allocate(n, moved)) throw std::logic_error("move_blocks: destination full");
  if (to_cpu && s.cpu_blocks.empty()) ++counters_.swaps;  // a swap-out starts
  std::vector<BlockId> released;
  if (live_) {
    const auto ncpu = static_cast<int64_t>(s.cpu_blocks.size());
    if (to_cpu)
      log_.moved(s, true, false, {s.gpu_blocks.begin(), s.gpu_blocks.begin() + n}, moved,
                 s.dropped_blocks + ncpu);
    else
      log_.moved(s, false, false, {s.cpu_blocks.end() - n, s.cpu_blocks.end()}, moved,
                 s.dropped_blocks + ncpu - n);
  }
  if (to_cpu) {
    released.assign(s.gpu_blocks.begin(), s.gpu_blocks.begin() + n);
    s.gpu_blocks.erase(s.gpu_blocks.begin(), s.gpu_blocks.begin() + n);
    s.cpu_blocks.insert(s.cpu_blocks.end(), moved.begin(), moved.end());
    s.published = 0;  // gpu_blocks[j] no longer holds token block j
  } else {
    released.assign(s.cpu_blocks.end() - n, s.cpu_blocks.end());
    s.cpu_blocks.resize(s.cpu_blocks.size() - static_cast<size_t>(n));
    s.gpu_blocks.insert(s.gpu_blocks.begin(), moved.begin(), moved.end());
  }
  src.release(released);
  int64_t bytes = n * block_bytes();
  (to_cpu ? s.m.swapped_out_bytes : s.m.swapped_in_bytes) += bytes;
  (to_cpu ? counters_.swapped_out_bytes : counters_.swapped_in_bytes) += bytes;
}

void KvResidency::release(SessionState& s) {
  gpu_.release(s.gpu_blocks);
  cpu_.release(s.cpu_blocks);
}

bool KvResidency::can_move_paused(const SessionState& s) const {
  return s.phase == Phase::kPaused && s.kv > 0 && !s.swap_out_pending && s.cpu_blocks.empty() &&
         s.dropped_blocks == 0 &&
         static_cast<int64_t>(s.gpu_blocks.size()) == blocks_for(s.kv, block_tokens_);
}

bool KvResidency::evict_idle(EngineListener* listener, int32_t replica, Nanos now) {
  // The session holding GPU KV but not running that the KV manager gives up first (local:
  // the most recently arrived); ties go to the higher trace index.
  int32_t best = -1;
  for (const auto& s : table_.slots()) {
    if (s.idx < 0 || s.gpu_blocks.empty()) continue;
    if (s.phase != Phase::kPaused && s.phase != Phase::kWaiting) continue;
    const SessionState* b = best < 0 ? nullptr : &table_[best];
    if (!b || kv_->evict_before(s, *b, now) || (!kv_->evict_before(*b, s, now) && s.idx > b->idx))
      best = s.h;
  }
  if (best < 0) return evict_half_swapped();
  SessionState& s = table_[best];
  if (listener && can_move_paused(s)) listener->evicting(replica, s);  // all on the GPU
  drop_kv(s, LostCause::kIdleEviction);
  // A waiting session's queued prefill grows by what it loses.
  if (s.phase == Phase::kWaiting) queues_.requeue_tokens(s);
  if (s.phase == Phase::kPaused) s.discarded = true;
  ++counters_.idle_evictions;
  return true;
}

bool KvResidency::evict_half_swapped() {
  // Resumed sessions caught mid-swap keep GPU blocks while they wait for the rest of their KV;
  // when they fill the GPU between them, none can finish. The latest arrival gives its KV up
  // and waits to recompute it, so the earlier ones can finish their swap-ins.
  int32_t best = -1;
  for (const QueueKey& q : queues_.swapped())
    if (!table_[q.h].gpu_blocks.empty()) best = q.h;  // the queue is in arrival order
  if (best < 0) return false;
  drop_kv(table_[best], LostCause::kIdleEviction);
  queues_.unswap(best);
  ++counters_.idle_evictions;
  return true;
}

// Where a turn finds its KV as it starts: kept on GPU, kept on CPU, or to be recomputed.
void KvResidency::count_turn(const SessionState& s) {
  const int64_t bt = block_tokens();
  const int64_t lead = (s.dropped_blocks + static_cast<int64_t>(s.cpu_blocks.size())) * bt;
  Counters& c = counters_;
  ++c.turns;
  c.turn_gpu_hit_tokens += std::max<int64_t>(s.kv - lead, 0);
  c.turn_cpu_hit_tokens += std::min<int64_t>(static_cast<int64_t>(s.cpu_blocks.size()) * bt,
                                             std::max<int64_t>(s.kv - s.dropped_blocks * bt, 0));
  c.turn_recompute_tokens += s.recompute_left;
}

}  // namespace isim::sim
