// EventQueue: the discrete-event core. Events are ordered by (time, priority, insertion
// sequence), so equal-time events resolve the same way on every run.
//
// Contract:
// - Time is int64 nanoseconds. Scheduling before `now()` throws std::logic_error: time never
//   goes backwards.
// - `pop` advances `now()` to the event's time; `advance_to(t)` moves it to t without an event
//   (a replica's own clock, cluster/fleet.h, follows the fleet's instants), never backwards
//   (std::logic_error). `retime_top` moves the earliest event to another time, not before now.
// - An Event is plain data (target, type, argument); the owner dispatches it by target. No
//   callbacks, so a cluster routes events for itself and N engines through one queue.
// - The queue is a 4-ary heap in one vector: scheduling and popping allocate nothing once the
//   vector has grown to the most events ever pending. The order is total (the sequence breaks
//   every tie), so the heap's shape never shows in a run.
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/time.h"

namespace isim::sim {

// Same-time order. Lower runs first. Spaced by 100 so that later components (transfers,
// planners) can slot their events in between without renumbering.
enum EventPriority : int32_t {
  // An iteration's results (tokens, finished segments) land before anything else at that time,
  // so a session that pauses at t sees intercept ends and arrivals at t in a settled state.
  kPrioIterationEnd = 100,
  // A resuming session is queued before new arrivals at the same time: it arrived earlier.
  kPrioInterceptEnd = 200,
  kPrioArrival = 300,
  // A landed transfer, then a finished role switch, then the planner: all see the instant's
  // tokens, resumes and arrivals.
  kPrioTransfer = 400,
  kPrioSwitch = 500,
  kPrioPlanner = 600,
};

struct Event {
  Nanos time = 0;
  int32_t priority = 0;
  uint64_t seq = 0;
  int32_t target = 0;  // who handles it: a replica's index (>= 0), or a component's id (< 0)
  int32_t type = 0;    // meaning is the target's own (each numbers its types from 0)
  int64_t arg = 0;     // e.g. a session index
};

class EventQueue {
 public:
  void schedule(Nanos time, int32_t priority, int32_t target, int32_t type, int64_t arg) {
    if (time < now_)
      throw std::logic_error("EventQueue: event scheduled in the past (" + std::to_string(time) +
                             " < now " + std::to_string(now_) + ")");
    const Event e{time, priority, next_seq_++, target, type, arg};
    size_t i = heap_.size();
    heap_.push_back(e);
    while (i > 0) {  // sift up
      const size_t parent = (i - 1) / kArity;
      if (!before(e, heap_[parent])) break;
      heap_[i] = heap_[parent];
      i = parent;
    }
    heap_[i] = e;
  }

  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }
  const Event& top() const { return heap_.front(); }

  Event pop() {
    const Event e = remove_top();
    now_ = e.time;
    return e;
  }
  // Moves the earliest event to `time` (>= now()) with argument `arg`, leaving now() alone: a
  // replica's clock retimes its one iteration end when a coalesced run is cut short.
  void retime_top(Nanos time, int64_t arg) {
    const Event e = remove_top();
    schedule(time, e.priority, e.target, e.type, arg);
  }

  Nanos now() const { return now_; }
  void advance_to(Nanos t) {
    if (t < now_)
      throw std::logic_error("EventQueue: clock moved back (" + std::to_string(t) + " < now " +
                             std::to_string(now_) + ")");
    now_ = t;
  }

 private:
  Event remove_top() {
    const Event e = heap_.front();
    const Event last = heap_.back();
    heap_.pop_back();
    const size_t n = heap_.size();
    if (n > 0) {  // sift the last event down from the root
      size_t i = 0;
      while (true) {
        const size_t first = kArity * i + 1;
        if (first >= n) break;
        size_t best = first;
        for (size_t c = first + 1; c < std::min(first + kArity, n); ++c)
          if (before(heap_[c], heap_[best])) best = c;
        if (!before(heap_[best], last)) break;
        heap_[i] = heap_[best];
        i = best;
      }
      heap_[i] = last;
    }
    return e;
  }

  static constexpr size_t kArity = 4;  // children per node: a shallower heap, fewer cache misses
  static bool before(const Event& a, const Event& b) {
    if (a.time != b.time) return a.time < b.time;
    if (a.priority != b.priority) return a.priority < b.priority;
    return a.seq < b.seq;
  }
  std::vector<Event> heap_;
  Nanos now_ = 0;
  uint64_t next_seq_ = 0;
};

}  // namespace isim::sim
