// Bracketing and bisection over a load knob (experiments/headroom/bisect.h).
#include "experiments/headroom/bisect.h"

#include <cmath>

namespace isim::exp {

std::string outcome_name(BisectResult::Outcome o) {
  switch (o) {
    case BisectResult::kFound:
      return "found";
    case BisectResult::kAboveAll:
      return "above-all";
    case BisectResult::kBelowAll:
      return "below-all";
  }
  return "found";
}

BisectResult bisect(double start, double tolerance, bool integer,
                    const std::function<bool(double)>& pass) {
  BisectResult r;
  auto probe = [&](double x) {
    const bool ok = pass(x);
    r.probes.push_back({x, ok});
    return ok;
  };
  double x = integer ? std::floor(start) : start;
  if (probe(x)) {
    r.lo = x;
    for (int k = 0; k < kMaxBracketSteps && r.hi == 0; ++k) {
      x *= 2;
      if (probe(x)) {
        r.lo = x;
      } else {
        r.hi = x;
      }
    }
    if (r.hi == 0) {
      r.outcome = BisectResult::kAboveAll;
      return r;
    }
  } else {
    r.hi = x;
    for (int k = 0; k < kMaxBracketSteps && r.lo == 0; ++k) {
      if (integer && x <= 1) break;
      x = integer ? std::floor(x / 2) : x / 2;
      if (probe(x)) {
        r.lo = x;
      } else {
        r.hi = x;
      }
    }
    if (r.lo == 0) {
      r.outcome = BisectResult::kBelowAll;
      return r;
    }
  }
  while (r.hi - r.lo > tolerance * r.lo && !(integer && r.hi - r.lo <= 1)) {
    const double mid = integer ? r.lo + std::floor((r.hi - r.lo) / 2) : (r.lo + r.hi) / 2;
    if (probe(mid)) {
      r.lo = mid;
    } else {
      r.hi = mid;
    }
  }
  return r;
}

}  // namespace isim::exp
