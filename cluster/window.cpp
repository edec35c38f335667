// The replicas' pending iteration ends and the windows they advance in (cluster/window.h).
#include "cluster/window.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace isim::cluster {

namespace {

// No iteration with a batch on this replica is shorter (cluster/window.h step_floor). The
// iteration takes stall + max(forward beside copies, link) (+ CPU work, or the max with it):
// never less than the forward when the slowdown and the step overhead are not negative, and
// the forward of a batch of n >= 1 tokens (only such a batch emits tokens) is the linear base +
// slope x n, or the tables' terms (each clamped at 0, dense_us at least its table's least value
// when the table starts at 1 token or below) plus the overhead. Rounding takes off at most a
// nanosecond or two.
sim::Nanos floor_of(const ReplicaSpec& spec) {
  if (spec.executor->name() != "sim" || spec.executor->live()) return 0;
  const sim::Profile& p = spec.executor->cost_model().profile();
  const sim::StepOverhead& o = p.step_overhead;
  if (p.swap.compute_slowdown < 0 || o.fixed_us < 0 || o.per_sequence_us < 0 || o.per_token_us < 0)
    return 0;
  double us = 0;
  if (p.form == sim::ForwardForm::kLinear) {
    if (p.linear.slope_ms_per_token < 0) return 0;
    us = (p.linear.base_ms + p.linear.slope_ms_per_token) * 1e3;
  } else {
    // Every layer runs dense_us at the batch's tokens: inside the table between two of its
    // values, past either end never below the nearer one or 0 (sim/interp.h eval_rising).
    const sim::Curve1D& dense = p.tables.dense_us;
    double dense_min = 0;
    if (!dense.empty() && dense.x.front() <= 1)
      dense_min = std::max(0.0, *std::min_element(dense.y.begin(), dense.y.end()));
    us = p.tables.overhead_us + static_cast<double>(p.model.layers) * dense_min;
  }
  if (!(us > 0)) return 0;
  return std::max<sim::Nanos>(0, sim::from_us(us) - 2);
}

sim::Nanos add(sim::Nanos a, sim::Nanos b) {
  return a >= sim::kForever - b ? sim::kForever : a + b;
}

}  // namespace

Windows::Windows(Fleet& f, std::vector<std::unique_ptr<ReplicaPort>>& ports, int32_t threads)
    : f_(f), ports_(ports), pool_(std::clamp(threads, 1, f.size())) {
  const auto n = static_cast<size_t>(f.size());
  end_.assign(n, sim::kForever);
  started_.assign(n, 0);
  bound_.assign(n, sim::kForever);
  floor_.resize(n);
  for (int32_t r = 0; r < f.size(); ++r) floor_[static_cast<size_t>(r)] = floor_of(f.spec(r));
  part_last_.assign(static_cast<size_t>(pool_.parts()), 0);
  part_ends_.assign(static_cast<size_t>(pool_.parts()), 0);
  part_moved_.resize(static_cast<size_t>(pool_.parts()));
  job_ = [this](int32_t k) {  // part k: a fixed block of replicas
    const auto parts = static_cast<size_t>(pool_.parts()), slots = end_.size();
    const size_t lo = static_cast<size_t>(k) * slots / parts;
    const size_t hi = (static_cast<size_t>(k) + 1) * slots / parts;
    for (size_t r = lo; r < hi; ++r)
      if (end_[r] < h_) advance(static_cast<int32_t>(r), h_, static_cast<size_t>(k));
  };
  order_.init(n, Due{});
  limit_.init(n, sim::kForever);
}

void Windows::refresh(int32_t r) {
  read(r);
  index(r);
}

void Windows::read(int32_t r) {
  const auto i = static_cast<size_t>(r);
  const sim::EventQueue& c = f_.clock(r);
  if (c.empty()) {
    end_[i] = sim::kForever;
    bound_[i] = sim::kForever;
    return;
  }
  const sim::Event& ev = c.top();
  if (end_[i] == ev.time && started_[i] == ev.arg) return;  // known already
  end_[i] = ev.time;
  started_[i] = ev.arg;
  const sim::Engine::Lookahead la = f_.raw(r).lookahead(ev.time);
  bound_[i] = finishes_matter_ ? std::min(la.pause, la.finish) : la.pause;
}

void Windows::index(int32_t r) {
  const auto i = static_cast<size_t>(r);
  if (end_[i] == sim::kForever) {
    order_.set(i, Due{});
    limit_.set(i, sim::kForever);
    return;
  }
  order_.set(i, Due{end_[i], started_[i], r});
  limit_.set(i, std::min(bound_[i], add(end_[i], floor_[i])));
}

const std::vector<int32_t>& Windows::take(sim::Nanos t) {
  due_.clear();
  while (order_.top().end == t) {  // each is refreshed once its end is handled
    due_.push_back(order_.top().r);
    order_.set(static_cast<size_t>(due_.back()), Due{});
  }
  return due_;
}

void Windows::advance(int32_t r, sim::Nanos h, size_t k) {
  sim::EventQueue& clock = f_.clock(r);
  sim::Engine& e = f_.raw(r);
  ReplicaPort& port = *ports_[static_cast<size_t>(r)];
  const auto i = static_cast<size_t>(r);
  while (end_[i] < h) {
    const sim::Event ev = clock.pop();
    port.hold(ev.time, ev.arg);
    e.handle(ev);
    if (!e.busy()) e.maybe_start();
    port.direct();
    read(r);
    if (bound_[i] < h)
      throw std::logic_error(fmt::format(
          "Windows: replica {} launched at t={} ns an iteration that could reach the fleet at "
          "{} ns, inside the window before {} ns (its step floor is not one)",
          r, ev.time, bound_[i], h));
    part_last_[k] = std::max(part_last_[k], ev.time);
    ++part_ends_[k];
  }
  part_moved_[k].push_back(r);
}

std::vector<Effect>& Windows::run(sim::Nanos h, sim::Nanos& last) {
  std::fill(part_last_.begin(), part_last_.end(), 0);
  std::fill(part_ends_.begin(), part_ends_.end(), 0);
  h_ = h;
  pool_.run(job_);
  last = *std::max_element(part_last_.begin(), part_last_.end());
  ++stats_.windows;
  for (int64_t c : part_ends_) stats_.window_ends += c;
  effects_.clear();
  for (std::vector<int32_t>& moved : part_moved_) {
    for (int32_t r : moved) {
      index(r);
      std::vector<Effect>& mine = ports_[static_cast<size_t>(r)]->effects();
      std::move(mine.begin(), mine.end(), std::back_inserter(effects_));
      mine.clear();
    }
    moved.clear();
  }
  // Canonical order: (end, started, replica), then each replica's call order.
  std::sort(effects_.begin(), effects_.end(), [](const Effect& a, const Effect& b) {
    if (a.end != b.end) return a.end < b.end;
    if (a.started != b.started) return a.started < b.started;
    if (a.replica != b.replica) return a.replica < b.replica;
    return a.seq < b.seq;
  });
  return effects_;
}

}  // namespace isim::cluster
