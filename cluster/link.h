// Link: one modelled interconnect (an NVLink port, an InfiniBand or RoCE NIC) that KV transfers
// share, as a fluid model.
//
// Contract:
// - A transfer started at t with B bytes first waits the link's latency, then moves; all
//   transfers moving at the same instant share the bandwidth equally (each gets gbps / n).
//   Rates are recomputed whenever a transfer starts moving or completes, so a lone transfer
//   takes latency + B / bandwidth, and two equal ones started together take
//   latency + 2B / bandwidth each.
// - `next_event()` is the earliest instant at which something changes (a transfer starts
//   moving or completes), rounded up to the nanosecond; kForever when idle. The owner calls
//   `advance(t)` at that instant (or any later one, or earlier: it is idempotent) and gets the
//   transfers completed by t, in completion order (ties by id). Transfers that complete while
//   a later one starts are reported by the next advance, and next_event() is then now.
// - `start` at a time before the last advance is a std::logic_error (time goes forward).
// - Deterministic: the same starts give the same completions.
#pragma once

#include <cstdint>
#include <vector>

#include "cluster/disagg.h"
#include "sim/event_queue.h"
#include "sim/time.h"

namespace isim::cluster {

class Link {
 public:
  explicit Link(LinkSpec spec);

  const LinkSpec& spec() const { return spec_; }
  int64_t start(sim::Nanos now, double bytes);
  std::vector<int64_t> advance(sim::Nanos now);
  sim::Nanos next_event() const;
  int32_t in_flight() const { return static_cast<int32_t>(flows_.size() + finished_.size()); }
  double bytes_moved() const { return moved_; }

 private:
  struct Flow {
    int64_t id;
    double joins_at;  // ns: when its latency ends
    double left;      // bytes
    double size;
  };
  int32_t moving(double t) const;
  // The exact time (ns, fractional) of the next change after t_.
  double next_change() const;
  void progress(double to);  // moves every moving flow from t_ to `to` (no change in between)

  LinkSpec spec_;
  double bytes_per_ns_;
  double t_ = 0;  // ns: the model's clock
  int64_t next_id_ = 0;
  double moved_ = 0;
  std::vector<Flow> flows_;
  std::vector<int64_t> finished_;  // completed inside a start, reported by the next advance
};

// Links that put their next change on the event queue, each at most once per instant (events
// of cluster/transfers.h, arg: the link's index).
class LinkSet {
 public:
  void add(const LinkSpec& spec) {
    links_.emplace_back(spec);
    at_.push_back(-1);
  }
  Link& operator[](int32_t li) { return links_[static_cast<size_t>(li)]; }
  const Link& operator[](int32_t li) const { return links_[static_cast<size_t>(li)]; }
  // Puts link li's next change on `q` as event `type` for `target`, unless it is there already.
  void schedule(sim::EventQueue& q, int32_t target, int32_t type, int32_t li);
  int32_t size() const { return static_cast<int32_t>(links_.size()); }
  // Link li's event at `now`: the transfers it has completed by then, in completion order.
  std::vector<int64_t> fire(int32_t li, sim::Nanos now);

 private:
  std::vector<Link> links_;
  std::vector<sim::Nanos> at_;  // when each link's event is on the queue (-1: none)
};

}  // namespace isim::cluster
