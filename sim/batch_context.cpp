// The primitive moves a scheduler forms a batch with.
#include "sim/batch_context.h"

#include <algorithm>
#include <stdexcept>

namespace isim::sim {

bool BatchContext::recompute_lane(const SessionState& s) const {
  // A rebuild whose chunk stopped one token short of a session that had emitted tokens leaves it
  // decoding: its last token's KV comes from its next decode, as any decode's does.
  return chunked_recompute_ && (s.recompute_left > 0 || s.chunked) && !decoding(s);
}

bool BatchContext::push_decode(int32_t h) {
  SessionState& s = table_[h];
  if (!kv_.grow_gpu(s, s.kv + 1)) return false;
  batch_.add_decode(h, s.kv);
  return true;
}

bool BatchContext::restores_in_pieces(const SessionState& s) const {
  return s.restored_blocks > 0 ||
         s.dropped_blocks * kv_.block_tokens() > config_.max_num_batched_tokens;
}

bool BatchContext::add_prefill(int32_t h, int64_t chunk) {
  SessionState& s = table_[h];
  const int64_t bt = kv_.block_tokens();
  const int64_t pending = s.pending_prefill(bt);
  const int64_t restore = s.dropped_blocks * bt;
  if (chunk <= 0 || chunk > pending) return false;
  // A lead larger than one batch is recomputed a batch of whole blocks at a time, each piece
  // attending to the lead before it; the KV the session kept waits where it is.
  if (chunk < restore && restores_in_pieces(s)) return add_lead_piece(h, chunk / bt);
  // Otherwise the dropped lead is recomputed whole, in the iteration that prefills after it.
  if (chunk < restore) return false;
  const int64_t fresh = chunk - restore;
  const int64_t need = blocks_for(s.kv + fresh, bt) - static_cast<int64_t>(s.gpu_blocks.size());
  if (need > kv_.gpu().free() - kv_.prefill_reserve()) return false;
  const int64_t restore_from = s.restored_blocks * bt;
  if (restore > 0) restore_lead(s, s.dropped_blocks);
  s.restored_blocks = 0;
  if (!kv_.grow_gpu(s, s.kv + fresh)) throw std::logic_error("add_prefill: blocks vanished");
  batch_.add_prefill(h, chunk, s.recompute_left > 0, restore, restore_from, s.kv, chunk == pending);
  return true;
}

bool BatchContext::add_lead_piece(int32_t h, int64_t blocks) {
  SessionState& s = table_[h];
  const int64_t bt = kv_.block_tokens();
  if (blocks <= 0 || blocks > kv_.gpu().free() - kv_.prefill_reserve()) return false;
  if (s.restored_blocks == 0) ++counters_.oversized_restores;
  const int64_t restore_from = s.restored_blocks * bt;
  restore_lead(s, blocks);
  s.restored_blocks += blocks;
  batch_.add_prefill(h, blocks * bt, /*recompute=*/true, blocks * bt, restore_from, s.kv,
                     /*last=*/false);
  return true;
}

void BatchContext::restore_lead(SessionState& s, int64_t blocks) {
  // The restored blocks go after those restored before them, ahead of the ones kept.
  std::vector<BlockId> lead;
  if (!kv_.gpu().allocate(blocks, lead)) throw std::logic_error("restore_lead: no blocks");
  s.gpu_blocks.insert(s.gpu_blocks.begin() + s.restored_blocks, lead.begin(), lead.end());
  s.dropped_blocks -= blocks;
  // Blocks published before were the ones kept, under their old places in the chain.
  if (s.restored_blocks == 0) s.published = 0;
}

bool BatchContext::start_prefill(int32_t h, int64_t room, bool whole) {
  SessionState& s = table_[h];
  const int64_t bt = kv_.block_tokens();
  const std::pair<int64_t, int64_t> hit = prefix_.preview(s);
  if (hit.first > 0) {
    // add_prefill's test on the state match would leave (hit.first blocks held, none dropped,
    // the unheld hits off the free list), made before any block is taken. A session holding
    // hits it cannot use would be an idle holder whose eviction frees nothing: it would take
    // the same blocks again, fail again and be evicted again, at the same instant.
    const int64_t pending = s.pending_prefill(bt) - hit.first * bt;
    const int64_t chunk = whole ? pending : std::min(pending, room);
    const int64_t need = blocks_for(hit.first * bt + chunk, bt) - hit.first;
    if (chunk <= 0 || chunk > room || need > kv_.gpu().free() - hit.second - kv_.prefill_reserve())
      return false;
  }
  prefix_.match(s);
  const int64_t pending = s.pending_prefill(bt);
  const int64_t chunk = whole ? pending : std::min(pending, room);
  if (chunk > room || !add_prefill(h, chunk)) {
    if (hit.first > 0) throw std::logic_error("start_prefill: a prefill that fit failed");
    return false;
  }
  return true;
}

void BatchContext::preempt(int32_t h) {
  SessionState& s = table_[h];
  queues_.remove(Phase::kRunning, h);
  kv_.drop_kv(s, LostCause::kPreemption);
  ++s.m.preemptions;
  ++counters_.preemptions;
  queues_.requeue_preempted(h);
}

bool BatchContext::swap_in_head() {
  if (queues_.swapped().empty()) return false;
  const int32_t h = queues_.swapped().begin()->h;
  SessionState& s = table_[h];
  auto n = static_cast<int64_t>(s.cpu_blocks.size());
  if (kv_.live() && !s.gpu_blocks.empty())
    throw std::logic_error("swap_in: a synchronously swapped session kept GPU blocks");
  if (!kv_.gpu().allocate(n, s.gpu_blocks)) return false;
  batch_.add_stall(kv_.sync_copy(s, /*to_cpu=*/false, n));
  queues_.unswap(h);
  return true;
}

bool BatchContext::preempt_stuck_prefill() {
  // Nothing ran and no idle KV is left: the running sessions are all part-way through prefills
  // (rebuilds in chunks among them; a decode would have run, preempting for its block) that
  // hold the GPU between them and each need more. As vLLM preempts the last running request
  // when one cannot allocate, the last in running order gives its KV up so the others finish;
  // and as vLLM admits nothing in a step that preempted, neither it nor any other waiting
  // session may take the room back at this instant (it would get stuck there again, be
  // preempted again, and so on forever while the earlier prefills starve).
  if (queues_.running().empty()) return false;
  preempt(queues_.running().back());
  // With nobody left running, nothing can starve: the pool is free for the waiting queue.
  hold_admissions_ = !queues_.running().empty();
  return true;
}

}  // namespace isim::sim
