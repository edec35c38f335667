// KvResidency's invariant checks (contract in sim/kv_residency.h); they read and change nothing.
// - Pools: free, cached and held blocks partition each pool (BlockPool::check; skipped for a
//   pool whose version has not changed since it last passed).
// - Block owners, per tier: a block's refcount equals the number of sessions listing it. A
//   block held but listed by no session, listed by two sessions while held once, or whose
//   refcount is off by one all show here, each message naming the sessions that list it.
//   Past its shareable prefix (prompt hashes; a fork family's chain) a block has one holder.
// - Block counts: a session holds exactly the blocks its KV needs, never more (a leak inside
//   the session) nor fewer. In the layout [dropped][cpu_blocks][gpu_blocks] of its kv tokens:
//       dropped_blocks + |cpu_blocks| + |gpu_blocks| == blocks_for(kv + in_flight)
//   with in_flight = 0, except while an iteration is in flight for a session in its batch:
//   batch formation allocates the blocks of the tokens the batch computes (push_decode,
//   add_prefill) and kv grows only at the iteration's end, so in_flight is 1 for a decode and
//   chunk - restore for a prefill (the restored lead was already counted in kv and in
//   dropped_blocks, which add_prefill turned into GPU blocks; a lead restored in pieces puts
//   its restored blocks at the head of gpu_blocks, the sum unchanged). No other exception: an
//   importing session holds its reserved blocks for kv (reserve_import, reserve_fetch set kv
//   first), a waiting session that matched cached prompt blocks has kv = the hit, a swap in
//   progress moves blocks between the lists without changing their sum, and a session whose
//   KV was dropped holds nothing with kv 0.
#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "sim/invariant.h"
#include "sim/kv_residency.h"

namespace isim::sim {

namespace {

// The sessions that list block b (for a message).
std::string listers(const std::vector<SessionState>& slots, BlockId b, bool gpu) {
  std::string out;
  for (const SessionState& s : slots) {
    if (s.idx < 0) continue;
    const auto& l = gpu ? s.gpu_blocks : s.cpu_blocks;
    const auto k = std::count(l.begin(), l.end(), b);
    if (k > 0)
      out += fmt::format("{}{}{}", out.empty() ? "" : ", ", s.idx, k > 1 ? " (twice)" : "");
  }
  return out.empty() ? "no session" : "session(s) " + out;
}

// The O(pool) scan after a mismatch: names the first block at fault.
[[noreturn]] void name_misheld(int32_t r, const std::vector<SessionState>& slots,
                               const BlockPool& pool, bool gpu) {
  std::vector<int32_t> n(static_cast<size_t>(pool.touched()), 0);
  for (const SessionState& s : slots)
    if (s.idx >= 0)
      for (BlockId b : gpu ? s.gpu_blocks : s.cpu_blocks) ++n[static_cast<size_t>(b)];
  for (size_t b = 0; b < n.size(); ++b) {
    const auto id = static_cast<BlockId>(b);
    if (n[b] != pool.refcount(id))
      invariant_fail(r, fmt::format("{} block {} is held {} time(s) but listed by {}", pool.name(),
                                    b, pool.refcount(id), listers(slots, id, gpu)));
  }
  invariant_fail(r, fmt::format("{} pool: {} holds, but every refcount matches its listings",
                                pool.name(), pool.holds()));
}

}  // namespace

void KvResidency::check_pools() const {
  // A pool that passed its check and has not changed since is still consistent.
  if (gpu_.version() != pools_checked_[0]) gpu_.check();
  if (cpu_.version() != pools_checked_[1]) cpu_.check();
  pools_checked_[0] = gpu_.version();
  pools_checked_[1] = cpu_.version();
}

void KvResidency::check_blocks(int32_t r, const std::vector<int64_t>& in_flight) const {
  const std::vector<SessionState>& slots = table_.slots();
  // Per tier, in O(listed blocks): each listed block's refcount equals its listings, and the
  // pool's holds (the sum of all refcounts) equal all listings, so no block is held unlisted.
  // On a mismatch, the O(pool) scan names the first block at fault.
  auto tier = [&](const BlockPool& pool, std::vector<int32_t>& n, bool gpu) {
    n.resize(static_cast<size_t>(pool.touched()), 0);  // all 0 between checks that pass
    int64_t listings = 0;
    for (const SessionState& s : slots) {
      if (s.idx < 0) continue;
      for (BlockId b : gpu ? s.gpu_blocks : s.cpu_blocks) {
        if (b < 0 || b >= pool.touched())
          invariant_fail(
              r, fmt::format("session {} lists {} block {}, {}", s.idx, pool.name(), b,
                             b < 0 || b >= pool.total() ? "outside the pool"
                                                        : "which the pool never handed out"));
        ++n[static_cast<size_t>(b)];
        ++listings;
      }
    }
    bool agree = listings == pool.holds();
    for (const SessionState& s : slots) {
      if (s.idx < 0) continue;
      for (BlockId b : gpu ? s.gpu_blocks : s.cpu_blocks) {
        auto& k = n[static_cast<size_t>(b)];
        if (k != 0 && k != pool.refcount(b)) agree = false;
        k = 0;
      }
    }
    if (!agree) name_misheld(r, slots, pool, gpu);
  };
  tier(gpu_, listed_[0], true);
  tier(cpu_, listed_[1], false);
  // WasteMeter::account relies on this: no other session holds a block past the shareable
  // prefix.
  for (const SessionState& s : slots) {
    if (s.idx < 0) continue;
    for (size_t k = shareable_gpu_blocks(s); k < s.gpu_blocks.size(); ++k)
      if (gpu_.refcount(s.gpu_blocks[k]) != 1)
        invariant_fail(
            r, fmt::format("session {}: block {} past its prompt hashes is held {} times", s.idx,
                           s.gpu_blocks[k], gpu_.refcount(s.gpu_blocks[k])));
  }
  for (size_t h = 0; h < slots.size(); ++h) {
    const SessionState& s = slots[h];
    if (s.idx < 0) continue;
    const auto gpu = static_cast<int64_t>(s.gpu_blocks.size());
    const auto cpu = static_cast<int64_t>(s.cpu_blocks.size());
    const int64_t held = s.dropped_blocks + cpu + gpu;
    const int64_t need = blocks_for(s.kv + in_flight[h], block_tokens_);
    if (held != need)
      invariant_fail(
          r, fmt::format("session {} ({}) has {} KV tokens{} needing {} blocks but holds {} ({} "
                         "dropped, {} on CPU, {} on GPU)",
                         s.idx, phase_name(s.phase), s.kv,
                         in_flight[h] > 0 ? fmt::format(" + {} in flight", in_flight[h]) : "", need,
                         held, s.dropped_blocks, cpu, gpu));
  }
}

}  // namespace isim::sim
