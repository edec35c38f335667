#include "policies/tiered_cache.h"

#include <algorithm>
#include <functional>
#include <map>
#include <queue>

#include <fmt/format.h>

namespace isim::policy {

TierParams parse_tier_params(const std::string& policy, const PolicyParams& p) {
  TierParams t;
  t.chunk_tokens =
      p.get<int64_t>("chunk_tokens", t.chunk_tokens,
                     in(1, 16777216).because("2^24 tokens: longer than any model's context"),
                     "tokens per chunk moved between tiers");
  t.swap_threshold = p.get<double>("swap_threshold", t.swap_threshold, from_below(0, 1),
                                   "GPU use above which chunks swap out");
  t.reserve =
      p.get<double>("reserve", t.reserve, from_below(0, 1), "share of GPU blocks kept free");
  p.done("policy '" + policy + "'");
  return t;
}

std::vector<std::pair<std::string, std::string>> TieredCache::describe() const {
  return {{"chunk_tokens", std::to_string(p_.chunk_tokens)},
          {"swap_threshold", fmt::format("{}", p_.swap_threshold)},
          {"reserve", fmt::format("{}", p_.reserve)}};
}

std::vector<std::pair<int32_t, int64_t>> TieredCache::plan(const sim::ReplicaView& e,
                                                           int64_t blocks, bool from_cpu) const {
  const int64_t bt = e.block_tokens();
  const int64_t cb = std::max<int64_t>(1, (p_.chunk_tokens + bt - 1) / bt);
  const double now = sim::to_seconds(e.now());
  std::priority_queue<Pick, std::vector<Pick>, std::greater<Pick>> heap;
  std::map<int32_t, int64_t> taken;  // blocks already planned per session
  auto first_pos = [&](const sim::SessionState& s, int64_t planned) {
    // CPU chunks sit right after the dropped ones; GPU chunks after the CPU ones.
    int64_t lead =
        s.dropped_blocks + planned + (from_cpu ? 0 : static_cast<int64_t>(s.cpu_blocks.size()));
    return lead * bt;
  };
  auto avail = [&](const sim::SessionState& s, int64_t planned) {
    auto n = static_cast<int64_t>(from_cpu ? s.cpu_blocks.size() : s.gpu_blocks.size()) - planned;
    // A drop never takes the last block (it may be partial and holds the newest tokens).
    if (from_cpu && s.gpu_blocks.empty()) n -= 1;
    return n;
  };
  for (int32_t idx : e.paused()) {
    const auto& s = e.session(idx);
    if (avail(s, 0) <= 0) continue;
    const double idle = std::max(now - sim::to_seconds(s.pause_start), 1e-9);
    heap.push({value(e, s, first_pos(s, 0), idle), s.idx, idx, first_pos(s, 0)});
  }
  std::vector<std::pair<int32_t, int64_t>> order;
  while (blocks > 0 && !heap.empty()) {
    Pick p = heap.top();
    heap.pop();
    const auto& s = e.session(p.h);
    int64_t& planned = taken[p.h];
    // Whole chunks: the last one chosen may overshoot the need by less than a chunk.
    const int64_t n = std::min(cb, avail(s, planned));
    if (n <= 0) continue;
    if (planned == 0) order.push_back({p.h, 0});
    planned += n;
    blocks -= n;
    if (avail(s, planned) > 0) {
      const double idle = std::max(now - sim::to_seconds(s.pause_start), 1e-9);
      heap.push({value(e, s, first_pos(s, planned), idle), p.idx, p.h, first_pos(s, planned)});
    }
  }
  for (auto& [idx, n] : order) n = taken[idx];
  return order;
}

void TieredCache::before_iteration(const sim::ReplicaView& e, sim::KvDecisions& d) {
  if (e.paused().empty()) return;
  const auto total = static_cast<double>(e.gpu().total());
  const auto target = static_cast<int64_t>(std::ceil(p_.swap_threshold * total));
  // Ahead of time, keep `target` blocks free; on demand, make room for the next prefill.
  const int64_t free = e.gpu().free();
  const int64_t short_by =
      std::max(target - free, e.waiting_head_need() - (free - e.prefill_reserve()));
  if (short_by <= 0) return;
  // Move the least valuable GPU chunks of idle conversations to CPU, making room on the CPU
  // tier first by dropping its least valuable chunks.
  auto moves = plan(e, short_by, /*from_cpu=*/false);
  int64_t want = 0;
  for (const auto& [idx, n] : moves) want += n;
  const int64_t cpu_short = want - e.cpu().free();
  if (cpu_short > 0)
    for (const auto& [idx, n] : plan(e, cpu_short, /*from_cpu=*/true)) d.drop_leading(idx, n);
  int64_t room = e.cpu().free();
  for (const auto& [idx, n] : moves) {
    if (room >= n) {
      d.request_swap_out(idx, n);
      room -= n;
    } else {
      // Neither tier has room: the chunks are dropped straight from the GPU.
      if (room > 0) d.request_swap_out(idx, room);
      d.drop_leading(idx, n - room);
      room = 0;
    }
  }
}

}  // namespace isim::policy
