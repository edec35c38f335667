#include "sim/group_step.h"

#include <algorithm>
#include <stdexcept>

namespace isim::sim {

Nanos core_own_ns(const CostModel& cost, Nanos stall_and_busy, int64_t tokens) {
  return stall_and_busy - cost.moe(tokens);
}

Nanos dummy_own_ns(const CostModel& cost) {
  BatchShape dummy;
  dummy.total_tokens = kDummyTokens;
  return cost.forward(dummy) - cost.moe(kDummyTokens);
}

GroupStep group_step(const CostModel& cost, const EpGroupShape& shape, double z,
                     const std::vector<Nanos>& own, const std::vector<int64_t>& tokens) {
  if (own.empty() || own.size() != tokens.size())
    throw std::logic_error("group_step: own and tokens need one entry per core");
  const Profile& p = cost.profile();
  GroupStep s;
  for (Nanos o : own) s.slowest = std::max(s.slowest, o);
  s.layers = p.model.moe.moe_layers(p.model.layers);
  s.layer = group_moe_layer(p.model, p.tables, shape, z, tokens);
  s.moe_ns = from_us(s.layers * s.layer.us());
  return s;
}

}  // namespace isim::sim
