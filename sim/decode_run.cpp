// Coalesced decode steps (sim/decode_run.h).
#include "sim/decode_run.h"

#include <algorithm>
#include <climits>
#include <stdexcept>

#include <fmt/format.h>

namespace isim::sim {

bool DecodeRun::queues_closed() const {
  // The running set is full: every scheduler stops admitting at max_num_seqs, before it
  // touches a waiting session. Swap-ins do not count against it: they need the queue empty.
  const bool full = static_cast<int64_t>(queues_.running().size()) >= config_.max_num_seqs;
  if (!queues_.swapped().empty()) {
    // A synchronous swap-in takes all of the head's blocks at once; the pool only shrinks.
    if (!steady_admission_) return false;
    const SessionState& s = table_[queues_.swapped().begin()->h];
    if (static_cast<int64_t>(s.cpu_blocks.size()) <= kv_.gpu().free()) return false;
  }
  if (queues_.waiting().empty() || full) return true;
  if (!steady_admission_) return false;
  // The head did not fit this step; with no prefix hits to lose or gain (decodes publish no
  // prompt blocks) its need stays and the free pool only shrinks, so it fits at no later step.
  return prefix_.preview(table_[queues_.waiting().begin()->h]).first == 0;
}

size_t DecodeRun::residue(int64_t j) const {
  // Step j decodes at kv0 + j - 1 and takes a block when that is a multiple of block_tokens.
  const int64_t bt = kv_.block_tokens();
  return static_cast<size_t>((bt - (j - 1) % bt) % bt);
}

Nanos DecodeRun::plan(Nanos t0, Nanos busy1) {
  const Nanos t1 = t0 + busy1;
  if (horizon_ == nullptr || pending_) return t1;
  const std::vector<BatchEntry>& entries = batch_.entries();
  const IterationRecord& rec = batch_.record();
  if (entries.empty() || batch_.prefills() > 0 || batch_.stall() > 0 || rec.swap_out_tokens > 0 ||
      rec.swap_in_tokens > 0 || entries.size() != queues_.running().size() ||
      !queues_.exporting().empty() || !queues_.importing().empty() ||
      !queues_.swap_outs().empty() || !queues_closed())
    return t1;
  const Nanos limit = horizon_->run_limit(replica_, t1);
  if (limit <= t1) return t1;
  // The fewest tokens any session has left: step j emits its (decoded + j)th, and only the
  // run's last step may end a segment (the engine ends that step as any other).
  int64_t left = INT64_MAX;
  for (const BatchEntry& e : entries) {
    const SessionState& s = table_[e.h];
    left = std::min(left, s.seg_output - s.decoded_in_seg);
  }
  if (left < 2) return t1;
  const int64_t bt = kv_.block_tokens();
  const auto n = static_cast<int64_t>(entries.size());
  // Positions by residue in one array (a stable counting sort: running order within each),
  // so that no list grows per bucket.
  bucket_start_.assign(static_cast<size_t>(bt) + 1, 0);
  bucket_recompute_.assign(static_cast<size_t>(bt), 0);
  handles_.clear();
  kv0_.clear();
  for (const BatchEntry& e : entries) {
    const SessionState& s = table_[e.h];
    const auto r = static_cast<size_t>(s.kv % bt);
    ++bucket_start_[r + 1];
    if (s.recompute_left > 0) ++bucket_recompute_[r];
    handles_.push_back(e.h);
    kv0_.push_back(s.kv);
  }
  for (size_t r = 1; r < bucket_start_.size(); ++r) bucket_start_[r] += bucket_start_[r - 1];
  cursor_.assign(bucket_start_.begin(), bucket_start_.end() - 1);
  by_residue_.resize(handles_.size());
  for (size_t pos = 0; pos < kv0_.size(); ++pos)
    by_residue_[static_cast<size_t>(cursor_[static_cast<size_t>(kv0_[pos] % bt)]++)] =
        static_cast<int32_t>(pos);
  const WasteMeter::BatchBlocks blocks = meter_.batch_blocks();
  active1_ = blocks.active;
  recompute1_ = blocks.recompute;
  used1_ = kv_.gpu().used();
  const int64_t free1 = kv_.gpu().free();
  const Nanos cpu = batch_.step_overhead(cost_.profile().step_overhead);
  BatchShape shape = batch_.shape();
  busy_.assign(1, busy1);
  forward_.assign(1, batch_.last_forward());
  end_.assign(1, t1);
  counted_.assign(1, cost_.extrapolations());
  start_ = t0;
  int64_t taken = 0;
  Nanos t = t1;
  for (int64_t j = 2; j <= left; ++j) {
    const auto crossing = static_cast<int64_t>(bucket(residue(j)).size());
    if (taken + crossing > free1) break;
    shape.decode_kv_tokens += n;
    shape.decode_kv_max += 1;
    shape.decode_kv_min += 1;
    const int64_t counted = cost_.extrapolations();
    const Nanos forward = cost_.forward(shape);
    // As Engine::form_step prices a decode-only step: no copies beside it, then its CPU work.
    const Nanos busy = config_.async_scheduling ? std::max(forward, cpu) : forward + cpu;
    if (t + busy > limit) {
      cost_.take_back_extrapolations(counted);
      break;
    }
    taken += crossing;
    t += busy;
    counted_.push_back(counted);
    busy_.push_back(busy);
    forward_.push_back(forward);
    end_.push_back(t);
  }
  if (end_.size() < 2) return t1;
  priced_ = cost_.extrapolations();
  pending_ = true;
  ++runs_;
  steps_ += static_cast<int64_t>(end_.size());
  return t;
}

Settled DecodeRun::settle(Nanos t) {
  if (!pending_) return {};
  // Steps ended by t: stepping handled each at its instant, before anything else at it.
  const auto done =
      static_cast<size_t>(std::upper_bound(end_.begin(), end_.end(), t) - end_.begin());
  const size_t k = end_.size();
  if (done >= k) return {};  // its end is being handled: on_iteration_end finishes it
  // A step ending at t itself was ended by stepping before the owner's events at t, and the
  // next one launched only after them: it becomes the last, and the owner ends it now.
  const bool ends_now = done > 0 && end_[done - 1] == t;
  const size_t last = ends_now ? done : done + 1;
  if (last < k) {
    // Steps last+1..k were priced ahead and will not run as planned: their counts go back
    // (only theirs: whatever priced since keeps its own).
    cost_.take_back_extrapolations(cost_.extrapolations() - (priced_ - counted_[last]));
    steps_ -= static_cast<int64_t>(k - last);
    end_.resize(last);
    busy_.resize(last);
    forward_.resize(last);
    counted_.resize(last);
  }
  const Settled out{true, ends_now, end_.back(), last_start()};
  if (last == 1)
    pending_ = false;  // step 1 alone: the state is stepping's already
  else
    finish();
  return out;
}

void DecodeRun::finish() {
  pending_ = false;
  const auto k = static_cast<int64_t>(end_.size());
  const int64_t ended = k - 1;  // steps whose tokens land here; the engine ends step k
  const int64_t total = kv_.gpu().total();
  const bool every_block = prefix_.hashes_every_block();
  int64_t used = used1_, active = active1_, recompute = recompute1_;
  for (int64_t j = 1; j <= k; ++j) {
    if (j >= 2) {
      // Step j is formed at the end of step j - 1: the decodes crossing into a block take it.
      const size_t r = residue(j);
      for (int32_t pos : bucket(r)) {
        SessionState& s = table_[handles_[static_cast<size_t>(pos)]];
        if (!kv_.grow_gpu(s, kv0_[static_cast<size_t>(pos)] + j))
          throw std::logic_error(fmt::format(
              "DecodeRun: replica {}: a planned block was not free at step {}", replica_, j));
      }
      const auto crossing = static_cast<int64_t>(bucket(r).size());
      used += crossing;
      recompute += bucket_recompute_[r];
      active += crossing - bucket_recompute_[r];
      const auto i = static_cast<size_t>(j - 1);
      meter_.decode_step(end_[i - 1], busy_[i], used, total - used, active, recompute);
      counters_.busy_time += busy_[i];
      ++counters_.iterations;
    }
    // Step j ends: each session whose kv reaches a block boundary publishes it.
    if (every_block && j <= ended)
      for (int32_t pos : bucket(residue(j + 1))) {
        SessionState& s = table_[handles_[static_cast<size_t>(pos)]];
        s.kv = kv0_[static_cast<size_t>(pos)] + j;
        prefix_.publish(s);
      }
  }
  // The gaps between tokens after the first, run-length coded once: step j's (j >= 2) is its
  // busy time.
  gaps_.clear();
  Nanos longest = 0;
  for (int64_t j = 2; j <= ended; ++j) {
    const Nanos gap = busy_[static_cast<size_t>(j - 1)];
    longest = std::max(longest, gap);
    if (!gaps_.empty() && gaps_.back().gap_ns == gap)
      ++gaps_.back().count;
    else
      gaps_.push_back({gap, 1});
  }
  const Nanos last = end_[static_cast<size_t>(ended - 1)];
  for (size_t pos = 0; pos < handles_.size(); ++pos) {
    SessionState& s = table_[handles_[pos]];
    if (s.context != kv0_[pos] + 1)
      throw std::logic_error(
          fmt::format("Engine: session {} decoded with {} of its {} context tokens in KV", s.idx,
                      kv0_[pos], s.context));
    s.kv = kv0_[pos] + ended;
    s.context += ended;
    s.decoded_in_seg += ended;
    s.chunked = false;
    const Nanos first = end_[0] - s.last_token;
    s.seg_gaps.add(first, 1);
    for (const GapRun& g : gaps_) s.seg_gaps.add(g.gap_ns, g.count);
    s.seg_max_gap = std::max({s.seg_max_gap, first, longest});
    s.last_token = last;
  }
  counters_.decode_tokens += static_cast<int64_t>(handles_.size()) * ended;
  batch_.start(last);
  batch_.launch(forward_.back());
}

}  // namespace isim::sim
