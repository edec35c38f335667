// vLLM v1's scheduler (Scheduler `vllm-v1`): one token-budget pass over the running requests in
// admission order, preempting the last one when blocks run out; then, only in a step that
// preempted nobody, the waiting queue in order, with its admission gates and partial-prefill
// counts. Its traits ask for admission order, preempted requests at the front, every full
// block hashed and logits for every request.
//
// Read from vLLM's vllm/v1/core/sched/scheduler.py and kv_cache_manager.py (0.19 to 0.30);
// written here. The free-block queue needs nothing new: BlockPool already hands out unhashed
// free blocks first (most recently freed first) and then evicts cached blocks least recently
// released first, a released session's tail blocks before its head, which is the order of
// vLLM's single LRU free queue (unhashed blocks prepended, hashed ones appended in reverse).
#include <algorithm>
#include <memory>
#include <stdexcept>
#include <utility>

#include "sim/batch_steps.h"

namespace isim::sim::schedulers {

namespace {

class VllmV1 final : public Scheduler {
 public:
  std::string name() const override { return "vllm-v1"; }
  SchedulerTraits traits() const override { return {true, true, true, true, true}; }
  void form_batch(BatchContext& c) override {
    partial_prefills_ = 0;
    long_partial_prefills_ = 0;
    const bool preempted = schedule_running_in_order(c);
    schedule_recompute_chunks(c);  // policies that rebuild KV in chunks keep their lane
    if (preempted) return;
    swap_in(c);
    admit_waiting_in_order(c);
  }

 private:
  // Gives every running session, in admission order, its next tokens out of the step's budget
  // (1 for a decode, min(left, long_prefill_token_threshold, budget) for a prefill); when
  // blocks run out it preempts the last running session until the allocation fits or the
  // session itself was preempted, and then stops. Returns true if it preempted.
  bool schedule_running_in_order(BatchContext& c);
  // Admits waiting sessions in queue order (preempted ones first) while the budget,
  // max_num_seqs, the partial-prefill limits, the full-prompt reservation and the watermark
  // allow, and stops at the first that does not fit.
  void admit_waiting_in_order(BatchContext& c);
  // The chunk a prefill with `pending` tokens left gets out of `budget` (0: none fits).
  static int64_t chunk_of(const BatchContext& c, const SessionState& s, int64_t pending,
                          int64_t budget);
  // Whether a waiting session with (hits, unheld hits) may start a `chunk` of its `pending`.
  bool admissible(const BatchContext& c, const SessionState& s, std::pair<int64_t, int64_t> hit,
                  int64_t pending, int64_t chunk) const;
  void note_partial(const BatchContext& c, int64_t pending, int64_t chunk);

  int32_t partial_prefills_ = 0;       // this step: prefills that stay unfinished
  int32_t long_partial_prefills_ = 0;  // of them, longer than long_prefill_token_threshold
};

int64_t VllmV1::chunk_of(const BatchContext& c, const SessionState& s, int64_t pending,
                         int64_t budget) {
  int64_t n = pending;
  if (c.config().long_prefill_token_threshold > 0)
    n = std::min(n, c.config().long_prefill_token_threshold);
  n = std::min(n, budget);
  // KV dropped at the head is rebuilt whole, in the chunk that continues after it, or, larger
  // than a batch, a batch at a time (BatchContext::add_prefill).
  const int64_t bt = c.kv().block_tokens();
  const int64_t restore = s.dropped_blocks * bt;
  if (n < restore) n = c.restores_in_pieces(s) ? n / bt * bt : (restore <= budget ? restore : 0);
  return n;
}

void VllmV1::note_partial(const BatchContext& c, int64_t pending, int64_t chunk) {
  if (chunk >= pending) return;
  ++partial_prefills_;
  const int64_t threshold = c.config().long_prefill_token_threshold;
  if (threshold > 0 && pending > threshold) ++long_partial_prefills_;
}

bool VllmV1::admissible(const BatchContext& c, const SessionState& s,
                        std::pair<int64_t, int64_t> hit, int64_t pending, int64_t chunk) const {
  const EngineConfig& config = c.config();
  const KvResidency& kv = c.kv();
  if (chunk < pending) {
    if (partial_prefills_ >= config.max_num_partial_prefills) return false;
    const bool is_long =
        config.long_prefill_token_threshold > 0 && pending > config.long_prefill_token_threshold;
    if (is_long && long_partial_prefills_ >= config.max_long_partial_prefills) return false;
  }
  const auto held = static_cast<int64_t>(s.gpu_blocks.size()) + hit.first;
  // reserve_full_isl: the whole context must fit now, not only this chunk.
  const int64_t tokens =
      config.reserve_full_isl ? s.context : s.kv + hit.first * kv.block_tokens() + chunk;
  const int64_t need = std::max<int64_t>(blocks_for(tokens, kv.block_tokens()) - held, 0);
  // The watermark spares the first admission into an empty engine.
  const int64_t watermark =
      c.queues().running().empty()
          ? 0
          : static_cast<int64_t>(config.watermark * static_cast<double>(kv.gpu().total()));
  // Hits on unheld cached blocks take them off the free queue.
  const int64_t free_blocks = kv.gpu().free() - hit.second - kv.prefill_reserve();
  return need + watermark <= free_blocks;
}

bool VllmV1::schedule_running_in_order(BatchContext& c) {
  bool preempted = false;
  const std::vector<int32_t>& running = c.queues().running();
  const int64_t bt = c.kv().block_tokens();
  // Index loop: preemption removes the last entries of running.
  for (size_t i = 0; i < running.size(); ++i) {
    const int64_t budget = c.room();
    if (budget <= 0) break;
    const int32_t h = running[i];
    const SessionState& s = c.session(h);
    if (c.recompute_lane(s)) continue;
    const bool decode = decoding(s);
    const int64_t pending = s.pending_prefill(bt);
    const int64_t chunk = decode ? 1 : chunk_of(c, s, pending, budget);
    if (chunk <= 0) continue;
    const Preempted p =
        add_preempting(c, h, [&] { return decode ? c.push_decode(h) : c.add_prefill(h, chunk); });
    if (p.any) preempted = true;
    if (p.self) break;  // it was the last running session
    if (!decode) note_partial(c, pending, chunk);
  }
  return preempted;
}

void VllmV1::admit_waiting_in_order(BatchContext& c) {
  if (c.hold_admissions()) return;
  const int64_t bt = c.kv().block_tokens();
  const Queue& waiting = c.queues().waiting();
  for (auto it = waiting.begin(); it != waiting.end();) {
    const int64_t budget = c.room();
    if (budget <= 0) return;
    const int32_t h = it->h;
    const SessionState& s = c.session(h);
    if (c.recompute_lane(s)) {  // rebuilt in S - R chunks by schedule_recompute_chunks
      ++it;
      continue;
    }
    if (static_cast<int64_t>(c.queues().running().size()) >= c.config().max_num_seqs) return;
    const std::pair<int64_t, int64_t> hit = c.preview_prefix(h);
    const int64_t pending = s.pending_prefill(bt) - hit.first * bt;
    const int64_t chunk = chunk_of(c, s, pending, budget);
    // Head-of-line: the first that does not fit stops admissions, holding nothing.
    if (chunk <= 0 || !admissible(c, s, hit, pending, chunk)) return;
    c.match_prefix(h);
    if (s.pending_prefill(bt) != pending || !c.add_prefill(h, chunk))
      throw std::logic_error("admit_waiting_in_order: an admission passed its gate but failed");
    note_partial(c, pending, chunk);
    it = c.admit(it);
  }
}

}  // namespace

void add_scheduler_vllm_v1(SchedulerRegistry& reg) {
  reg.add("vllm-v1",
          "vLLM v1: running requests first in one token-budget pass, preempt the last "
          "admitted, admit nothing in a step that preempted",
          [] { return std::make_unique<VllmV1>(); });
}

}  // namespace isim::sim::schedulers
