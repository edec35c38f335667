#include "cluster/turn_tally.h"

#include <algorithm>
#include <stdexcept>

namespace isim::cluster {

namespace {
size_t slot_of(int64_t gap, size_t mask) {
  // Fibonacci hashing: gaps are multiples of small steps, so mix the bits first.
  return static_cast<size_t>((static_cast<uint64_t>(gap) * 0x9E3779B97F4A7C15ull) >> 20) & mask;
}
}  // namespace

void ItlTally::add(int64_t gap_ns, int64_t count) {
  if (count <= 0) return;
  if (2 * (used_ + 1) > slots_.size()) grow();
  const size_t mask = slots_.size() - 1;
  for (size_t k = slot_of(gap_ns, mask);; k = (k + 1) & mask) {
    sim::GapRun& s = slots_[k];
    if (s.gap_ns == gap_ns) {
      s.count += count;
      return;
    }
    if (s.gap_ns < 0) {
      s = {gap_ns, count};
      ++used_;
      return;
    }
  }
}

void ItlTally::grow() {
  std::vector<sim::GapRun> old = std::move(slots_);
  slots_.assign(std::max<size_t>(64, 2 * old.size()), sim::GapRun{-1, 0});
  used_ = 0;
  for (const sim::GapRun& s : old)
    if (s.gap_ns >= 0) add(s.gap_ns, s.count);
}

std::vector<sim::GapRun> ItlTally::sorted() const {
  std::vector<sim::GapRun> out;
  out.reserve(used_);
  for (const sim::GapRun& s : slots_)
    if (s.gap_ns >= 0) out.push_back(s);
  std::sort(out.begin(), out.end(),
            [](const sim::GapRun& a, const sim::GapRun& b) { return a.gap_ns < b.gap_ns; });
  return out;
}

void TokenBuckets::sent(sim::Nanos t) {
  if (candidate_ == -1) candidate_ = t;
}

void TokenBuckets::turn(sim::Nanos start, sim::Nanos first, const std::vector<sim::GapRun>& gaps) {
  if (origin_ >= 0) {
    if (start < origin_)
      throw std::logic_error("TokenBuckets: a turn sent before the earliest completed send");
    count(first, gaps);
    return;
  }
  if (start != candidate_) {  // the origin is not known yet: the turn waits
    const sim::GapArena::Span s = waiting_gaps_.append(gaps);
    waiting_.push_back({start, first, s.at, s.words});
    return;
  }
  for (const Waiting& w : waiting_)
    if (w.start < start) {  // not the earliest after all: everything waits for finish
      candidate_ = -2;
      turn(start, first, gaps);
      return;
    }
  origin_ = start;
  count(first, gaps);
  for (const Waiting& w : waiting_) count(w.first, waiting_gaps_.runs(w.at, w.words));
  std::vector<Waiting>().swap(waiting_);
  waiting_gaps_.clear();
}

void TokenBuckets::finish(int64_t& origin_ns, std::vector<int64_t>& per_second) {
  if (origin_ < 0 && !waiting_.empty()) {  // the candidate's first turn never completed
    origin_ = waiting_.front().start;
    for (const Waiting& w : waiting_) origin_ = std::min(origin_, w.start);
    for (const Waiting& w : waiting_) count(w.first, waiting_gaps_.runs(w.at, w.words));
    std::vector<Waiting>().swap(waiting_);
    waiting_gaps_.clear();
  }
  origin_ns = origin_;
  per_second = std::move(per_second_);
  per_second_.clear();
}

void TokenBuckets::add(int64_t bucket, int64_t tokens) {
  const auto k = static_cast<size_t>(bucket);
  if (k >= per_second_.size()) per_second_.resize(k + 1, 0);
  per_second_[k] += tokens;
}

void TokenBuckets::count(sim::Nanos first, const std::vector<sim::GapRun>& gaps) {
  constexpr sim::Nanos kSecond = sim::kNanosPerSecond;
  int64_t k = (first - origin_) / kSecond;  // the bucket of the latest token counted
  sim::Nanos edge = origin_ + (k + 1) * kSecond;
  int64_t in_k = 1;  // tokens counted in bucket k, not yet added
  sim::Nanos t = first;
  for (const sim::GapRun& g : gaps) {
    int64_t left = g.count;
    while (left > 0) {
      const sim::Nanos end = t + left * g.gap_ns;  // the run's last token
      if (end < edge) {  // the rest of the run is in bucket k: no division
        in_k += left;
        t = end;
        break;
      }
      // Tokens at t + g, t + 2g, ... before the edge stay in bucket k; the next starts a bucket.
      const int64_t n = (edge - 1 - t) / g.gap_ns;  // g > 0 here: t < edge <= end
      in_k += n;
      t += (n + 1) * g.gap_ns;
      left -= n + 1;
      add(k, in_k);
      k = (t - origin_) / kSecond;
      edge = origin_ + (k + 1) * kSecond;
      in_k = 1;
    }
  }
  add(k, in_k);
}

}  // namespace isim::cluster
