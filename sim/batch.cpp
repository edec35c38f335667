// The batch in flight.
#include "sim/batch.h"

#include <algorithm>

namespace isim::sim {

void BatchInFlight::begin() {
  entries_.clear();
  shape_.clear();
  tokens_ = 0;
  prefills_ = 0;
  stall_ = 0;
  record_ = IterationRecord{};
}

void BatchInFlight::add_decode(int32_t h, int64_t kv) {
  entries_.push_back({h, 1, true, false, 0});
  ++tokens_;
  if (shape_.num_decode == 0 || kv < shape_.decode_kv_min) shape_.decode_kv_min = kv;
  shape_.decode_kv_max = std::max(shape_.decode_kv_max, kv);
  ++shape_.num_decode;
  shape_.decode_kv_tokens += kv;
  ++shape_.num_logits;
}

void BatchInFlight::add_prefill(int32_t h, int64_t chunk, bool recompute, int64_t restore,
                                int64_t restore_from, int64_t kv, bool last) {
  entries_.push_back({h, chunk, false, recompute, restore, restore_from});
  tokens_ += chunk;
  ++prefills_;
  const int64_t fresh = chunk - restore;
  // The recomputed lead attends only to the lead; the rest attends to everything before it.
  if (restore > 0) shape_.prefills.push_back({restore, restore_from});
  if (fresh > 0) shape_.prefills.push_back({fresh, kv});
  if (last) ++shape_.num_logits;
}

Nanos BatchInFlight::step_overhead(const StepOverhead& o) const {
  const double us = o.fixed_us + o.per_sequence_us * static_cast<double>(entries_.size()) +
                    o.per_token_us * static_cast<double>(tokens_);
  return from_us(us);
}

void BatchInFlight::seal(bool logits_for_all) {
  if (logits_for_all) shape_.num_logits = static_cast<int32_t>(entries_.size());
  shape_.total_tokens = tokens_;
}

void BatchInFlight::launch(Nanos forward) {
  if (forward > 0) last_forward_ = forward;
  busy_ = true;
}

const std::vector<BatchEntry>& BatchInFlight::end() {
  busy_ = false;
  ended_.swap(entries_);
  entries_.clear();
  return ended_;
}

const IterationRecord& BatchInFlight::fill_record(int32_t replica, Nanos t, Nanos forward,
                                                  Nanos busy) {
  record_.replica = replica;
  record_.start = t;
  record_.stall = stall_;
  record_.forward = forward;
  record_.duration = stall_ + busy;
  record_.batch_tokens = tokens_;
  record_.decodes = shape_.num_decode;
  record_.prefills = prefills_;
  for (const BatchEntry& e : entries_)
    if (e.recompute) record_.recompute_tokens += e.tokens;
  return record_;
}

std::vector<int64_t> BatchInFlight::in_flight(size_t handles) const {
  std::vector<int64_t> n(handles, 0);
  if (busy_)
    for (const BatchEntry& e : entries_)
      n[static_cast<size_t>(e.h)] += e.decode ? 1 : e.tokens - e.restore;
  return n;
}

}  // namespace isim::sim
