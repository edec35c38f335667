// The ledger's online tallies of completed turns' output tokens (sim/turn_metrics.h
// TokenTallies), so that no output needs every turn's gaps for its aggregates.
//
// Contract:
// - ItlTally: a multiset of gaps in ns, as (gap, count); `sorted` lists it by gap ascending,
//   each gap once. Its memory grows with the distinct gaps, not with the count.
// - TokenBuckets: output tokens per 1-second bucket, counted from the origin: the earliest send
//   (start) of any completed turn. `sent(t)` is told each session's arrival as it is first
//   placed (in time order: the first call gives the candidate origin, no completed turn can have
//   started before it; a waiting turn that did makes every turn wait for `finish`). A completed
//   turn is bucketed at once when the origin is known; until then (the candidate's first turn has
//   not completed) its tokens wait, and the first turn that starts at the candidate confirms it. A
//   run that never confirms it takes the earliest start among the waiting turns (all the completed
//   ones) at `finish`. So the origin is always exact, and the waiting tokens are only the turns
//   that complete before the earliest session's first turn. A token at t (ns) is in bucket (t -
//   origin) / 1 s, integer division.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/time.h"
#include "sim/turn_metrics.h"

namespace isim::cluster {

class ItlTally {
 public:
  void add(int64_t gap_ns, int64_t count);
  std::vector<sim::GapRun> sorted() const;

 private:
  void grow();
  std::vector<sim::GapRun> slots_;  // open addressing; gap_ns < 0: empty
  size_t used_ = 0;
};

class TokenBuckets {
 public:
  void sent(sim::Nanos t);
  // A completed turn: sent at `start`, first token at `first`, then `gaps`.
  void turn(sim::Nanos start, sim::Nanos first, const std::vector<sim::GapRun>& gaps);
  // The origin (< 0: no completed turn) and the buckets; the tally is spent.
  void finish(int64_t& origin_ns, std::vector<int64_t>& per_second);

 private:
  struct Waiting {
    sim::Nanos start = 0, first = 0;
    int64_t at = 0;
    int32_t words = 0;
  };
  void count(sim::Nanos first, const std::vector<sim::GapRun>& gaps);
  void add(int64_t bucket, int64_t tokens);
  sim::Nanos candidate_ = -1;  // the first arrival placed (-1: none yet; -2: not the earliest)
  sim::Nanos origin_ = -1;     // confirmed
  std::vector<int64_t> per_second_;
  std::vector<Waiting> waiting_;
  sim::GapArena waiting_gaps_;
};

}  // namespace isim::cluster
