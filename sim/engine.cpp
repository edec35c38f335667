#include "sim/engine.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "traces/hash.h"
#include "traces/input_error.h"

namespace isim::sim {

BlockCounts derive_block_counts(const Profile& p, const EngineConfig& c) {
  BlockCounts b;
  b.block_bytes = p.model.kv_bytes_per_token() * p.block_tokens;
  if (b.block_bytes <= 0) throw InputError(p.path + ": model: KV bytes per block must be > 0");
  const double gib = 1024.0 * 1024.0 * 1024.0;
  if (c.gpu_blocks > 0) {
    b.gpu = c.gpu_blocks;
  } else {
    double avail = p.device.memory_gib * gib * c.gpu_memory_utilization -
                   p.model.weight_bytes_per_gpu() - c.activation_reserve_gib * gib;
    b.gpu = avail > 0 ? static_cast<int64_t>(std::floor(avail / static_cast<double>(b.block_bytes)))
                      : 0;
  }
  if (b.gpu <= 0)
    throw InputError(fmt::format(
        "{}: no KV block fits on the GPU: {} GiB x {} utilisation - {:.2f} GiB weights - {} GiB "
        "activation reserve leaves nothing for {} B blocks",
        p.path.empty() ? "profile" : p.path, p.device.memory_gib, c.gpu_memory_utilization,
        p.model.weight_bytes_per_gpu() / gib, c.activation_reserve_gib, b.block_bytes));
  b.cpu = c.cpu_blocks >= 0 ? c.cpu_blocks
                            : static_cast<int64_t>(std::floor(c.swap_space_gib * gib /
                                                              static_cast<double>(b.block_bytes)));
  return b;
}

Engine::Engine(int32_t replica, EventQueue& queue, const EngineConfig& config, Executor& executor,
               Policy& policy, const trace::Trace& trace)
    : replica_(replica),
      queue_(queue),
      config_(config),
      executor_(executor),
      policy_(policy),
      scheduler_(scheduler_registry().create(config.scheduler, "engine.scheduler")),
      trace_(trace),
      block_counts_(derive_block_counts(executor.cost_model().profile(), config)),
      block_tokens_(executor.cost_model().profile().block_tokens),
      gpu_("gpu", block_counts_.gpu),
      cpu_("cpu", block_counts_.cpu),
      pipelined_(policy.pipelined_swap()),
      chunked_recompute_(policy.chunked_recompute()),
      live_(executor.live()) {
  prefill_reserve_ = static_cast<int64_t>(
      std::floor(policy.reserved_gpu_fraction() * static_cast<double>(gpu_.total())));
  if (config_.max_num_seqs < 1) throw InputError("engine.max_num_seqs: must be >= 1");
  if (config_.max_num_batched_tokens < 1)
    throw InputError("engine.max_num_batched_tokens: must be >= 1");
}

void Engine::load() {
  sessions_.resize(trace_.size());
  // Prefills may not use the blocks a policy reserves for decodes, and a resumed session may
  // have to prefill its whole context.
  const int64_t gpu_tokens = (gpu_.total() - prefill_reserve_) * block_tokens_;
  for (size_t i = 0; i < trace_.size(); ++i) {
    const trace::Session& src = trace_[i];
    SessionState& s = sessions_[i];
    s.src = &src;
    s.idx = static_cast<int32_t>(i);
    s.arrival = from_seconds(src.arrival_s);
    for (size_t k = 0; k < src.segments.size(); ++k)
      if (src.segments[k].output < 1)
        throw InputError(
            fmt::format("session {}: segments[{}].output: must be >= 1 (every "
                        "segment decodes at least one token)",
                        src.id, k));
    const int64_t need = src.max_context();
    std::string why;
    if (need > gpu_tokens)
      why = fmt::format(
          "its context reaches {} tokens but the GPU holds {} ({} blocks of {}, {} reserved for "
          "decodes)",
          need, gpu_tokens, gpu_.total(), block_tokens_, prefill_reserve_);
    else if (config_.scheduler == "vllm-v0" && need > config_.max_num_batched_tokens)
      why = fmt::format(
          "its context reaches {} tokens, more than max_num_batched_tokens={}, so vllm-v0 "
          "could never prefill it whole after a discard",
          need, config_.max_num_batched_tokens);
    if (!why.empty()) {
      s.phase = Phase::kSkipped;
      skipped_.push_back(fmt::format("session {} skipped: {}", src.id, why));
      continue;
    }
    s.chain = prefix_chain(src, block_tokens_);
    shared_blocks_ = shared_blocks_ || (config_.prefix_caching && !s.chain.empty());
    queue_.schedule(s.arrival, kPrioArrival, replica_, kEvArrival, s.idx);
  }
}

std::vector<uint64_t> prefix_chain(const trace::Session& src, int64_t block_tokens) {
  std::vector<uint64_t> chain;
  const auto& p = src.prefix;
  if (p.empty()) return chain;
  if (p.block_tokens % block_tokens != 0)
    throw InputError(
        fmt::format("session {}: prefix.block_tokens {} is not a multiple of the "
                    "profile's kv.block_tokens {}",
                    src.id, p.block_tokens, block_tokens));
  const int64_t covered =
      std::min(src.segments.front().input, static_cast<int64_t>(p.hashes.size()) * p.block_tokens);
  const int64_t sub = p.block_tokens / block_tokens;
  uint64_t h = 0x9e3779b97f4a7c15ull;
  for (int64_t j = 0; (j + 1) * block_tokens <= covered; ++j) {
    // splitmix64 over (parent, the trace's block id, the position inside it): equal chains
    // give equal hashes, and a diverging block changes every hash after it.
    const uint64_t x = splitmix64(
        h ^ (p.hashes[static_cast<size_t>(j / sub)] + 0x632be59bd9b4e019ull * (j % sub + 1)));
    h = x == 0 ? 1 : x;  // 0 means "no hash" in the pool
    chain.push_back(h);
  }
  return chain;
}

void Engine::match_prefix(SessionState& s) {
  // Only a session rebuilding from nothing can start from cached blocks; one token is always
  // left to compute so that the prefill produces the next token's logits.
  if (!config_.prefix_caching || s.chain.empty() || s.kv != 0 || !s.gpu_blocks.empty() ||
      !s.cpu_blocks.empty())
    return;
  // The hit rate counts each prompt once; later rebuilds (after a preemption or a discard)
  // still reuse what is cached.
  const bool first = s.prefix_lookup_tokens == 0;
  const auto lookup = std::min<int64_t>(s.context, s.src->segments.front().input);
  if (first) {
    s.prefix_lookup_tokens += lookup;
    counters_.prefix_lookup_tokens += lookup;
  }
  int64_t j = 0;
  while (j < static_cast<int64_t>(s.chain.size()) && (j + 1) * block_tokens_ < s.context) {
    BlockId b = gpu_.acquire_cached(s.chain[static_cast<size_t>(j)]);
    if (b < 0) break;
    s.gpu_blocks.push_back(b);
    ++j;
  }
  s.published = j;
  const int64_t hit = j * block_tokens_;
  s.kv = hit;
  s.recompute_left = std::max<int64_t>(s.recompute_left - hit, 0);
  if (first) {
    s.prefix_hit_tokens += hit;
    counters_.prefix_hit_tokens += hit;
  }
}

void Engine::publish_prefix(SessionState& s) {
  const auto full = std::min<int64_t>(s.kv / block_tokens_, static_cast<int64_t>(s.chain.size()));
  for (; s.published < full && s.published < static_cast<int64_t>(s.gpu_blocks.size());
       ++s.published)
    gpu_.publish(s.gpu_blocks[static_cast<size_t>(s.published)],
                 s.chain[static_cast<size_t>(s.published)]);
}

void Engine::handle(const Event& ev) {
  switch (ev.type) {
    case kEvArrival:
      on_arrival(static_cast<int32_t>(ev.arg));
      break;
    case kEvInterceptEnd:
      on_intercept_end(static_cast<int32_t>(ev.arg));
      break;
    case kEvIterationEnd:
      on_iteration_end();
      break;
    default:
      throw std::logic_error("Engine: unknown event type");
  }
}

bool Engine::has_work() const {
  return !running_.empty() || !waiting_.empty() || !swapped_.empty() || !swap_out_pending_.empty();
}

void Engine::on_arrival(int32_t idx) {
  SessionState& s = sessions_[static_cast<size_t>(idx)];
  if (accounted_until_ < 0) accounted_until_ = now();
  s.phase = Phase::kWaiting;
  s.context = s.segment().input;
  s.queue_key = s.arrival;
  waiting_.insert({s.queue_key, idx});
}

void Engine::on_intercept_end(int32_t idx) {
  SessionState& s = sessions_[static_cast<size_t>(idx)];
  paused_.erase(std::find(paused_.begin(), paused_.end(), idx));
  policy_.on_resume(s, *this);
  s.seg += 1;
  s.context += s.segment().input;
  s.decoded_in_seg = 0;
  s.intercept_end = now();
  {
    // Where this turn finds its KV: kept on GPU, kept on CPU, or to be recomputed.
    const int64_t lead =
        (s.dropped_blocks + static_cast<int64_t>(s.cpu_blocks.size())) * block_tokens_;
    ++counters_.turns;
    counters_.turn_gpu_hit_tokens += std::max<int64_t>(s.kv - lead, 0);
    counters_.turn_cpu_hit_tokens +=
        std::min<int64_t>(static_cast<int64_t>(s.cpu_blocks.size()) * block_tokens_,
                          std::max<int64_t>(s.kv - s.dropped_blocks * block_tokens_, 0));
    counters_.turn_recompute_tokens += s.recompute_left;
  }
  if (s.swap_out_pending) {
    // The intercept ended before the copy started: the KV never left the GPU.
    s.swap_out_pending = false;
    swap_out_pending_.erase(std::find(swap_out_pending_.begin(), swap_out_pending_.end(), idx));
  }
  if (!s.cpu_blocks.empty()) {
    // Fully or partly on CPU: it may run only once all of its KV is back.
    s.phase = Phase::kSwapped;
    swapped_.insert({s.arrival, idx});
    return;
  }
  s.phase = Phase::kWaiting;
  s.queue_key = (s.discarded && policy_.resume_at_back()) ? now() : s.arrival;
  s.discarded = false;
  waiting_.insert({s.queue_key, idx});
}

void Engine::add_to_running(int32_t idx) {
  SessionState& s = sessions_[static_cast<size_t>(idx)];
  s.phase = Phase::kRunning;
  auto less = [this](int32_t a, int32_t b) {
    const auto& sa = sessions_[static_cast<size_t>(a)];
    const auto& sb = sessions_[static_cast<size_t>(b)];
    return sa.arrival != sb.arrival ? sa.arrival < sb.arrival : a < b;
  };
  running_.insert(std::upper_bound(running_.begin(), running_.end(), idx, less), idx);
}

void Engine::remove_from_running(int32_t idx) {
  running_.erase(std::find(running_.begin(), running_.end(), idx));
}

bool Engine::grow_gpu(SessionState& s, int64_t tokens) {
  int64_t need = blocks_for(tokens, block_tokens_) - static_cast<int64_t>(s.gpu_blocks.size());
  if (need <= 0) return true;
  return gpu_.allocate(need, s.gpu_blocks);
}

void Engine::drop_kv(SessionState& s) {
  if (live_)
    log_drop(s, static_cast<int64_t>(s.cpu_blocks.size()),
             static_cast<int64_t>(s.gpu_blocks.size()));
  gpu_.release(s.gpu_blocks);
  cpu_.release(s.cpu_blocks);
  s.published = 0;
  // Dropped blocks were already counted when they were dropped.
  s.recompute_left += std::max<int64_t>(s.kv - s.dropped_blocks * block_tokens_, 0);
  s.dropped_blocks = 0;
  s.kv = 0;
}

void Engine::preempt(int32_t idx) {
  SessionState& s = sessions_[static_cast<size_t>(idx)];
  remove_from_running(idx);
  drop_kv(s);
  ++s.preemptions;
  ++counters_.preemptions;
  s.phase = Phase::kWaiting;
  s.queue_key = s.arrival;
  waiting_.insert({s.queue_key, idx});
}

bool Engine::schedule_decodes() {
  bool clean = true;
  // Index loop: preemption removes later entries (the most recent arrivals) from running_.
  for (size_t i = 0; i < running_.size(); ++i) {
    int32_t idx = running_[i];
    SessionState& s = sessions_[static_cast<size_t>(idx)];
    if (!decoding(s)) continue;  // still prefilling (or rebuilding after a preemption)
    if (batch_tokens_ + 1 > config_.max_num_batched_tokens) break;
    bool self_preempted = false;
    while (!grow_gpu(s, s.kv + 1)) {
      clean = false;
      int32_t victim = running_.back();
      preempt(victim);
      if (victim == idx) {
        self_preempted = true;
        break;
      }
    }
    if (self_preempted) break;  // it was the last running session in order
    batch_.push_back({idx, 1, true, false, 0});
    ++batch_tokens_;
    ++shape_.num_decode;
    shape_.decode_kv_tokens += s.kv;
    ++shape_.num_logits;
  }
  return clean;
}

bool Engine::add_prefill(SessionState& s, int64_t chunk) {
  if (s.dropped_blocks * block_tokens_ > config_.max_num_batched_tokens) {
    // A dropped lead larger than any batch cannot be recomputed in one piece: rebuild the
    // whole context in chunks instead (what it kept is recomputed too, and counted).
    drop_kv(s);
    ++counters_.oversized_restores;
    chunk = std::min(chunk, s.pending_prefill(block_tokens_));
  }
  const int64_t pending = s.pending_prefill(block_tokens_);
  const int64_t restore = s.dropped_blocks * block_tokens_;
  // Dropped leading blocks are recomputed whole, in the iteration that prefills after them.
  if (chunk <= 0 || chunk > pending || chunk < restore) return false;
  const int64_t fresh = chunk - restore;
  const int64_t need =
      blocks_for(s.kv + fresh, block_tokens_) - static_cast<int64_t>(s.gpu_blocks.size());
  if (need > gpu_.free() - prefill_reserve_) return false;
  if (restore > 0) {
    std::vector<BlockId> lead;
    gpu_.allocate(s.dropped_blocks, lead);
    s.gpu_blocks.insert(s.gpu_blocks.begin(), lead.begin(), lead.end());
    s.dropped_blocks = 0;
    s.published = 0;
  }
  if (!grow_gpu(s, s.kv + fresh)) throw std::logic_error("add_prefill: blocks vanished");
  batch_.push_back({s.idx, chunk, false, s.recompute_left > 0, restore});
  batch_tokens_ += chunk;
  ++batch_prefills_;
  // The recomputed lead attends only to itself; the rest attends to everything before it.
  if (restore > 0) shape_.prefills.push_back({restore, 0});
  if (fresh > 0) shape_.prefills.push_back({fresh, s.kv});
  if (chunk == pending) ++shape_.num_logits;
  return true;
}

void Engine::continue_prefills() {
  for (int32_t idx : running_) {
    SessionState& s = sessions_[static_cast<size_t>(idx)];
    const int64_t pending = s.pending_prefill(block_tokens_);
    if (decoding(s) || pending == 0 || recompute_lane(s)) continue;
    int64_t room = config_.max_num_batched_tokens - batch_tokens_;
    if (room <= 0) break;
    add_prefill(s, std::min(room, pending));
  }
}

bool Engine::recompute_lane(const SessionState& s) const {
  return chunked_recompute_ && (s.recompute_left > 0 || s.chunked);
}

void Engine::admit_waiting(bool whole) {
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    int32_t idx = it->idx;
    SessionState& s = sessions_[static_cast<size_t>(idx)];
    if (recompute_lane(s)) {  // rebuilt in S - R chunks by schedule_recompute_chunks
      ++it;
      continue;
    }
    if (static_cast<int64_t>(running_.size()) + 1 > config_.max_num_seqs) break;
    match_prefix(s);
    int64_t room = config_.max_num_batched_tokens - batch_tokens_;
    int64_t need = s.pending_prefill(block_tokens_);
    int64_t chunk = whole ? need : std::min(need, room);
    if (chunk > room || !add_prefill(s, chunk)) break;
    it = waiting_.erase(it);
    add_to_running(idx);
  }
}

void Engine::swap_in() {
  if (pipelined_) return;  // moved within budgets by progress_swaps
  while (!swapped_.empty()) {
    int32_t idx = swapped_.begin()->idx;
    SessionState& s = sessions_[static_cast<size_t>(idx)];
    auto n = static_cast<int64_t>(s.cpu_blocks.size());
    if (live_ && !s.gpu_blocks.empty())
      throw std::logic_error("swap_in: a synchronously swapped session kept GPU blocks");
    if (!gpu_.allocate(n, s.gpu_blocks)) break;
    if (live_) log_move(s, false, true, s.cpu_blocks, s.gpu_blocks, s.dropped_blocks);
    cpu_.release(s.cpu_blocks);
    int64_t bytes = n * block_bytes();
    stall_ += executor_.transfer(bytes, n, Direction::kHostToDevice, false);
    s.swapped_in_bytes += bytes;
    counters_.swapped_in_bytes += bytes;
    finish_swap_in(s);
  }
}

void Engine::finish_swap_in(SessionState& s) {
  swapped_.erase({s.arrival, s.idx});
  s.phase = Phase::kWaiting;
  s.queue_key = s.arrival;
  waiting_.insert({s.queue_key, s.idx});
}

void Engine::do_swap_outs() {
  for (int32_t idx : swap_out_pending_) {
    SessionState& s = sessions_[static_cast<size_t>(idx)];
    s.swap_out_pending = false;
    auto n = static_cast<int64_t>(s.gpu_blocks.size());
    if (live_ && !s.cpu_blocks.empty())
      throw std::logic_error("do_swap_outs: a session to swap out already holds CPU blocks");
    if (!cpu_.allocate(n, s.cpu_blocks)) {
      // CPU pool full: the KV cannot be kept anywhere, so it is dropped.
      ++counters_.swap_fallback_discards;
      drop_kv(s);
      s.discarded = true;
      continue;
    }
    if (live_) log_move(s, true, true, s.gpu_blocks, s.cpu_blocks, s.dropped_blocks);
    gpu_.release(s.gpu_blocks);
    int64_t bytes = n * block_bytes();
    stall_ += executor_.transfer(bytes, n, Direction::kDeviceToHost, false);
    s.swapped_out_bytes += bytes;
    counters_.swapped_out_bytes += bytes;
  }
  swap_out_pending_.clear();
}

void Engine::schedule_recompute_chunks() {
  if (!chunked_recompute_) return;
  const int64_t S = cost_model().saturation_tokens();
  int64_t left = std::max<int64_t>(S - shape_.num_decode, 1);
  left = std::min(left, config_.max_num_batched_tokens - batch_tokens_);
  auto take = [&](SessionState& s) {
    match_prefix(s);
    int64_t chunk = std::min(left, s.pending_prefill(block_tokens_));
    if (!add_prefill(s, chunk)) return false;
    s.chunked = true;
    left -= chunk;
    return true;
  };
  // Sessions part-way through their rebuild first, then new ones in queue order.
  for (int32_t idx : running_) {
    if (left <= 0) return;
    SessionState& s = sessions_[static_cast<size_t>(idx)];
    if (!decoding(s) && s.pending_prefill(block_tokens_) > 0 && recompute_lane(s)) take(s);
  }
  for (auto it = waiting_.begin(); it != waiting_.end() && left > 0;) {
    SessionState& s = sessions_[static_cast<size_t>(it->idx)];
    if (!recompute_lane(s)) {
      ++it;
      continue;
    }
    if (static_cast<int64_t>(running_.size()) + 1 > config_.max_num_seqs) return;
    if (!take(s)) return;
    it = waiting_.erase(it);
    add_to_running(s.idx);
  }
}

int64_t Engine::running_kv_tokens() const {
  int64_t m = 0;
  for (int32_t idx : running_) m += sessions_[static_cast<size_t>(idx)].kv;
  return m;
}

int64_t Engine::waiting_head_need() const {
  if (waiting_.empty()) return 0;
  const auto& s = sessions_[static_cast<size_t>(waiting_.begin()->idx)];
  return std::max<int64_t>(
      blocks_for(s.context, block_tokens_) - static_cast<int64_t>(s.gpu_blocks.size()), 0);
}

int32_t Engine::decoding_sessions() const {
  int32_t r = 0;
  for (int32_t idx : running_) r += decoding(sessions_[static_cast<size_t>(idx)]);
  return r;
}

int64_t Engine::swap_budget_blocks(Nanos window, Direction dir, bool duplex) const {
  if (window <= 0) return 0;
  Nanos per_block = executor_.cost_model().transfer(block_bytes(), 1, dir, duplex);
  if (per_block <= 0) return gpu_.total() + cpu_.total();  // free transfers: no limit
  return window / per_block;
}

void Engine::discard_paused(int32_t idx) {
  SessionState& s = sessions_[static_cast<size_t>(idx)];
  if (s.phase != Phase::kPaused) throw std::logic_error("discard_paused: session not paused");
  if (s.kv == 0 && s.gpu_blocks.empty() && s.cpu_blocks.empty()) return;
  if (s.swap_out_pending) {
    s.swap_out_pending = false;
    swap_out_pending_.erase(std::find(swap_out_pending_.begin(), swap_out_pending_.end(), idx));
  }
  drop_kv(s);
  s.discarded = true;
  ++counters_.discards;
}

void Engine::request_swap_out(int32_t idx, int64_t max_blocks) {
  const SessionState& s = sessions_[static_cast<size_t>(idx)];
  if (s.phase != Phase::kPaused) throw std::logic_error("request_swap_out: session not paused");
  if (!pipelined_) throw std::logic_error("request_swap_out: policy does not pipeline swaps");
  swap_out_requests_.push_back({idx, max_blocks});
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
    // Swap-outs take the GPU list's head, which follows the CPU list in token order; swap-ins
    // take the CPU list's tail, which precedes the GPU list.
    const auto ncpu = static_cast<int64_t>(s.cpu_blocks.size());
    if (to_cpu)
      log_move(s, true, false, {s.gpu_blocks.begin(), s.gpu_blocks.begin() + n}, moved,
               s.dropped_blocks + ncpu);
    else
      log_move(s, false, false, {s.cpu_blocks.end() - n, s.cpu_blocks.end()}, moved,
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
  (to_cpu ? s.swapped_out_bytes : s.swapped_in_bytes) += bytes;
  (to_cpu ? counters_.swapped_out_bytes : counters_.swapped_in_bytes) += bytes;
}

void Engine::drop_leading(int32_t idx, int64_t n) {
  SessionState& s = sessions_[static_cast<size_t>(idx)];
  if (s.phase != Phase::kPaused) throw std::logic_error("drop_leading: session not paused");
  const auto held = static_cast<int64_t>(s.cpu_blocks.size() + s.gpu_blocks.size());
  // The last block may be partial and holds the newest tokens: it is never a leading chunk.
  n = std::min(n, held - 1);
  if (n <= 0) return;
  const int64_t from_cpu = std::min<int64_t>(n, static_cast<int64_t>(s.cpu_blocks.size()));
  if (live_) log_drop(s, from_cpu, n - from_cpu);
  std::vector<BlockId> c(s.cpu_blocks.begin(), s.cpu_blocks.begin() + from_cpu);
  s.cpu_blocks.erase(s.cpu_blocks.begin(), s.cpu_blocks.begin() + from_cpu);
  cpu_.release(c);
  std::vector<BlockId> g(s.gpu_blocks.begin(), s.gpu_blocks.begin() + (n - from_cpu));
  s.gpu_blocks.erase(s.gpu_blocks.begin(), s.gpu_blocks.begin() + (n - from_cpu));
  gpu_.release(g);
  s.dropped_blocks += n;
  s.recompute_left += n * block_tokens_;
  s.published = 0;
  counters_.dropped_blocks += n;
}

Nanos Engine::progress_swaps(Nanos window, bool transfer_only) {
  if (!pipelined_) return 0;
  const bool want_out = !swap_out_requests_.empty();
  const bool want_in = !swapped_.empty();
  if (!want_out && !want_in) return 0;
  const bool duplex = want_out && want_in;
  int64_t out_budget = swap_budget_blocks(window, Direction::kDeviceToHost, duplex);
  int64_t in_budget = swap_budget_blocks(window, Direction::kHostToDevice, duplex);
  record_.swap_out_budget_tokens = out_budget * block_tokens_;
  record_.swap_in_budget_tokens = in_budget * block_tokens_;
  int64_t moved_out = 0, moved_in = 0;
  for (const auto& [idx, limit] : swap_out_requests_) {
    SessionState& s = sessions_[static_cast<size_t>(idx)];
    if (s.phase != Phase::kPaused) continue;
    int64_t n = std::min(
        {out_budget - moved_out, static_cast<int64_t>(s.gpu_blocks.size()), cpu_.free(), limit});
    if (n <= 0) continue;
    move_blocks(s, /*to_cpu=*/true, n);
    moved_out += n;
  }
  // Swap-ins in FCFS order; a session runs again only when all of its KV is back.
  for (auto it = swapped_.begin(); it != swapped_.end() && moved_in < in_budget;) {
    SessionState& s = sessions_[static_cast<size_t>(it->idx)];
    ++it;
    int64_t n =
        std::min({in_budget - moved_in, static_cast<int64_t>(s.cpu_blocks.size()), gpu_.free()});
    if (n > 0) {
      move_blocks(s, /*to_cpu=*/false, n);
      moved_in += n;
    }
    if (s.cpu_blocks.empty()) finish_swap_in(s);
    if (gpu_.free() == 0) break;
  }
  record_.swap_out_tokens = moved_out * block_tokens_;
  record_.swap_in_tokens = moved_in * block_tokens_;
  if (!transfer_only) return 0;
  Nanos t_out =
      executor_.transfer(moved_out * block_bytes(), moved_out, Direction::kDeviceToHost, duplex);
  Nanos t_in =
      executor_.transfer(moved_in * block_bytes(), moved_in, Direction::kHostToDevice, duplex);
  return std::max(t_out, t_in);
}

bool Engine::evict_idle_kv() {
  // The most recently arrived session that holds GPU KV but is not running.
  int32_t best = -1;
  for (const auto& s : sessions_) {
    if (s.gpu_blocks.empty()) continue;
    if (s.phase != Phase::kPaused && s.phase != Phase::kWaiting) continue;
    if (best < 0 || s.arrival > sessions_[static_cast<size_t>(best)].arrival ||
        (s.arrival == sessions_[static_cast<size_t>(best)].arrival && s.idx > best))
      best = s.idx;
  }
  if (best < 0) return false;
  SessionState& s = sessions_[static_cast<size_t>(best)];
  drop_kv(s);
  if (s.phase == Phase::kPaused) s.discarded = true;
  ++counters_.idle_evictions;
  return true;
}

void Engine::form_batch() {
  batch_.clear();
  shape_.clear();
  batch_tokens_ = 0;
  batch_prefills_ = 0;
  stall_ = 0;
  swap_out_requests_.clear();
  record_ = IterationRecord{};
  do_swap_outs();
  policy_.before_iteration(*this);
  scheduler_->schedule(*this);
}

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
  for (int32_t idx : running_) {
    const auto& s = sessions_[static_cast<size_t>(idx)];
    if (!shared_blocks_) {
      (s.recompute_left > 0 ? recompute : active) += static_cast<double>(s.gpu_blocks.size());
      continue;
    }
    double n = 0;
    for (BlockId b : s.gpu_blocks) {
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

void Engine::log_drop(const SessionState& s, int64_t n_cpu, int64_t n_gpu) {
  if (n_cpu + n_gpu == 0) return;
  KvOp op;
  op.kind = KvOp::Kind::kDrop;
  op.session = s.idx;
  op.kv_tokens = s.kv;
  const auto ncpu = static_cast<int64_t>(s.cpu_blocks.size());
  for (int64_t i = 0; i < n_cpu; ++i) {
    op.src.push_back(s.cpu_blocks[static_cast<size_t>(i)]);
    op.token_block.push_back(s.dropped_blocks + i);
    op.on_cpu.push_back(1);
  }
  for (int64_t i = 0; i < n_gpu; ++i) {
    op.src.push_back(s.gpu_blocks[static_cast<size_t>(i)]);
    op.token_block.push_back(s.dropped_blocks + ncpu + i);
    op.on_cpu.push_back(0);
  }
  if (!work_.ops.empty() && !work_.ops.back().sync)
    throw std::logic_error("live log: a drop after a pipelined swap in the same iteration");
  work_.ops.push_back(std::move(op));
}

void Engine::log_move(const SessionState& s, bool to_cpu, bool sync,
                      const std::vector<BlockId>& src, const std::vector<BlockId>& dst,
                      int64_t first_token_block) {
  if (src.size() != dst.size()) throw std::logic_error("live log: swap lists differ in length");
  if (sync && !work_.ops.empty() && !work_.ops.back().sync)
    throw std::logic_error("live log: a synchronous swap after a pipelined one");
  KvOp op;
  op.kind = to_cpu ? KvOp::Kind::kSwapOut : KvOp::Kind::kSwapIn;
  op.sync = sync;
  op.session = s.idx;
  op.src = src;
  op.dst = dst;
  for (size_t i = 0; i < src.size(); ++i)
    op.token_block.push_back(first_token_block + static_cast<int64_t>(i));
  work_.ops.push_back(std::move(op));
}

void Engine::build_steps(Nanos predicted_forward) {
  work_.steps.clear();
  work_.predicted_forward = predicted_forward;
  work_.with_prefill = batch_prefills_ > 0;
  auto table = [this](const SessionState& s, int64_t positions) {
    const auto n = static_cast<size_t>(blocks_for(positions, block_tokens_));
    if (n > s.gpu_blocks.size()) throw std::logic_error("build_steps: block table too short");
    return std::vector<BlockId>(s.gpu_blocks.begin(), s.gpu_blocks.begin() + static_cast<long>(n));
  };
  for (const Entry& e : batch_) {
    const SessionState& s = sessions_[static_cast<size_t>(e.idx)];
    // A step produces a token when it computes everything still pending (a decode step always
    // does: only the last emitted token lacks KV). The dropped lead is already re-allocated, so
    // what is pending is what follows it.
    const int64_t fresh = e.tokens - e.restore;
    const bool logits = fresh > 0 && s.pending_prefill(block_tokens_) == fresh;
    if (e.restore > 0) {
      // The recomputed lead attends only to itself; it lands in the session's first blocks.
      work_.steps.push_back({e.idx, 0, e.restore, false, true, table(s, e.restore)});
      if (fresh == 0) continue;
    }
    work_.steps.push_back({e.idx, s.kv, fresh, logits, e.recompute, table(s, s.kv + fresh)});
  }
}

void Engine::maybe_start() {
  if (busy_ || !has_work()) return;
  const Nanos t = now();
  account(accounted_until_, t, false, false);
  accounted_until_ = t;
  Nanos forward = 0, transfer = 0;
  while (true) {
    form_batch();
    shape_.total_tokens = batch_tokens_;
    // Live: the profile predicts the window that sizes this iteration's swap budgets; the
    // measured time replaces it below.
    forward = batch_.empty() ? 0 : live_ ? cost_model().forward(shape_) : executor_.run(shape_);
    // With nothing to compute, pending swaps run alone for up to one saturated iteration.
    const bool alone = batch_.empty();
    transfer =
        progress_swaps(alone ? cost_model().T(cost_model().saturation_tokens()) : forward, alone);
    if (!batch_.empty() || stall_ > 0 || transfer > 0) break;
    // Swap-outs that all fell back to discards leave nothing to do.
    if (!has_work()) return;
    if (!evict_idle_kv())
      throw std::logic_error(fmt::format(
          "Engine: no progress possible at t={} ns with {} waiting, {} swapped and no idle KV "
          "to evict (a session larger than the pool should have been skipped at load)",
          t, waiting_.size(), swapped_.size()));
  }
  Nanos busy = std::max(forward, transfer);
  if (live_) {
    build_steps(forward);
    const LiveTimes m = executor_.execute(work_);
    work_.ops.clear();
    work_.steps.clear();
    stall_ = m.stall;
    forward = m.forward;
    busy = m.busy;
  }
  account(t, t + stall_, false, true);
  account(t + stall_, t + stall_ + busy, true, false);
  accounted_until_ = t + stall_ + busy;
  counters_.stall_time += stall_;
  counters_.busy_time += stall_ + busy;
  ++counters_.iterations;
  if (forward > 0) last_forward_ = forward;
  busy_ = true;
  iter_start_ = t;
  record_.start = t;
  record_.stall = stall_;
  record_.forward = forward;
  record_.duration = stall_ + busy;
  record_.batch_tokens = batch_tokens_;
  record_.decodes = shape_.num_decode;
  record_.prefills = batch_prefills_;
  for (const Entry& e : batch_)
    if (e.recompute) record_.recompute_tokens += e.tokens;
  if (observer_) observer_(record_);
  queue_.schedule(t + stall_ + busy, kPrioIterationEnd, replica_, kEvIterationEnd, 0);
}

void Engine::emit_token(SessionState& s) {
  const Nanos t = now();
  s.decoded_in_seg += 1;
  s.context += 1;
  s.chunked = false;
  if (s.decoded_in_seg == 1) {
    s.seg_first_token = t;
    if (s.seg == 0) {
      s.first_token = t;
    } else {
      s.resume_ttft_sum += t - s.intercept_end;
      ++s.resumes_with_token;
      turn_ttfts_.push_back(to_seconds(t - s.intercept_end));
    }
  }
  if (s.decoded_in_seg == s.segment().output) {
    s.decode_time += t - s.seg_first_token;
    s.decode_steps += s.segment().output - 1;
    complete_segment(s);
  }
}

void Engine::complete_segment(SessionState& s) {
  remove_from_running(s.idx);
  const Nanos t = now();
  if (s.last_segment()) {
    gpu_.release(s.gpu_blocks);
    cpu_.release(s.cpu_blocks);
    s.phase = Phase::kFinished;
    s.finish = t;
    return;
  }
  const auto& ic = *s.segment().intercept;
  const Nanos dur = from_seconds(ic.duration_s);
  s.phase = Phase::kPaused;
  paused_.push_back(s.idx);
  s.pause_start = t;
  s.intercept_time += dur;
  ++counters_.pauses;
  queue_.schedule(t + dur, kPrioInterceptEnd, replica_, kEvInterceptEnd, s.idx);
  switch (policy_.on_pause(s, *this)) {
    case PauseAction::kPreserve:
      ++counters_.preserves;
      break;
    case PauseAction::kDiscard:
      ++counters_.discards;
      drop_kv(s);
      s.discarded = true;
      break;
    case PauseAction::kSwap:
      ++counters_.swaps;
      s.swap_out_pending = true;
      swap_out_pending_.push_back(s.idx);
      break;
  }
}

void Engine::on_iteration_end() {
  busy_ = false;
  for (const Entry& e : batch_) {
    SessionState& s = sessions_[static_cast<size_t>(e.idx)];
    if (e.decode) {
      if (s.context != s.kv + 1)
        throw std::logic_error(fmt::format(
            "Engine: session {} decoded with {} of its {} context tokens in KV", s.idx, s.kv,
            s.context));
      s.kv += 1;
      ++counters_.decode_tokens;
      emit_token(s);
      continue;
    }
    int64_t rc = std::min(e.tokens, s.recompute_left);
    s.recompute_left -= rc;
    s.recomputed_tokens += rc;
    counters_.recomputed_tokens += rc;
    counters_.prefill_tokens += e.tokens;
    s.kv += e.tokens - e.restore;
    if (!s.chain.empty()) publish_prefix(s);
    if (s.pending_prefill(block_tokens_) == 0) emit_token(s);
  }
  batch_.clear();
  if (config_.check_invariants) check_invariants();
}

void Engine::close(Nanos end) {
  if (accounted_until_ >= 0) account(accounted_until_, end, false, false);
  accounted_until_ = std::max(accounted_until_, end);
}

void Engine::sample(Nanos t) {
  TimeSample ts;
  ts.t_s = to_seconds(t);
  ts.running = static_cast<int64_t>(running_.size());
  ts.waiting = static_cast<int64_t>(waiting_.size());
  ts.paused = static_cast<int64_t>(paused_.size());
  ts.swapped = static_cast<int64_t>(swapped_.size());
  ts.gpu_blocks_used = gpu_.used();
  ts.cpu_blocks_used = cpu_.used();
  timeseries_.push_back(ts);
}

std::vector<SessionRecord> Engine::records() const {
  std::vector<SessionRecord> out;
  out.reserve(sessions_.size());
  for (const auto& s : sessions_) {
    SessionRecord r;
    r.id = s.src->id;
    r.arrival_s = s.src->arrival_s;
    r.segments = static_cast<int64_t>(s.src->segments.size());
    r.output_tokens = s.src->total_output();
    r.returned_tokens = s.src->returned_tokens();
    r.recomputed_tokens = s.recomputed_tokens;
    r.swapped_out_bytes = s.swapped_out_bytes;
    r.swapped_in_bytes = s.swapped_in_bytes;
    r.preemptions = s.preemptions;
    r.prefix_hit_tokens = s.prefix_hit_tokens;
    r.intercept_s = to_seconds(s.intercept_time);
    if (s.phase != Phase::kFinished) {
      r.status = s.phase == Phase::kSkipped ? "skipped" : "unfinished";
      out.push_back(std::move(r));
      continue;
    }
    r.status = "finished";
    r.first_token_s = to_seconds(s.first_token);
    r.finish_s = to_seconds(s.finish);
    r.ttft_s = to_seconds(s.first_token - s.arrival);
    r.e2e_s = to_seconds(s.finish - s.arrival);
    if (s.decode_steps > 0)
      r.tpot_s = to_seconds(s.decode_time) / static_cast<double>(s.decode_steps);
    if (s.resumes_with_token > 0)
      r.resume_ttft_s = to_seconds(s.resume_ttft_sum) / static_cast<double>(s.resumes_with_token);
    r.normalized_latency_s = to_seconds(s.finish - s.arrival - s.intercept_time) /
                             static_cast<double>(r.output_tokens + r.returned_tokens);
    out.push_back(std::move(r));
  }
  return out;
}

void Engine::check_invariants() const {
  auto fail = [](const std::string& m) { throw std::logic_error("invariant: " + m); };
  gpu_.check();
  cpu_.check();
  if (now() < last_check_) fail("clock went backwards");
  last_check_ = now();
  // Every hold on a block is one listing in one session.
  std::vector<int32_t> gpu_refs(static_cast<size_t>(gpu_.total()), 0);
  std::vector<int32_t> cpu_refs(static_cast<size_t>(cpu_.total()), 0);
  int64_t n_running = 0, n_waiting = 0, n_swapped = 0, n_paused = 0;
  for (const auto& s : sessions_) {
    for (BlockId b : s.gpu_blocks) ++gpu_refs[static_cast<size_t>(b)];
    for (BlockId b : s.cpu_blocks) ++cpu_refs[static_cast<size_t>(b)];
    if (s.kv < 0 || s.kv > s.context)
      fail(fmt::format("session {}: kv {} > context {}", s.idx, s.kv, s.context));
    const auto held =
        static_cast<int64_t>(s.gpu_blocks.size() + s.cpu_blocks.size()) + s.dropped_blocks;
    if (s.phase != Phase::kFinished && held < blocks_for(s.kv, block_tokens_))
      fail(fmt::format("session {}: {} KV tokens in {} blocks", s.idx, s.kv, held));
    if (s.phase == Phase::kRunning && (!s.cpu_blocks.empty() || s.dropped_blocks > 0))
      fail(fmt::format("session {} runs with KV still on CPU or dropped", s.idx));
    switch (s.phase) {
      case Phase::kRunning:
        ++n_running;
        break;
      case Phase::kWaiting:
        ++n_waiting;
        break;
      case Phase::kSwapped:
        ++n_swapped;
        break;
      case Phase::kPaused:
        ++n_paused;
        break;
      case Phase::kFinished:
      case Phase::kSkipped:
        if (!s.gpu_blocks.empty() || !s.cpu_blocks.empty())
          fail(fmt::format("session {} ended but holds blocks", s.idx));
        break;
      case Phase::kPending:
        break;
    }
  }
  for (size_t b = 0; b < gpu_refs.size(); ++b)
    if (gpu_refs[b] != gpu_.refcount(static_cast<BlockId>(b)))
      fail(fmt::format("gpu block {} is listed by {} sessions but held {} times", b, gpu_refs[b],
                       gpu_.refcount(static_cast<BlockId>(b))));
  for (size_t b = 0; b < cpu_refs.size(); ++b)
    if (cpu_refs[b] != cpu_.refcount(static_cast<BlockId>(b)))
      fail(fmt::format("cpu block {} is listed by {} sessions but held {} times", b, cpu_refs[b],
                       cpu_.refcount(static_cast<BlockId>(b))));
  if (n_running != static_cast<int64_t>(running_.size())) fail("running set lost a session");
  if (n_waiting != static_cast<int64_t>(waiting_.size())) fail("waiting queue lost a session");
  if (n_swapped != static_cast<int64_t>(swapped_.size())) fail("swapped queue lost a session");
  if (n_paused != static_cast<int64_t>(paused_.size())) fail("paused list lost a session");
  for (int32_t idx : running_)
    if (sessions_[static_cast<size_t>(idx)].phase != Phase::kRunning)
      fail("running set holds a session that is not running");
  for (const auto& q : waiting_)
    if (sessions_[static_cast<size_t>(q.idx)].phase != Phase::kWaiting)
      fail("waiting queue holds a session that is not waiting");
}

}  // namespace isim::sim
