#include "cluster/link.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace isim::cluster {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
// A flow is done when what is left is below a millionth of a byte per byte moved: the
// rounding of exact completion times to whole nanoseconds.
bool done(double left, double size) { return left <= 1e-9 * size + 1e-6; }
// Changes within this much of an instant (ns) happen at it: next_event() rounds to whole ns.
constexpr double kSlack = 1e-3;
}  // namespace

Link::Link(LinkSpec spec) : spec_(std::move(spec)), bytes_per_ns_(spec_.gbps) {
  if (!(spec_.gbps > 0)) throw std::logic_error("Link: bandwidth must be > 0");
}

int32_t Link::moving(double t) const {
  int32_t n = 0;
  for (const Flow& f : flows_) n += f.joins_at <= t;
  return n;
}

double Link::next_change() const {
  const int32_t n = moving(t_);
  double next = kInf;
  for (const Flow& f : flows_) {
    if (f.joins_at > t_) next = std::min(next, f.joins_at);
    else next = std::min(next, t_ + f.left * n / bytes_per_ns_);
  }
  return next;
}

void Link::progress(double to) {
  const int32_t n = moving(t_);
  if (n > 0 && to > t_) {
    const double each = (to - t_) * bytes_per_ns_ / n;
    for (Flow& f : flows_)
      if (f.joins_at <= t_) {
        const double m = std::min(each, f.left);
        f.left -= m;
        moved_ += m;
      }
  }
  t_ = std::max(t_, to);
}

int64_t Link::start(sim::Nanos now, double bytes) {
  const auto t = static_cast<double>(now);
  if (t < t_ - kSlack) throw std::logic_error("Link::start: before the link's clock");
  // Transfers due by now complete first; the next advance reports them.
  for (int64_t id : advance(now)) finished_.push_back(id);
  flows_.push_back({next_id_, t + spec_.latency_s * 1e9, std::max(bytes, 0.0), bytes});
  return next_id_++;
}

std::vector<int64_t> Link::advance(sim::Nanos now) {
  const auto t = static_cast<double>(now);
  std::vector<int64_t> out;
  out.swap(finished_);
  while (!flows_.empty()) {
    const double c = next_change();
    if (c > t + kSlack) break;
    progress(c);
    // Every flow done at this instant completes, by id (flows_ stays in start order). A flow
    // whose rest would take less than the clock can resolve (late in a long run, t_ + dt == t_
    // in doubles) is done too: otherwise the clock could never pass it.
    const int32_t n = moving(t_);
    for (auto it = flows_.begin(); it != flows_.end();) {
      const bool left_unresolvable = t_ + it->left * n / bytes_per_ns_ <= t_;
      if (it->joins_at <= t_ && (done(it->left, it->size) || left_unresolvable)) {
        moved_ += it->left;
        out.push_back(it->id);
        it = flows_.erase(it);
      } else {
        ++it;
      }
    }
  }
  progress(t);
  return out;
}

sim::Nanos Link::next_event() const {
  if (!finished_.empty()) return static_cast<sim::Nanos>(std::ceil(t_ - kSlack));
  if (flows_.empty()) return sim::kForever;
  return static_cast<sim::Nanos>(std::ceil(next_change() - kSlack));
}

void LinkSet::schedule(sim::EventQueue& q, int32_t target, int32_t type, int32_t li) {
  const sim::Nanos t = (*this)[li].next_event();
  sim::Nanos& at = at_[static_cast<size_t>(li)];
  if (t == sim::kForever || at == t) return;
  q.schedule(t, sim::kPrioTransfer, target, type, li);
  at = t;
}

std::vector<int64_t> LinkSet::fire(int32_t li, sim::Nanos now) {
  sim::Nanos& at = at_[static_cast<size_t>(li)];
  if (at == now) at = -1;
  return (*this)[li].advance(now);
}

}  // namespace isim::cluster
