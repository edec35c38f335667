// SwapBudget: the PCIe time of one iteration's pipelined swaps, shared by both directions, and
// what copies beside a forward pass cost it. The engine moves swaps with it and min-waste plans
// with a copy of the same object (ReplicaView::swap_budget), so both see one budget.
//
// Contract:
// - A copy is one gather (swap-out) or scatter (swap-in) call moving some of one session's
//   blocks in one direction, as live-cuda submits one kernel per session move. The engine
//   issues at most one copy per session and direction per iteration. Alone on the link a copy
//   of b bytes takes CostModel::transfer(b, 1, dir): per_copy_overhead + b / bw(b), the
//   bandwidth read from the direction's curve at that copy's bytes.
// - Both directions share one budget. The iteration's link time is the sum of its copies'
//   times; once copies go both ways in the iteration, every copy is priced at the duplex rate
//   (transfer(b, 1, dir, duplex = true): b / (bw(b) x duplex_factor)).
// - `window` is what the copies may take: the engine's forward estimate for the iteration.
//   A copy fits while the link time stays <= window. An idle link always admits one block, so
//   a copy longer than the window still progresses (the iteration stretches to it).
// - forward_beside_copies: the forward pass runs (1 + compute_slowdown) x slower while copies
//   run beside it. Copies start with the forward, so for forward F and link time L:
//     F' = F + min(L, (1 + s) F) x s / (1 + s),
//   i.e. F(1 + s) when the copies outlast it; the iteration takes max(F', L).
#pragma once

#include <array>
#include <cstdint>

#include "sim/cost_model.h"
#include "sim/time.h"

namespace isim::sim {

class SwapBudget {
 public:
  SwapBudget() = default;
  SwapBudget(const CostModel& cm, Nanos window) : cm_(&cm), window_(window) {}

  Nanos window() const { return window_; }
  // Link time of the copies taken so far, with the duplex rule.
  Nanos link() const;
  // The most blocks (<= limit) that one more copy in `dir` may move within the window.
  int64_t blocks_that_fit(int64_t block_bytes, Direction dir, int64_t limit) const;
  // Records one copy of `bytes` in `dir`.
  void take(int64_t bytes, Direction dir);
  int64_t copies(Direction dir) const { return copies_[index(dir)]; }

 private:
  static size_t index(Direction d) { return d == Direction::kDeviceToHost ? 0 : 1; }
  Nanos link_with(int64_t bytes, Direction dir) const;

  const CostModel* cm_ = nullptr;
  Nanos window_ = 0;
  std::array<int64_t, 2> copies_{0, 0};
  std::array<Nanos, 2> alone_{0, 0};   // sum of the copies' times, one direction on the link
  std::array<Nanos, 2> duplex_{0, 0};  // the same copies at the duplex rate
};

// The forward time F' of a pass of `forward` with `link` of copies beside it (see above).
Nanos forward_beside_copies(Nanos forward, Nanos link, double compute_slowdown);

}  // namespace isim::sim
