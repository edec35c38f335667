// Lockstep: the data-parallel groups of a fleet running a MoE model, as vLLM runs
// data_parallel_size D (with or without enable_expert_parallel): D engine cores, each with its
// own scheduler, requests and KV cache, that run every MoE layer together.
//
// Contract:
// - A replica whose ReplicaSpec::dp.group >= 0 is a core of that group; a group's cores all
//   carry the same shape, its `cores` equal to their count, on a MoE model (std::logic_error
//   otherwise: the spec layer refuses such input first, with its key).
// - `start(r)` replaces the core's own maybe_start: when the group is idle (no step in flight),
//   every core forms its step (Engine::form_step). If none has one, nothing runs. Otherwise the
//   cores without one run vLLM's dummy batch (one token, no logits), and the group's step is
//       step = max over cores of (stall + busy - the core's own MoE time) + MoE layers x
//              group_moe_layer(tokens of each core, a dummy core's 1).us()
//   (sim/group_step.h, which `isim profile step` shares; sim/ep_cost.h): each core's step
//   without its MoE part, the slowest setting the time, then the group's MoE layers at the
//   busiest rank's expert load with dispatch and combine. Every
//   core that formed a step launches it to end at start + step; a dummy core holds no batch but
//   starts nothing before then. (The per-layer maximum is taken over whole steps: exact when every
//   layer repeats the same work, as the cost model's do.)
// - Stats: steps, cores' dummy steps, core-steps, the time cores wait for the slowest (summed
//   over cores), and the MoE and exposed communication time of the steps.
// - `check()` (Checks, after every event) throws std::logic_error naming the group when a core
//   runs a batch outside the group's step, or a launched core is idle before the step's end.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/ep_cost.h"
#include "sim/time.h"

namespace isim::cluster {

class Fleet;

// What makes a replica a core of a lockstep group (ReplicaSpec::dp).
struct DpSpec {
  int32_t group = -1;  // the group's number in the fleet; -1: the replica steps alone
  sim::EpGroupShape shape;
  bool operator==(const DpSpec&) const = default;
};

struct LockstepStats {
  int32_t groups = 0;
  int64_t steps = 0;             // group steps
  int64_t core_steps = 0;        // steps x cores
  int64_t dummy_core_steps = 0;  // of which a core had nothing to run
  double wait_s = 0;             // summed over cores: the step minus the core's own time
  double moe_s = 0;              // summed over steps: the group's MoE layers
  double exposed_comm_s = 0;     // of which dispatch and combine not hidden
};

class Lockstep {
 public:
  explicit Lockstep(Fleet& f);
  // Whether the fleet has any group (else nothing here runs).
  bool any() const { return !groups_.empty(); }
  bool owns(int32_t r) const { return group_of(r) >= 0; }
  void start(int32_t r);
  void check() const;
  LockstepStats stats() const;

 private:
  struct Group {
    std::vector<int32_t> cores;
    sim::EpGroupShape shape;
    double z = 0;                // expected_max_std_normal(ranks)
    sim::Nanos until = 0;        // the end of the step in flight
    std::vector<char> launched;  // by core: it runs a batch in this step
  };
  int32_t group_of(int32_t r) const;
  void step(Group& g, sim::Nanos t);

  Fleet& f_;
  std::vector<int32_t> group_of_;  // by replica, -1 when alone
  std::vector<Group> groups_;
  LockstepStats stats_;
};

}  // namespace isim::cluster
