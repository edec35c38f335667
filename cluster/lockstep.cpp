#include "cluster/lockstep.h"

#include <algorithm>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "cluster/fleet.h"
#include "sim/group_step.h"

namespace isim::cluster {

Lockstep::Lockstep(Fleet& f) : f_(f), group_of_(static_cast<size_t>(f.size()), -1) {
  for (int32_t r = 0; r < f.size(); ++r) {
    const DpSpec& dp = f.spec(r).dp;
    if (dp.group < 0) continue;
    if (static_cast<size_t>(dp.group) >= groups_.size())
      groups_.resize(static_cast<size_t>(dp.group) + 1);
    Group& g = groups_[static_cast<size_t>(dp.group)];
    if (!g.cores.empty() && !(g.shape == dp.shape))
      throw std::logic_error(fmt::format("Lockstep: group {} has cores of two shapes", dp.group));
    g.shape = dp.shape;
    g.cores.push_back(r);
    group_of_[static_cast<size_t>(r)] = dp.group;
  }
  for (size_t i = 0; i < groups_.size(); ++i) {
    Group& g = groups_[i];
    if (g.cores.empty() || static_cast<int>(g.cores.size()) != g.shape.cores)
      throw std::logic_error(fmt::format("Lockstep: group {} has {} cores, its shape says {}", i,
                                         g.cores.size(), g.shape.cores));
    if (!f.engine(g.cores.front()).view().cost_model().profile().model.moe.given())
      throw std::logic_error(fmt::format("Lockstep: group {} runs a dense model", i));
    g.z = sim::expected_max_std_normal(g.shape.ranks());
    g.launched.assign(g.cores.size(), 0);
  }
  stats_.groups = static_cast<int32_t>(groups_.size());
}

int32_t Lockstep::group_of(int32_t r) const {
  return group_of_[static_cast<size_t>(r)];
}

void Lockstep::start(int32_t r) {
  Group& g = groups_[static_cast<size_t>(group_of(r))];
  const sim::Nanos t = f_.now();
  if (t < g.until) return;
  for (int32_t c : g.cores)
    if (f_.engine(c).busy()) return;
  step(g, t);
}

void Lockstep::step(Group& g, sim::Nanos t) {
  const size_t n = g.cores.size();
  std::vector<std::optional<sim::Engine::Step>> steps(n);
  bool any = false;
  for (size_t i = 0; i < n; ++i) {
    steps[i] = f_.replica(g.cores[i]).form_step();
    any = any || steps[i].has_value();
  }
  if (!any) return;
  const sim::CostModel& cost = f_.engine(g.cores.front()).view().cost_model();
  std::vector<int64_t> tokens(n, sim::kDummyTokens);
  std::vector<sim::Nanos> own(n, 0), stall(n, 0), core_moe(n, 0);
  const sim::Nanos dummy_own = sim::dummy_own_ns(cost);
  for (size_t i = 0; i < n; ++i) {
    const sim::Engine& e = f_.engine(g.cores[i]);
    if (steps[i]) {
      tokens[i] = std::max<int64_t>(1, steps[i]->tokens);
      stall[i] = e.view().batch().stall();
      own[i] = sim::core_own_ns(e.view().cost_model(), stall[i] + steps[i]->busy, steps[i]->tokens);
      core_moe[i] = stall[i] + steps[i]->busy - own[i];
    } else {
      own[i] = dummy_own;
      ++stats_.dummy_core_steps;
    }
  }
  const sim::GroupStep gs = sim::group_step(cost, g.shape, g.z, own, tokens);
  const sim::Nanos slowest = gs.slowest, moe_ns = gs.moe_ns, span = gs.span();
  g.until = t + span;
  for (size_t i = 0; i < n; ++i) {
    g.launched[i] = steps[i] ? 1 : 0;
    stats_.wait_s += sim::to_seconds(slowest - own[i]);
    if (!steps[i]) continue;
    const sim::Nanos busy = span - stall[i];
    // Its forward as recorded: its own without its MoE part, then the group's MoE layers.
    const sim::Nanos forward = std::min(busy, steps[i]->forward - core_moe[i] + moe_ns);
    f_.replica(g.cores[i]).launch_step(std::max<sim::Nanos>(0, forward), busy);
  }
  ++stats_.steps;
  stats_.core_steps += static_cast<int64_t>(n);
  stats_.moe_s += sim::to_seconds(moe_ns);
  stats_.exposed_comm_s += sim::to_seconds(sim::from_us(gs.layers * gs.layer.exposed_us));
}

void Lockstep::check() const {
  const sim::Nanos t = f_.now();
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    const Group& g = groups_[gi];
    for (size_t i = 0; i < g.cores.size(); ++i) {
      const bool busy = f_.engine(g.cores[i]).busy();
      if (busy && (!g.launched[i] || t > g.until))
        throw std::logic_error(fmt::format(
            "Lockstep: group {}: core replica {} runs a batch outside the group's step (ends at "
            "{} ns, now {} ns)",
            gi, g.cores[i], g.until, t));
      if (!busy && g.launched[i] && t < g.until)
        throw std::logic_error(fmt::format(
            "Lockstep: group {}: core replica {} is idle before the group's step ends at {} ns", gi,
            g.cores[i], g.until));
    }
  }
}

LockstepStats Lockstep::stats() const {
  return stats_;
}

}  // namespace isim::cluster
