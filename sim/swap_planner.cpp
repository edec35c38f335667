// The replica's swaps, synchronous and pipelined, and the policy's KV decisions.
#include "sim/swap_planner.h"

#include <algorithm>
#include <stdexcept>

namespace isim::sim {

void SwapPlanner::prepare() {
  swap_out_requests_.clear();
  do_swap_outs();
  plan();
}

void SwapPlanner::do_swap_outs() {
  for (int32_t h : queues_.take_swap_outs()) {
    SessionState& s = table_[h];
    s.swap_out_pending = false;
    auto n = static_cast<int64_t>(s.gpu_blocks.size());
    if (kv_.live() && !s.cpu_blocks.empty())
      throw std::logic_error("do_swap_outs: a session to swap out already holds CPU blocks");
    if (!kv_.cpu().allocate(n, s.cpu_blocks)) {
      // CPU pool full: the KV cannot be kept anywhere, so it is dropped.
      ++counters_.swap_fallback_discards;
      kv_.drop_kv(s, LostCause::kIntercept);
      s.discarded = true;
      continue;
    }
    batch_.add_stall(kv_.sync_copy(s, /*to_cpu=*/true, n));
  }
}

Nanos SwapPlanner::window() const {
  BatchShape decodes;
  for (int32_t h : queues_.running()) {
    const SessionState& s = table_[h];
    if (!decoding(s)) continue;
    if (decodes.num_decode == 0 || s.kv < decodes.decode_kv_min) decodes.decode_kv_min = s.kv;
    decodes.decode_kv_max = std::max(decodes.decode_kv_max, s.kv);
    ++decodes.num_decode;
    ++decodes.num_logits;
    decodes.decode_kv_tokens += s.kv;
  }
  decodes.total_tokens = decodes.num_decode;
  if (decodes.num_decode == 0) return cost_.T(cost_.saturation_tokens());
  return cost_.forward(decodes);
}

void SwapPlanner::plan() {
  swap_in_plan_.clear();
  swap_budget_ = SwapBudget(cost_, pipelined_ ? window() : 0);
  if (!pipelined_) return;
  const int64_t bytes = kv_.block_bytes(), bt = kv_.block_tokens();
  // Swap-ins first: a resumed session waits for them. Swap-outs get what is left.
  int64_t free = kv_.gpu().free();
  for (const QueueKey& q : queues_.swapped()) {
    const SessionState& s = table_[q.h];
    const int64_t n = swap_budget_.blocks_that_fit(
        bytes, Direction::kHostToDevice, std::min(free, static_cast<int64_t>(s.cpu_blocks.size())));
    if (n <= 0) break;
    swap_budget_.take(n * bytes, Direction::kHostToDevice);
    swap_in_plan_.emplace_back(q.h, n);
    free -= n;
  }
  IterationRecord& record = batch_.record();
  record.swap_window = swap_budget_.window();
  record.swap_in_budget_tokens = 0;
  for (const auto& [h, n] : swap_in_plan_) record.swap_in_budget_tokens += n * bt;
  record.swap_out_budget_tokens =
      swap_budget_.blocks_that_fit(bytes, Direction::kDeviceToHost, kv_.gpu().total()) * bt;
}

Nanos SwapPlanner::progress() {
  if (!pipelined_) return 0;
  const int64_t bytes = kv_.block_bytes(), bt = kv_.block_tokens();
  SwapBudget left = swap_budget_;                  // what the policy planned against
  SwapBudget moved(cost_, swap_budget_.window());  // what actually crosses PCIe
  int64_t moved_out = 0, moved_in = 0;
  for (const auto& [h, limit] : swap_out_requests_) {
    SessionState& s = table_[h];
    if (s.phase != Phase::kPaused) continue;
    const int64_t want =
        std::min({static_cast<int64_t>(s.gpu_blocks.size()), kv_.cpu().free(), limit});
    const int64_t n = left.blocks_that_fit(bytes, Direction::kDeviceToHost, want);
    if (n <= 0) continue;
    kv_.move_blocks(s, /*to_cpu=*/true, n);
    left.take(n * bytes, Direction::kDeviceToHost);
    moved.take(n * bytes, Direction::kDeviceToHost);
    moved_out += n;
  }
  // Planned swap-ins, FCFS; the batch may have taken GPU blocks since, so fewer may move. A
  // session runs again only when all of its KV is back.
  for (const auto& [h, planned] : swap_in_plan_) {
    SessionState& s = table_[h];
    const int64_t n =
        std::min({planned, static_cast<int64_t>(s.cpu_blocks.size()), kv_.gpu().free()});
    if (n > 0) {
      kv_.move_blocks(s, /*to_cpu=*/false, n);
      moved.take(n * bytes, Direction::kHostToDevice);
      moved_in += n;
    }
    if (s.cpu_blocks.empty()) queues_.unswap(h);
  }
  IterationRecord& record = batch_.record();
  record.swap_out_tokens = moved_out * bt;
  record.swap_in_tokens = moved_in * bt;
  record.swap_link = moved.link();
  return record.swap_link;
}

void SwapPlanner::discard_paused(int32_t h) {
  SessionState& s = table_[h];
  if (s.phase != Phase::kPaused) throw std::logic_error("discard_paused: session not paused");
  if (s.kv == 0 && s.gpu_blocks.empty() && s.cpu_blocks.empty()) return;
  queues_.cancel_swap_out(s);
  kv_.drop_kv(s, LostCause::kIntercept);
  s.discarded = true;
  ++counters_.discards;
  notes_.note(h);
}

void SwapPlanner::request_swap_out(int32_t h, int64_t max_blocks) {
  const SessionState& s = table_[h];
  if (s.phase != Phase::kPaused) throw std::logic_error("request_swap_out: session not paused");
  if (!pipelined_) throw std::logic_error("request_swap_out: policy does not pipeline swaps");
  swap_out_requests_.push_back({h, max_blocks});
}

void SwapPlanner::drop_leading(int32_t h, int64_t n) {
  SessionState& s = table_[h];
  if (s.phase != Phase::kPaused) throw std::logic_error("drop_leading: session not paused");
  kv_.drop_leading(s, n);
}

}  // namespace isim::sim
