// Engine::check_invariants (contract in sim/engine.h): reads the state, changes nothing, and
// throws std::logic_error("invariant (replica R): ...") at the first fault. Its parts:
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
//   dropped_blocks, which add_prefill turned into GPU blocks). No other exception exists: an
//   importing session holds its reserved blocks for kv (reserve_import, reserve_fetch set kv
//   first), a waiting session that matched cached prompt blocks has kv = the hit, a swap in
//   progress moves blocks between the lists without changing their sum, and a session whose
//   KV was dropped holds nothing with kv 0.
// - Lists: every session is in exactly one of running, waiting, swapped, paused, exporting,
//   importing, the one its phase names; waiting and swapped keys match the session; a session
//   marked swap_out_pending is paused and listed once for its synchronous swap-out.
// - Per session: 0 <= kv <= context; a running session has no KV on CPU or dropped; its
//   recompute causes sum to recompute_left; the queued prefill total matches the queues.
#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "sim/engine.h"

namespace isim::sim {

namespace {

const char* phase_name(Phase p) {
  static const char* names[kPhases] = {"pending",   "waiting",   "running",
                                       "paused",    "swapped",   "exporting",
                                       "importing", "finished",  "skipped"};
  return names[static_cast<size_t>(p)];
}

// The lists a session can be in; kNoList: none (yet).
enum List : uint8_t { kNoList, kRunning, kWaiting, kSwapped, kPaused, kExporting, kImporting };
const char* list_name(uint8_t l) {
  static const char* names[] = {"no list", "running", "waiting", "swapped",
                                "paused",  "exporting", "importing"};
  return names[l];
}
// The list a session in phase p must be in (kNoList: it must not be on the replica at all).
uint8_t list_of(Phase p) {
  switch (p) {
    case Phase::kRunning: return kRunning;
    case Phase::kWaiting: return kWaiting;
    case Phase::kSwapped: return kSwapped;
    case Phase::kPaused: return kPaused;
    case Phase::kExporting: return kExporting;
    case Phase::kImporting: return kImporting;
    default: return kNoList;
  }
}

[[noreturn]] void fail(int32_t replica, const std::string& m) {
  throw std::logic_error(fmt::format("invariant (replica {}): {}", replica, m));
}

void check_session(int32_t r, const SessionState& s) {
  if (s.kv < 0 || s.kv > s.context)
    fail(r, fmt::format("session {}: kv {} outside [0, context {}]", s.idx, s.kv, s.context));
  if (s.phase == Phase::kRunning && (!s.cpu_blocks.empty() || s.dropped_blocks > 0))
    fail(r, fmt::format("session {} runs with KV still on CPU or dropped", s.idx));
  if (s.phase == Phase::kImporting && (!s.cpu_blocks.empty() || s.dropped_blocks > 0))
    fail(r, fmt::format("session {} imports KV into blocks off the GPU", s.idx));
  int64_t causes = 0;
  for (int64_t c : s.recompute_cause) causes += c;
  if (causes != s.recompute_left)
    fail(r, fmt::format("session {}: recompute causes sum to {}, not {}", s.idx, causes,
                        s.recompute_left));
}

// The sessions that list block b (for a message).
std::string listers(const std::vector<SessionState>& slots, BlockId b, bool gpu) {
  std::string out;
  for (const SessionState& s : slots) {
    if (s.idx < 0) continue;
    const auto& l = gpu ? s.gpu_blocks : s.cpu_blocks;
    const auto k = std::count(l.begin(), l.end(), b);
    if (k > 0) out += fmt::format("{}{}{}", out.empty() ? "" : ", ", s.idx, k > 1 ? " (twice)" : "");
  }
  return out.empty() ? "no session" : "session(s) " + out;
}

}  // namespace

void Engine::check_invariants() const {
  // A pool that passed its check and has not changed since is still consistent.
  if (gpu_.version() != pools_checked_[0]) gpu_.check();
  if (cpu_.version() != pools_checked_[1]) cpu_.check();
  pools_checked_[0] = gpu_.version();
  pools_checked_[1] = cpu_.version();
  if (now() < last_check_) fail(replica_, "clock went backwards");
  last_check_ = now();
  int64_t queued = 0;
  for (size_t h = 0; h < slots_.size(); ++h) {
    const SessionState& s = slots_[h];
    if (s.idx < 0) continue;  // a free slot
    if (s.h != static_cast<int32_t>(h))
      fail(replica_, fmt::format("session {} lost its handle", s.idx));
    check_session(replica_, s);
    if (s.phase == Phase::kWaiting || s.phase == Phase::kSwapped) queued += s.queued_tokens;
  }
  check_lists();
  check_block_owners();
  check_block_counts();
  if (queued != queued_tokens_) fail(replica_, "queued prefill tokens drifted from the queues");
}

void Engine::check_block_owners() const {
  // Per tier, in O(listed blocks): each listed block's refcount equals its listings, and the
  // pool's holds (the sum of all refcounts) equal all listings, so no block is held unlisted.
  // On a mismatch, the O(pool) scan names the first block at fault.
  auto tier = [&](const BlockPool& pool, std::vector<int32_t>& n, bool gpu) {
    n.resize(static_cast<size_t>(pool.touched()), 0);  // all 0 between checks that pass
    int64_t listings = 0;
    for (const SessionState& s : slots_) {
      if (s.idx < 0) continue;
      for (BlockId b : gpu ? s.gpu_blocks : s.cpu_blocks) {
        if (b < 0 || b >= pool.touched())
          fail(replica_, fmt::format("session {} lists {} block {}, {}", s.idx, pool.name(), b,
                                     b < 0 || b >= pool.total() ? "outside the pool"
                                                                : "which the pool never handed out"));
        ++n[static_cast<size_t>(b)];
        ++listings;
      }
    }
    bool agree = listings == pool.holds();
    for (const SessionState& s : slots_) {
      if (s.idx < 0) continue;
      for (BlockId b : gpu ? s.gpu_blocks : s.cpu_blocks) {
        auto& k = n[static_cast<size_t>(b)];
        if (k != 0 && k != pool.refcount(b)) agree = false;
        k = 0;
      }
    }
    if (!agree) name_misheld(pool, gpu);
  };
  tier(gpu_, listed_[0], true);
  tier(cpu_, listed_[1], false);
  // account() relies on this: no other session holds a block past the shareable prefix.
  for (const SessionState& s : slots_) {
    if (s.idx < 0) continue;
    for (size_t k = shareable_gpu_blocks(s); k < s.gpu_blocks.size(); ++k)
      if (gpu_.refcount(s.gpu_blocks[k]) != 1)
        fail(replica_, fmt::format("session {}: block {} past its prompt hashes is held {} times",
                                   s.idx, s.gpu_blocks[k], gpu_.refcount(s.gpu_blocks[k])));
  }
}

void Engine::name_misheld(const BlockPool& pool, bool gpu) const {
  std::vector<int32_t> n(static_cast<size_t>(pool.touched()), 0);
  for (const SessionState& s : slots_)
    if (s.idx >= 0)
      for (BlockId b : gpu ? s.gpu_blocks : s.cpu_blocks) ++n[static_cast<size_t>(b)];
  for (size_t b = 0; b < n.size(); ++b) {
    const auto id = static_cast<BlockId>(b);
    if (n[b] != pool.refcount(id))
      fail(replica_, fmt::format("{} block {} is held {} time(s) but listed by {}", pool.name(), b,
                                 pool.refcount(id), listers(slots_, id, gpu)));
  }
  fail(replica_, fmt::format("{} pool: {} holds, but every refcount matches its listings",
                             pool.name(), pool.holds()));
}

void Engine::check_block_counts() const {
  std::vector<int64_t> in_flight(slots_.size(), 0);
  if (busy_)
    for (const BatchEntry& e : batch_)
      in_flight[static_cast<size_t>(e.h)] += e.decode ? 1 : e.tokens - e.restore;
  for (size_t h = 0; h < slots_.size(); ++h) {
    const SessionState& s = slots_[h];
    if (s.idx < 0) continue;
    const auto gpu = static_cast<int64_t>(s.gpu_blocks.size());
    const auto cpu = static_cast<int64_t>(s.cpu_blocks.size());
    const int64_t held = s.dropped_blocks + cpu + gpu;
    const int64_t need = blocks_for(s.kv + in_flight[h], block_tokens_);
    if (held != need)
      fail(replica_,
           fmt::format("session {} ({}) has {} KV tokens{} needing {} blocks but holds {} ({} "
                       "dropped, {} on CPU, {} on GPU)",
                       s.idx, phase_name(s.phase), s.kv,
                       in_flight[h] > 0 ? fmt::format(" + {} in flight", in_flight[h]) : "", need,
                       held, s.dropped_blocks, cpu, gpu));
  }
}

void Engine::check_lists() const {
  std::vector<uint8_t> in(slots_.size(), kNoList);
  auto mark = [&](int32_t h, uint8_t l) {
    if (h < 0 || static_cast<size_t>(h) >= slots_.size() || slots_[static_cast<size_t>(h)].idx < 0)
      fail(replica_, fmt::format("the {} list holds handle {}, which holds no session",
                                 list_name(l), h));
    uint8_t& at = in[static_cast<size_t>(h)];
    if (at != kNoList)
      fail(replica_, at == l ? fmt::format("session {} is twice in the {} list", session(h).idx,
                                           list_name(l))
                             : fmt::format("session {} is in the {} list and the {} list",
                                           session(h).idx, list_name(at), list_name(l)));
    at = l;
  };
  for (int32_t h : running_) mark(h, kRunning);
  for (int32_t h : paused_) mark(h, kPaused);
  for (int32_t h : exporting_) mark(h, kExporting);
  for (int32_t h : importing_) mark(h, kImporting);
  auto keys = [&](const std::set<QueueKey>& q, uint8_t l) {
    for (const QueueKey& k : q) {
      mark(k.h, l);
      const SessionState& s = session(k.h);
      const Nanos want = l == kWaiting ? s.queue_key : s.arrival;
      if (k.idx != s.idx || k.key != want)
        fail(replica_, fmt::format("the {} queue holds session {} under ({}, {}), not ({}, {})",
                                   list_name(l), s.idx, k.key, k.idx, want, s.idx));
    }
  };
  keys(waiting_, kWaiting);
  keys(swapped_, kSwapped);
  int64_t pending = 0;
  for (size_t h = 0; h < slots_.size(); ++h) {
    const SessionState& s = slots_[h];
    if (s.idx < 0) continue;
    const uint8_t want = list_of(s.phase);
    if (want == kNoList)
      fail(replica_, fmt::format("a slot holds session {}, {}: not on the replica", s.idx,
                                 phase_name(s.phase)));
    if (in[h] != want)
      fail(replica_, fmt::format("session {} is {} but in {}", s.idx, phase_name(s.phase),
                                 in[h] == kNoList ? std::string("no list")
                                                  : fmt::format("the {} list", list_name(in[h]))));
    pending += s.swap_out_pending;
  }
  for (int32_t h : swap_out_pending_)
    if (!session(h).swap_out_pending || session(h).phase != Phase::kPaused)
      fail(replica_, fmt::format("session {} is listed for a swap-out but not paused under one",
                                 session(h).idx));
  if (pending != static_cast<int64_t>(swap_out_pending_.size()))
    fail(replica_, fmt::format("{} sessions await a swap-out but {} are listed", pending,
                               swap_out_pending_.size()));
}

}  // namespace isim::sim
