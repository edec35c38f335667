#include "sim/swap_budget.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace isim::sim {

Nanos SwapBudget::link() const {
  const bool both = copies_[0] > 0 && copies_[1] > 0;
  return both ? duplex_[0] + duplex_[1] : alone_[0] + alone_[1];
}

Nanos SwapBudget::link_with(int64_t bytes, Direction dir) const {
  SwapBudget next = *this;
  next.take(bytes, dir);
  return next.link();
}

int64_t SwapBudget::blocks_that_fit(int64_t block_bytes, Direction dir, int64_t limit) const {
  if (limit <= 0 || block_bytes <= 0 || !cm_) return 0;
  const auto fits = [&](int64_t n) { return link_with(n * block_bytes, dir) <= window_; };
  const bool idle = copies_[0] == 0 && copies_[1] == 0;
  if (!fits(1)) return idle ? 1 : 0;
  limit = std::min(limit, std::numeric_limits<int64_t>::max() / block_bytes);
  // A copy's time grows with its bytes: double while it fits, then bisect.
  int64_t lo = 1, hi = 0;  // fits(lo); hi > 0: the smallest size known not to fit
  while (lo < limit) {
    const int64_t next = lo > limit / 2 ? limit : 2 * lo;
    if (!fits(next)) {
      hi = next;
      break;
    }
    lo = next;
  }
  if (hi == 0) return lo;
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  return lo;
}

void SwapBudget::take(int64_t bytes, Direction dir) {
  if (!cm_) throw std::logic_error("SwapBudget::take: no cost model");
  if (bytes <= 0) return;
  const size_t i = index(dir);
  ++copies_[i];
  alone_[i] += cm_->transfer(bytes, 1, dir, false);
  duplex_[i] += cm_->transfer(bytes, 1, dir, true);
}

Nanos forward_beside_copies(Nanos forward, Nanos link, double s) {
  if (forward <= 0 || link <= 0 || s <= 0) return forward;
  const double f = static_cast<double>(forward);
  const double overlap = std::min(static_cast<double>(link), (1 + s) * f);
  return forward + static_cast<Nanos>(std::llround(overlap * s / (1 + s)));
}

}  // namespace isim::sim
