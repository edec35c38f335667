// The step of a lockstep DP/EP group (cluster/lockstep.h), as one rule that the simulator and
// `isim profile step` both use.
//
// Contract:
// - A core's own time is its step without its MoE part: stall + busy - cost.moe(tokens)
//   (core_own_ns). A core with no work runs vLLM's dummy batch, one token without logits:
//   dummy_own_ns = forward(1 token) - moe(1), and it sends kDummyTokens to the MoE layers.
// - group_step(cost, shape, z, own, tokens): own and tokens by core (same length >= 1; a dummy
//   core's tokens kDummyTokens). slowest = the largest own (at least 0); layer =
//   sim::group_moe_layer(model, tables, shape, z, tokens); layers =
//   model.moe.moe_layers(model.layers); moe_ns = from_us(layers x layer.us()); the group's step is
//   span() = slowest + moe_ns: each core's step without its MoE part, the slowest setting the time,
//   then the group's MoE layers.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/cost_model.h"
#include "sim/ep_cost.h"
#include "sim/time.h"

namespace isim::sim {

inline constexpr int64_t kDummyTokens = 1;

struct GroupStep {
  Nanos slowest = 0;  // the slowest core's own time
  GroupMoe layer;     // one MoE layer of the group
  double layers = 0;  // MoE layers
  Nanos moe_ns = 0;   // layers x layer.us()
  Nanos span() const { return slowest + moe_ns; }
};

Nanos core_own_ns(const CostModel& cost, Nanos stall_and_busy, int64_t tokens);
Nanos dummy_own_ns(const CostModel& cost);
GroupStep group_step(const CostModel& cost, const EpGroupShape& shape, double z,
                     const std::vector<Nanos>& own, const std::vector<int64_t>& tokens);

}  // namespace isim::sim
