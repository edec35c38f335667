// Windows: the replicas' iteration ends, each kept on its replica's own clock (cluster/fleet.h),
// and the windows in which the replicas advance apart, on one thread or several.
//
// Contract:
// - Every busy replica has one iteration end pending (`end(r)`; kForever when idle) and a
//   `bound(r)`: the earliest instant at which that iteration could make the fleet schedule
//   something (Engine::lookahead: an intercept's end after a pause, and when some session waits
//   on a finish (trace::StartAfter), the finish itself). `refresh(r)` reads r's clock after it
//   may have launched; `take(t)` hands out the replicas whose iteration ends at t in the order
//   the fleet's one queue would (iteration start, then replica).
// - `step_floor(r)`: no iteration that emits a token lasts less on replica r (from its profile:
//   the linear form's base plus one token's slope, or the tables' overhead plus every layer's
//   least dense time; 0 for another executor or a profile whose terms could be negative). Only
//   such an iteration reaches the fleet, so nothing replica r does after its pending end does
//   before end(r) + step_floor(r).
// - `horizon(h)`: min of h, every busy replica's bound and end + step_floor. Before it the fleet
//   cannot touch a replica (h is at most the next fleet event) and no replica can make an
//   event for the fleet, so each replica may handle its own iteration ends before it, starting
//   the next iteration right after each, apart from the rest: `run(h)` does that on the pool
//   (static parts of the replicas), holding the listener calls as Effects
//   (cluster/replica_port.h), and returns them in canonical order. An iteration launched in a
//   window with a bound before h would break the premise: std::logic_error (a step_floor that
//   is not one).
// - The counts say how the run went: windows, iteration ends handled in them, and the instants
//   run one at a time.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "cluster/fleet.h"
#include "cluster/replica_port.h"
#include "cluster/worker_pool.h"
#include "core/min_tree.h"

namespace isim::cluster {

struct WindowStats {
  int64_t windows = 0;
  int64_t window_ends = 0;  // iteration ends handled inside windows
  int64_t instants = 0;     // instants handled one at a time (fleet events, or no room)
};

class Windows {
 public:
  // `ports[r]` is replica r's listener; `threads` >= 1.
  Windows(Fleet& f, std::vector<std::unique_ptr<ReplicaPort>>& ports, int32_t threads);

  // Whether a finish can start another session (then a finish bounds the window too).
  void set_finishes_matter(bool m) { finishes_matter_ = m; }
  bool finishes_matter() const { return finishes_matter_; }
  sim::Nanos end(int32_t r) const { return end_[static_cast<size_t>(r)]; }
  sim::Nanos bound(int32_t r) const { return bound_[static_cast<size_t>(r)]; }
  sim::Nanos step_floor(int32_t r) const { return floor_[static_cast<size_t>(r)]; }
  void refresh(int32_t r);
  sim::Nanos earliest() const { return order_.top().end; }
  const std::vector<int32_t>& take(sim::Nanos t);

  sim::Nanos horizon(sim::Nanos h) const { return std::min(h, limit_.top()); }
  // Runs the window before h; returns its effects in canonical order. `last` is the latest
  // iteration end handled.
  std::vector<Effect>& run(sim::Nanos h, sim::Nanos& last);

  int32_t threads() const { return pool_.parts(); }
  WindowStats& stats() { return stats_; }
  const WindowStats& stats() const { return stats_; }

 private:
  // The pending end of r from its clock (its own arrays only: safe inside a window), then into
  // the trees (serial).
  void read(int32_t r);
  void index(int32_t r);
  void advance(int32_t r, sim::Nanos h, size_t part);

  struct Due {  // the order of iteration ends on one queue
    sim::Nanos end = sim::kForever, started = 0;
    int32_t r = 0;
    bool operator<(const Due& o) const {
      if (end != o.end) return end < o.end;
      if (started != o.started) return started < o.started;
      return r < o.r;
    }
  };

  Fleet& f_;
  std::vector<std::unique_ptr<ReplicaPort>>& ports_;
  WorkerPool pool_;
  bool finishes_matter_ = true;
  std::vector<sim::Nanos> end_, started_, bound_, floor_;  // by replica
  std::vector<int32_t> due_;                               // take's answer
  MinTree<Due> order_;                                     // pending ends
  MinTree<sim::Nanos> limit_;                     // min(bound, end + step floor) of the busy ones
  std::vector<std::vector<int32_t>> part_moved_;  // by part: replicas a window advanced
  std::vector<sim::Nanos> part_last_;             // by part: latest end handled
  std::vector<int64_t> part_ends_;                // by part: ends handled
  std::vector<Effect> effects_;
  WindowStats stats_;
  sim::Nanos h_ = 0;                  // the current window's end
  std::function<void(int32_t)> job_;  // one part of a window (built once)
};

}  // namespace isim::cluster
