// Sessions and KV leaving and arriving on one replica: disaggregation, migration, fetches.
#include "sim/handoff.h"

#include <stdexcept>

namespace isim::sim {

bool Handoff::can_import(int64_t kv_tokens) const {
  return kv_.gpu().free() >= blocks_for(kv_tokens, kv_.block_tokens());
}

int32_t Handoff::reserve_import(SessionState s) {
  if (!s.gpu_blocks.empty() || !s.cpu_blocks.empty() || s.dropped_blocks != 0)
    throw std::logic_error("Engine::reserve_import: the session still holds blocks elsewhere");
  if (!s.moving_paused && (s.context != s.kv + 1 || s.decoded_in_seg < 1))
    throw std::logic_error("Engine::reserve_import: only a prefilled, decoding session moves");
  meter_.open(queue_.now());
  std::vector<BlockId> blocks;
  if (!kv_.gpu().allocate(blocks_for(s.kv, kv_.block_tokens()), blocks))
    throw std::logic_error("Engine::reserve_import: no room (ask can_import first)");
  const int32_t h = table_.take(std::move(s), replica_);
  prefix_.adopt(table_[h]);
  table_[h].gpu_blocks = std::move(blocks);
  queues_.add(Phase::kImporting, h);
  notes_.note(h);
  return h;
}

int32_t Handoff::reserve_fetch(SessionState s, int64_t tokens) {
  if (s.phase != Phase::kPaused || s.kv != 0 || tokens <= 0 || tokens > s.context)
    throw std::logic_error(
        "Engine::reserve_fetch: only a paused session without KV fetches "
        "at most its context");
  s.kv = tokens;
  kv_.take_recompute(s, tokens, /*recomputed=*/false);
  s.discarded = false;
  s.moving_paused = true;
  return reserve_import(std::move(s));
}

void Handoff::finish_import(int32_t h, Nanos transfer_time) {
  SessionState& s = table_[h];
  if (s.phase != Phase::kImporting)
    throw std::logic_error("Engine::finish_import: session not importing");
  queues_.remove(Phase::kImporting, h);
  ++s.m.kv_transfers;
  // The landed blocks hold the prompt: publish them so local prefills here may share them.
  if (prefix_.caching() && (!s.chain.empty() || prefix_.hashes_every_block())) prefix_.publish(s);
  if (s.moving_paused) {
    s.moving_paused = false;
    queues_.add(Phase::kPaused, h);
    return notes_.note(h);
  }
  s.m.transfer_time += transfer_time;
  queues_.add(Phase::kRunning, h);
  notes_.note(h);
}

SessionState Handoff::finish_export(int32_t h) {
  SessionState& s = table_[h];
  if (s.phase != Phase::kExporting)
    throw std::logic_error("Engine::finish_export: session not exporting");
  queues_.remove(Phase::kExporting, h);
  // Released, the published prompt blocks stay in this replica's prefix cache.
  kv_.gpu().release(s.gpu_blocks);
  SessionState out = std::move(s);
  out.h = -1;
  out.published = 0;
  table_.free(h);
  notes_.note_gone(out);
  return out;
}

void Handoff::keep_exported(int32_t h) {
  if (table_[h].phase != Phase::kExporting)
    throw std::logic_error("Engine::keep_exported: session not exporting");
  queues_.remove(Phase::kExporting, h);
  queues_.add(Phase::kRunning, h);
  notes_.note(h);
}

bool Handoff::can_move_paused(int32_t h) const {
  return kv_.can_move_paused(table_[h]);
}

void Handoff::start_move(int32_t h) {
  if (!can_move_paused(h)) throw std::logic_error("Engine::start_move: KV not movable");
  queues_.remove(Phase::kPaused, h);
  table_[h].moving_paused = true;
  queues_.add(Phase::kExporting, h);
  notes_.note(h);
}

bool Handoff::make_room(int64_t blocks) {
  bool room = true;
  while (room && kv_.gpu().free() < blocks)
    room = kv_.evict_idle(notes_.listener(), replica_, queue_.now());
  notes_.note_all();
  return room;
}

SessionState Handoff::export_paused(int32_t h, LostCause why) {
  SessionState& s = table_[h];
  if (s.phase != Phase::kPaused) throw std::logic_error("Engine::export_paused: not paused");
  queues_.remove(Phase::kPaused, h);
  queues_.cancel_swap_out(s);
  if (s.kv > 0 || !s.gpu_blocks.empty() || !s.cpu_blocks.empty()) kv_.drop_kv(s, why);
  SessionState out = std::move(s);
  out.h = -1;
  table_.free(h);
  notes_.note_gone(out);
  return out;
}

void Handoff::drop_paused(int32_t h, LostCause why) {
  SessionState& s = table_[h];
  if (s.phase != Phase::kPaused) throw std::logic_error("drop_paused: session not paused");
  if (s.kv == 0 && s.gpu_blocks.empty() && s.cpu_blocks.empty()) return;
  queues_.cancel_swap_out(s);
  kv_.drop_kv(s, why);
  s.discarded = true;
  notes_.note(h);
}

std::pair<int64_t, int64_t> Handoff::restart(LostCause why) {
  if (queues_.has_work() || !queues_.exporting().empty() || !queues_.importing().empty())
    throw std::logic_error("Handoff::restart: the replica still has work");
  int64_t tokens = 0;
  const std::vector<int32_t> paused = queues_.paused();
  for (const int32_t h : paused) {
    tokens += table_[h].kv;
    drop_paused(h, why);
  }
  return {tokens, kv_.gpu().forget_cached()};
}

}  // namespace isim::sim
