// Prefill/decode disaggregation on one replica: a session prefilled here leaves with its KV
// (export), and a session arrives with its KV over a link (import). The cluster moves the KV;
// the engine holds the blocks at both ends while it is in flight.
#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "sim/engine.h"

namespace isim::sim {

void Engine::drop_paused(int32_t h, LostCause why) {
  SessionState& s = S(h);
  if (s.phase != Phase::kPaused) throw std::logic_error("drop_paused: session not paused");
  if (s.kv == 0 && s.gpu_blocks.empty() && s.cpu_blocks.empty()) return;
  if (s.swap_out_pending) {
    s.swap_out_pending = false;
    swap_out_pending_.erase(std::find(swap_out_pending_.begin(), swap_out_pending_.end(), h));
  }
  drop_kv(s, why);
  s.discarded = true;
  note(h);
}

bool Engine::can_import(int64_t kv_tokens) const {
  return gpu_.free() >= blocks_for(kv_tokens, block_tokens_);
}

int32_t Engine::reserve_import(SessionState s) {
  if (!s.gpu_blocks.empty() || !s.cpu_blocks.empty() || s.dropped_blocks != 0)
    throw std::logic_error("Engine::reserve_import: the session still holds blocks elsewhere");
  if (!s.moving_paused && (s.context != s.kv + 1 || s.decoded_in_seg < 1))
    throw std::logic_error("Engine::reserve_import: only a prefilled, decoding session moves");
  open(now());
  std::vector<BlockId> blocks;
  if (!gpu_.allocate(blocks_for(s.kv, block_tokens_), blocks))
    throw std::logic_error("Engine::reserve_import: no room (ask can_import first)");
  const int32_t h = take_slot(std::move(s));
  SessionState& t = S(h);
  t.gpu_blocks = std::move(blocks);
  t.phase = Phase::kImporting;
  importing_.push_back(h);
  note(h);
  return h;
}

int32_t Engine::reserve_fetch(SessionState s, int64_t tokens) {
  if (s.phase != Phase::kPaused || s.kv != 0 || tokens <= 0 || tokens > s.context)
    throw std::logic_error("Engine::reserve_fetch: only a paused session without KV fetches "
                           "at most its context");
  s.kv = tokens;
  take_recompute(s, tokens, /*recomputed=*/false);
  s.discarded = false;
  s.moving_paused = true;
  return reserve_import(std::move(s));
}

void Engine::finish_import(int32_t h, Nanos transfer_time) {
  SessionState& s = S(h);
  if (s.phase != Phase::kImporting)
    throw std::logic_error("Engine::finish_import: session not importing");
  importing_.erase(std::find(importing_.begin(), importing_.end(), h));
  ++s.m.kv_transfers;
  // The landed blocks hold the prompt: publish them so local prefills here may share them.
  if (config_.prefix_caching && (!s.chain.empty() || traits_.hash_every_block)) publish_prefix(s);
  if (s.moving_paused) {
    s.moving_paused = false;
    s.phase = Phase::kPaused;
    paused_.push_back(h);
    return note(h);
  }
  s.m.transfer_time += transfer_time;
  s.phase = Phase::kRunning;
  add_to_running(h);
  running_load_stale_ = true;
  note(h);
}

SessionState Engine::finish_export(int32_t h) {
  SessionState& s = S(h);
  if (s.phase != Phase::kExporting)
    throw std::logic_error("Engine::finish_export: session not exporting");
  exporting_.erase(std::find(exporting_.begin(), exporting_.end(), h));
  // Released, the published prompt blocks stay in this replica's prefix cache.
  gpu_.release(s.gpu_blocks);
  SessionState out = std::move(s);
  out.h = -1;
  out.published = 0;
  free_slot(h);
  note_gone(out);
  return out;
}

void Engine::keep_exported(int32_t h) {
  SessionState& s = S(h);
  if (s.phase != Phase::kExporting)
    throw std::logic_error("Engine::keep_exported: session not exporting");
  exporting_.erase(std::find(exporting_.begin(), exporting_.end(), h));
  s.phase = Phase::kRunning;
  add_to_running(h);
  running_load_stale_ = true;
  note(h);
}

bool Engine::can_move_paused(int32_t h) const {
  const SessionState& s = session(h);
  return s.phase == Phase::kPaused && s.kv > 0 && !s.swap_out_pending && s.cpu_blocks.empty() &&
         s.dropped_blocks == 0 &&
         static_cast<int64_t>(s.gpu_blocks.size()) == blocks_for(s.kv, block_tokens_);
}

void Engine::start_move(int32_t h) {
  if (!can_move_paused(h)) throw std::logic_error("Engine::start_move: KV not movable");
  SessionState& s = S(h);
  paused_.erase(std::find(paused_.begin(), paused_.end(), h));
  s.moving_paused = true;
  s.phase = Phase::kExporting;
  exporting_.push_back(h);
  note(h);
}

bool Engine::make_room(int64_t blocks) {
  bool room = true;
  while (room && gpu_.free() < blocks) room = evict_idle_kv();
  note_all();
  return room;
}

// Called by emit_token for a session whose prefill here has just emitted its first token.
void Engine::start_export(SessionState& s) {
  const int32_t h = s.h;
  remove_from_running(h);
  s.export_after_prefill = false;
  s.phase = Phase::kExporting;
  exporting_.push_back(h);
  if (!listener_) throw std::logic_error("Engine: no listener for exported sessions");
  listener_->prefilled(replica_, h, s, iteration_start_);
}

}  // namespace isim::sim
