// The search of `isim headroom` for one policy and one seed: the highest value of a load knob
// (arrival.rate, or arrival.users for a closed loop) at which a pass/fail test holds, found by
// bracketing and bisection. It knows nothing of simulations: the test is a function.
//
// Contract (x: the knob's value; pass(x): one probe):
// - Bracket: probe the start value. While the last probe passed, double x, at most
//   kMaxBracketSteps times; while it failed, halve x (an integer knob: floor(x / 2), not below
//   1), at most kMaxBracketSteps times. The first change of outcome brackets the answer:
//   lo = the highest passing value, hi = the lowest failing one.
// - Bisect: while hi - lo > tolerance x lo (and, for an integer knob, hi - lo > 1), probe
//   mid = (lo + hi) / 2 (integer knob: lo + floor((hi - lo) / 2)); a pass raises lo, a failure
//   lowers hi.
// - Outcome: kFound (lo and hi both probed), kAboveAll (every doubling passed: lo is a lower
//   bound, hi 0), kBelowAll (every halving failed, or an integer knob failed at 1: lo 0, hi the
//   lowest failing value). `probes` lists every probe in the order made; the same function
//   gives the same probes.
// - The search assumes pass is monotone (passes below some value, fails above); a test that is
//   not still ends, after at most 2 x kMaxBracketSteps + the bisection's steps probes.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace isim::exp {

inline constexpr int kMaxBracketSteps = 10;  // doublings or halvings: a factor of 1024 either way

struct BisectProbe {
  double x = 0;
  bool pass = false;
};

struct BisectResult {
  enum Outcome { kFound, kAboveAll, kBelowAll };
  Outcome outcome = kFound;
  double lo = 0;  // the highest passing value (0: none passed)
  double hi = 0;  // the lowest failing value (0: none failed)
  std::vector<BisectProbe> probes;
};

// "found", "above-all" or "below-all" (headroom.json's `bracket`).
std::string outcome_name(BisectResult::Outcome o);

// `start` > 0 (an integer >= 1 when `integer`); `tolerance` > 0.
BisectResult bisect(double start, double tolerance, bool integer,
                    const std::function<bool(double)>& pass);

}  // namespace isim::exp
