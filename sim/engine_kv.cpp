// The engine's KV mechanics: drops, swaps (synchronous and pipelined), idle evictions and the
// prefix cache, with lost KV reuse counted by cause.
#include <algorithm>
#include <stdexcept>

#include "sim/engine.h"

namespace isim::sim {

void Engine::add_recompute(SessionState& s, int64_t tokens, LostCause why) {
  if (tokens <= 0) return;
  s.recompute_left += tokens;
  s.recompute_cause[static_cast<size_t>(why)] += tokens;
}

void Engine::take_recompute(SessionState& s, int64_t tokens, bool recomputed) {
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

void Engine::drop_kv(SessionState& s, LostCause why) {
  if (live_)
    log_.dropped(s, static_cast<int64_t>(s.cpu_blocks.size()),
                 static_cast<int64_t>(s.gpu_blocks.size()));
  gpu_.release(s.gpu_blocks);
  cpu_.release(s.cpu_blocks);
  s.published = 0;
  // Dropped blocks were already counted when they were dropped.
  add_recompute(s, std::max<int64_t>(s.kv - s.dropped_blocks * block_tokens_, 0), why);
  s.dropped_blocks = 0;
  s.kv = 0;
}

void Engine::do_swap_outs() {
  for (int32_t h : swap_out_pending_) {
    SessionState& s = S(h);
    s.swap_out_pending = false;
    auto n = static_cast<int64_t>(s.gpu_blocks.size());
    if (live_ && !s.cpu_blocks.empty())
      throw std::logic_error("do_swap_outs: a session to swap out already holds CPU blocks");
    if (!cpu_.allocate(n, s.cpu_blocks)) {
      // CPU pool full: the KV cannot be kept anywhere, so it is dropped.
      ++counters_.swap_fallback_discards;
      drop_kv(s, LostCause::kIntercept);
      s.discarded = true;
      continue;
    }
    finish_sync_copy(s, /*to_cpu=*/true, n);
  }
  swap_out_pending_.clear();
}

void Engine::finish_sync_copy(SessionState& s, bool to_cpu, int64_t n) {
  // The destination list is allocated; the source list is released, and the iteration stalls.
  auto& src = to_cpu ? s.gpu_blocks : s.cpu_blocks;
  auto& dst = to_cpu ? s.cpu_blocks : s.gpu_blocks;
  if (live_) log_.moved(s, to_cpu, true, src, dst, s.dropped_blocks);
  (to_cpu ? gpu_ : cpu_).release(src);
  const int64_t bytes = n * block_bytes();
  const Direction dir = to_cpu ? Direction::kDeviceToHost : Direction::kHostToDevice;
  stall_ += executor_.transfer(bytes, 1, dir, false);  // one gather or scatter of its blocks
  (to_cpu ? s.m.swapped_out_bytes : s.m.swapped_in_bytes) += bytes;
  (to_cpu ? counters_.swapped_out_bytes : counters_.swapped_in_bytes) += bytes;
}

Nanos Engine::swap_window() const {
  BatchShape decodes;
  for (int32_t h : running_) {
    const SessionState& s = session(h);
    if (!decoding(s)) continue;
    if (decodes.num_decode == 0 || s.kv < decodes.decode_kv_min) decodes.decode_kv_min = s.kv;
    decodes.decode_kv_max = std::max(decodes.decode_kv_max, s.kv);
    ++decodes.num_decode;
    ++decodes.num_logits;
    decodes.decode_kv_tokens += s.kv;
  }
  decodes.total_tokens = decodes.num_decode;
  if (decodes.num_decode == 0) return cost_model().T(cost_model().saturation_tokens());
  return cost_model().forward(decodes);
}

void Engine::plan_swaps() {
  swap_in_plan_.clear();
  swap_budget_ = SwapBudget(cost_model(), pipelined_ ? swap_window() : 0);
  if (!pipelined_) return;
  // Swap-ins first: a resumed session waits for them. Swap-outs get what is left.
  int64_t free = gpu_.free();
  for (const QueueKey& q : swapped_) {
    const SessionState& s = session(q.h);
    const int64_t n =
        swap_budget_.blocks_that_fit(block_bytes(), Direction::kHostToDevice,
                                     std::min(free, static_cast<int64_t>(s.cpu_blocks.size())));
    if (n <= 0) break;
    swap_budget_.take(n * block_bytes(), Direction::kHostToDevice);
    swap_in_plan_.emplace_back(q.h, n);
    free -= n;
  }
  record_.swap_window = swap_budget_.window();
  record_.swap_in_budget_tokens = 0;
  for (const auto& [h, n] : swap_in_plan_) record_.swap_in_budget_tokens += n * block_tokens_;
  record_.swap_out_budget_tokens =
      swap_budget_.blocks_that_fit(block_bytes(), Direction::kDeviceToHost, gpu_.total()) *
      block_tokens_;
}

void Engine::discard_paused(int32_t h) {
  SessionState& s = S(h);
  if (s.phase != Phase::kPaused) throw std::logic_error("discard_paused: session not paused");
  if (s.kv == 0 && s.gpu_blocks.empty() && s.cpu_blocks.empty()) return;
  if (s.swap_out_pending) {
    s.swap_out_pending = false;
    swap_out_pending_.erase(std::find(swap_out_pending_.begin(), swap_out_pending_.end(), h));
  }
  drop_kv(s, LostCause::kIntercept);
  s.discarded = true;
  ++counters_.discards;
  note(h);
}

void Engine::request_swap_out(int32_t h, int64_t max_blocks) {
  const SessionState& s = session(h);
  if (s.phase != Phase::kPaused) throw std::logic_error("request_swap_out: session not paused");
  if (!pipelined_) throw std::logic_error("request_swap_out: policy does not pipeline swaps");
  swap_out_requests_.push_back({h, max_blocks});
}

void Engine::move_blocks(SessionState& s, bool to_cpu, int64_t n) {
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

void Engine::drop_leading(int32_t h, int64_t n) {
  SessionState& s = S(h);
  if (s.phase != Phase::kPaused) throw std::logic_error("drop_leading: session not paused");
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

Nanos Engine::progress_swaps() {
  if (!pipelined_) return 0;
  SwapBudget left = swap_budget_;                         // what the policy planned against
  SwapBudget moved(cost_model(), swap_budget_.window());  // what actually crosses PCIe
  int64_t moved_out = 0, moved_in = 0;
  for (const auto& [h, limit] : swap_out_requests_) {
    SessionState& s = S(h);
    if (s.phase != Phase::kPaused) continue;
    const int64_t want = std::min({static_cast<int64_t>(s.gpu_blocks.size()), cpu_.free(), limit});
    const int64_t n = left.blocks_that_fit(block_bytes(), Direction::kDeviceToHost, want);
    if (n <= 0) continue;
    move_blocks(s, /*to_cpu=*/true, n);
    left.take(n * block_bytes(), Direction::kDeviceToHost);
    moved.take(n * block_bytes(), Direction::kDeviceToHost);
    moved_out += n;
  }
  // Planned swap-ins, FCFS; the batch may have taken GPU blocks since, so fewer may move. A
  // session runs again only when all of its KV is back.
  for (const auto& [h, planned] : swap_in_plan_) {
    SessionState& s = S(h);
    const int64_t n = std::min({planned, static_cast<int64_t>(s.cpu_blocks.size()), gpu_.free()});
    if (n > 0) {
      move_blocks(s, /*to_cpu=*/false, n);
      moved.take(n * block_bytes(), Direction::kHostToDevice);
      moved_in += n;
    }
    if (s.cpu_blocks.empty()) finish_swap_in(s);
  }
  record_.swap_out_tokens = moved_out * block_tokens_;
  record_.swap_in_tokens = moved_in * block_tokens_;
  record_.swap_link = moved.link();
  return record_.swap_link;
}

bool Engine::evict_idle_kv() {
  // The session holding GPU KV but not running that the KV manager gives up first (local:
  // the most recently arrived); ties go to the higher trace index.
  int32_t best = -1;
  for (const auto& s : slots_) {
    if (s.idx < 0 || s.gpu_blocks.empty()) continue;
    if (s.phase != Phase::kPaused && s.phase != Phase::kWaiting) continue;
    const SessionState* b = best < 0 ? nullptr : &session(best);
    if (!b || kv_->evict_before(s, *b, now()) ||
        (!kv_->evict_before(*b, s, now()) && s.idx > b->idx))
      best = s.h;
  }
  if (best < 0) return evict_half_swapped();
  SessionState& s = S(best);
  // A waiting session's queued prefill grows by what it loses.
  const bool queued = s.phase == Phase::kWaiting;
  if (queued) queued_tokens_ -= s.queued_tokens;
  if (listener_ && can_move_paused(best)) listener_->evicting(replica_, s);  // all on the GPU
  drop_kv(s, LostCause::kIdleEviction);
  if (queued) {
    s.queued_tokens = s.pending_prefill(block_tokens_);
    queued_tokens_ += s.queued_tokens;
  }
  if (s.phase == Phase::kPaused) s.discarded = true;
  ++counters_.idle_evictions;
  return true;
}

bool Engine::evict_half_swapped() {
  // Resumed sessions caught mid-swap keep GPU blocks while they wait for the rest of their KV;
  // when they fill the GPU between them, none can finish. The latest arrival gives its KV up
  // and waits to recompute it, so the earlier ones can finish their swap-ins.
  int32_t best = -1;
  for (const QueueKey& q : swapped_)
    if (!session(q.h).gpu_blocks.empty()) best = q.h;  // the queue is in arrival order
  if (best < 0) return false;
  SessionState& s = S(best);
  dequeue(swapped_, swapped_.find({s.arrival, s.idx, s.h}));
  drop_kv(s, LostCause::kIdleEviction);
  s.phase = Phase::kWaiting;
  s.queue_key = s.arrival;
  enqueue(waiting_, s.h, s.queue_key);
  ++counters_.idle_evictions;
  return true;
}

bool Engine::preempt_stuck_prefill() {
  // Nothing ran and no idle KV is left: the running sessions are all part-way through prefills
  // (rebuilds in chunks among them; a decode would have run, preempting for its block) that
  // hold the GPU between them and each need more. As vLLM preempts the last running request
  // when one cannot allocate, the last in running order gives its KV up so the others finish;
  // and as vLLM admits nothing in a step that preempted, neither it nor any other waiting
  // session may take the room back at this instant (it would get stuck there again, be
  // preempted again, and so on forever while the earlier prefills starve).
  if (running_.empty()) return false;
  preempt(running_.back());
  // With nobody left running, nothing can starve: the pool is free for the waiting queue.
  hold_admissions_ = !running_.empty();
  return true;
}

bool Engine::can_match_prefix(const SessionState& s) const {
  return config_.prefix_caching && !s.chain.empty() && s.kv == 0 && s.gpu_blocks.empty() &&
         s.cpu_blocks.empty();
}

int64_t Engine::matchable_blocks(const SessionState& s) const {
  // One token is always left to compute, so that the prefill produces the next token's logits.
  return std::min<int64_t>(static_cast<int64_t>(s.chain.size()), (s.context - 1) / block_tokens_);
}

void Engine::match_prefix(SessionState& s) {
  if (!can_match_prefix(s)) return;
  // The hit rate counts each prompt once; later rebuilds (after a preemption or a discard)
  // still reuse what is cached.
  const bool first = s.m.prefix_lookup_tokens == 0;
  const auto lookup = std::min<int64_t>(s.context, s.prompt_tokens());
  if (first) {
    s.m.prefix_lookup_tokens += lookup;
    counters_.prefix_lookup_tokens += lookup;
  }
  int64_t j = 0;
  for (const int64_t limit = matchable_blocks(s); j < limit; ++j) {
    BlockId b = gpu_.acquire_cached(s.chain[static_cast<size_t>(j)]);
    if (b < 0) break;
    if (kv_->values_shared() && gpu_.refcount(b) > 1) gpu_.value(b);  // two sessions hold it
    s.gpu_blocks.push_back(b);
  }
  s.published = j;
  const int64_t hit = j * block_tokens_;
  s.kv = hit;
  take_recompute(s, hit, /*recomputed=*/false);
  if (!first) return;
  s.m.prefix_hit_tokens += hit;
  counters_.prefix_hit_tokens += hit;
  // Blocks this replica had computed and published before, evicted since: lost reuse.
  for (int64_t k = j, limit = matchable_blocks(s); k < limit; ++k)
    if (ever_published_.count(s.chain[static_cast<size_t>(k)]))
      counters_.prefix_evicted_tokens += block_tokens_;
}

void Engine::publish_prefix(SessionState& s) {
  if (traits_.hash_every_block && config_.prefix_caching) extend_chain(s);
  const auto full = std::min<int64_t>(s.kv / block_tokens_, static_cast<int64_t>(s.chain.size()));
  for (; s.published < full && s.published < static_cast<int64_t>(s.gpu_blocks.size());
       ++s.published) {
    const uint64_t hash = s.chain[static_cast<size_t>(s.published)];
    const BlockId b = s.gpu_blocks[static_cast<size_t>(s.published)];
    gpu_.publish(b, hash);
    ever_published_.insert(hash);
    // Block position: the prompt's (or a fork's parent's) blocks are the shareable ones.
    if (kv_->values_shared() && s.published < s.prompt_chain_blocks) gpu_.value(b);
  }
}

int64_t Engine::cached_prefix_blocks(const std::vector<uint64_t>& chain) const {
  int64_t j = 0;
  while (j < static_cast<int64_t>(chain.size()) && gpu_.has_hash(chain[static_cast<size_t>(j)]))
    ++j;
  return j;
}

}  // namespace isim::sim
