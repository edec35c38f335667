// The replica's lists and queues, their load figures and their invariant checks.
#include "sim/replica_queues.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "sim/invariant.h"

namespace isim::sim {

namespace {

// The lists a session can be in; kNoList: none (yet).
enum List : uint8_t { kNoList, kRunning, kWaiting, kSwapped, kPaused, kExporting, kImporting };
const char* list_name(uint8_t l) {
  static const char* names[] = {"no list", "running",   "waiting",  "swapped",
                                "paused",  "exporting", "importing"};
  return names[l];
}
// The list a session in phase p must be in (kNoList: it must not be on the replica at all).
uint8_t list_of(Phase p) {
  switch (p) {
    case Phase::kRunning:
      return kRunning;
    case Phase::kWaiting:
      return kWaiting;
    case Phase::kSwapped:
      return kSwapped;
    case Phase::kPaused:
      return kPaused;
    case Phase::kExporting:
      return kExporting;
    case Phase::kImporting:
      return kImporting;
    default:
      return kNoList;
  }
}

}  // namespace

void ReplicaQueues::enqueue(Queue& q, int32_t h, Nanos key) {
  SessionState& s = table_[h];
  s.queued_tokens = s.pending_prefill(block_tokens_);
  queued_tokens_ += s.queued_tokens;
  q.insert({key, s.idx, h});
  load_changed();
}

Queue::iterator ReplicaQueues::dequeue(Queue& q, Queue::const_iterator it) {
  queued_tokens_ -= table_[it->h].queued_tokens;
  load_changed();
  return q.erase(it);
}

void ReplicaQueues::wait(int32_t h, Nanos key) {
  SessionState& s = table_[h];
  s.phase = Phase::kWaiting;
  s.queue_key = key;
  enqueue(waiting_, h, key);
}

void ReplicaQueues::wait_swapped(int32_t h) {
  SessionState& s = table_[h];
  s.phase = Phase::kSwapped;
  enqueue(swapped_, h, s.arrival);
}

Queue::const_iterator ReplicaQueues::admit(Queue::const_iterator it) {
  const int32_t h = it->h;
  auto next = dequeue(waiting_, it);
  add(Phase::kRunning, h);
  return next;
}

void ReplicaQueues::unswap(int32_t h) {
  const SessionState& s = table_[h];
  dequeue(swapped_, swapped_.find({s.arrival, s.idx, s.h}));
  wait(h, s.arrival);
}

void ReplicaQueues::requeue_preempted(int32_t h) {
  const SessionState& s = table_[h];
  wait(h, traits_.preempt_to_front ? -(++front_seq_) : s.arrival);
}

void ReplicaQueues::requeue_tokens(SessionState& s) {
  queued_tokens_ -= s.queued_tokens;
  s.queued_tokens = s.pending_prefill(block_tokens_);
  queued_tokens_ += s.queued_tokens;
  load_changed();
}

std::vector<int32_t>& ReplicaQueues::list(Phase p) {
  switch (p) {
    case Phase::kRunning:
      return running_;
    case Phase::kPaused:
      return paused_;
    case Phase::kExporting:
      return exporting_;
    case Phase::kImporting:
      return importing_;
    default:
      throw std::logic_error("ReplicaQueues: no list for that phase");
  }
}

void ReplicaQueues::add(Phase p, int32_t h) {
  SessionState& s = table_[h];
  s.phase = p;
  load_changed();
  if (p != Phase::kRunning) return list(p).push_back(h);
  s.run_key = traits_.admission_order ? ++admit_seq_ : s.arrival;
  auto less = [this](int32_t a, int32_t b) {
    const auto& sa = table_[a];
    const auto& sb = table_[b];
    return sa.run_key != sb.run_key ? sa.run_key < sb.run_key : sa.idx < sb.idx;
  };
  running_.insert(std::upper_bound(running_.begin(), running_.end(), h, less), h);
  running_load_stale_ = true;
}

void ReplicaQueues::remove(Phase p, int32_t h) {
  auto& l = list(p);
  l.erase(std::find(l.begin(), l.end(), h));
  load_changed();
  if (p == Phase::kRunning) running_load_stale_ = true;
}

void ReplicaQueues::mark_swap_out(SessionState& s) {
  s.swap_out_pending = true;
  swap_out_pending_.push_back(s.h);
}

void ReplicaQueues::cancel_swap_out(SessionState& s) {
  if (!s.swap_out_pending) return;
  s.swap_out_pending = false;
  swap_out_pending_.erase(std::find(swap_out_pending_.begin(), swap_out_pending_.end(), s.h));
}

std::vector<int32_t> ReplicaQueues::take_swap_outs() {
  std::vector<int32_t> out;
  out.swap(swap_out_pending_);
  return out;
}

bool ReplicaQueues::has_work() const {
  return !running_.empty() || !waiting_.empty() || !swapped_.empty() || !swap_out_pending_.empty();
}

int64_t ReplicaQueues::running_kv_tokens() const {
  int64_t m = 0;
  for (int32_t h : running_) m += table_[h].kv;
  return m;
}

int64_t ReplicaQueues::waiting_head_need() const {
  if (waiting_.empty()) return 0;
  const auto& s = table_[waiting_.begin()->h];
  return std::max<int64_t>(
      blocks_for(s.context, block_tokens_) - static_cast<int64_t>(s.gpu_blocks.size()), 0);
}

int32_t ReplicaQueues::decoding_sessions() const {
  int32_t r = 0;
  for (int32_t h : running_) r += decoding(table_[h]);
  return r;
}

ReplicaLoad ReplicaQueues::load() const {
  if (running_load_stale_) {
    int64_t pending = 0, decodes = 0;
    for (int32_t h : running_) {
      const auto& s = table_[h];
      pending += s.pending_prefill(block_tokens_);
      decodes += decoding(s);
    }
    running_pending_ = pending;
    running_decodes_ = decodes;
    running_load_stale_ = false;
  }
  ReplicaLoad l;
  l.queued_prefill_tokens = running_pending_ + queued_tokens_;
  // Sessions whose KV is landing here decode next: they count at once, so a burst spreads.
  l.decode_sequences = running_decodes_ + static_cast<int64_t>(importing_.size());
  return l;
}

void ReplicaQueues::check_lists(int32_t r) const {
  const auto& slots = table_.slots();
  std::vector<uint8_t> in(slots.size(), kNoList);
  auto mark = [&](int32_t h, uint8_t l) {
    if (h < 0 || static_cast<size_t>(h) >= slots.size() || slots[static_cast<size_t>(h)].idx < 0)
      invariant_fail(
          r, fmt::format("the {} list holds handle {}, which holds no session", list_name(l), h));
    uint8_t& at = in[static_cast<size_t>(h)];
    if (at != kNoList)
      invariant_fail(r, at == l ? fmt::format("session {} is twice in the {} list", table_[h].idx,
                                              list_name(l))
                                : fmt::format("session {} is in the {} list and the {} list",
                                              table_[h].idx, list_name(at), list_name(l)));
    at = l;
  };
  for (int32_t h : running_) mark(h, kRunning);
  for (int32_t h : paused_) mark(h, kPaused);
  for (int32_t h : exporting_) mark(h, kExporting);
  for (int32_t h : importing_) mark(h, kImporting);
  auto keys = [&](const Queue& q, uint8_t l) {
    for (const QueueKey& k : q) {
      mark(k.h, l);
      const SessionState& s = table_[k.h];
      const Nanos want = l == kWaiting ? s.queue_key : s.arrival;
      if (k.idx != s.idx || k.key != want)
        invariant_fail(r, fmt::format("the {} queue holds session {} under ({}, {}), not ({}, {})",
                                      list_name(l), s.idx, k.key, k.idx, want, s.idx));
    }
  };
  keys(waiting_, kWaiting);
  keys(swapped_, kSwapped);
  int64_t pending = 0;
  for (size_t h = 0; h < slots.size(); ++h) {
    const SessionState& s = slots[h];
    if (s.idx < 0) continue;
    const uint8_t want = list_of(s.phase);
    if (want == kNoList)
      invariant_fail(r, fmt::format("a slot holds session {}, {}: not on the replica", s.idx,
                                    phase_name(s.phase)));
    if (in[h] != want)
      invariant_fail(r,
                     fmt::format("session {} is {} but in {}", s.idx, phase_name(s.phase),
                                 in[h] == kNoList ? std::string("no list")
                                                  : fmt::format("the {} list", list_name(in[h]))));
    pending += s.swap_out_pending;
  }
  for (int32_t h : swap_out_pending_)
    if (!table_[h].swap_out_pending || table_[h].phase != Phase::kPaused)
      invariant_fail(r, fmt::format("session {} is listed for a swap-out but not paused under one",
                                    table_[h].idx));
  if (pending != static_cast<int64_t>(swap_out_pending_.size()))
    invariant_fail(r, fmt::format("{} sessions await a swap-out but {} are listed", pending,
                                  swap_out_pending_.size()));
}

void ReplicaQueues::check_queued(int32_t r) const {
  int64_t queued = 0;
  for (const SessionState& s : table_.slots())
    if (s.idx >= 0 && (s.phase == Phase::kWaiting || s.phase == Phase::kSwapped))
      queued += s.queued_tokens;
  if (queued != queued_tokens_) invariant_fail(r, "queued prefill tokens drifted from the queues");
}

}  // namespace isim::sim
