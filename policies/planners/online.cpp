// online: our planner, after Evolving Infra (2026): it sizes the prefill and decode pools of a
// fixed fleet against a TTFT and an ITL SLO, from a forecast of the next `horizon_s` built on
// the paused-agent population (the sessions in tool calls, their kinds, how long they have
// waited, their contexts, with a tool-wait model learned from the intercepts that ended), and
// moves a replica only when the SLO it saves over the horizon outweighs the switch.
// docs/disaggregation.md ("online") gives the reasoning.
//
// Every pull (1 s) it learns the tool waits (tool_waits.h: the last `window` per kind,
// `min_samples` before a kind answers alone) and folds into exponentially weighted averages
// (weight `smoothing` for the newest pull) the new-session and routed-prefill rates, the mean
// output of a finished turn and a decoding turn's mean context (ISL + OSL / 2).
// Every interval_s it
// 1. forecasts the demand over h = horizon_s (forecast.h; `forecast: false` uses the demand
//    observed now instead);
// 2. sizes the pools (pool_sizing.h: TTFT under `ttft_s` with `headroom`, decode step under
//    `itl_s`, the KV in the decode replicas' blocks) from the profile of the lowest-index
//    prefill or decode replica: needs n_P, n_D (fractional replicas);
// 3. a pool is short when need - have > dead_band. None short: hold. Otherwise the short pool
//    with the larger violation V gains one replica from the other (never below one), where
//      V(have, need) = h x max(0, need - have) x need / have
//    is the pool's replica-seconds short over the horizon, weighted by its overload
//    need / have (so with both pools short it favours the one whose shortfall costs more);
// 4. the move's gain (V of both pools before minus after) must exceed its cost: the switch's
//    cost_s plus, for a decode replica, the prefill seconds to rebuild the KV it holds
//    (kv_utilization x its KV capacity / the prefill throughput mu);
// 5. hysteresis: the same move must win `patience` consecutive decisions; any hold resets it.
// No decision while a pooled replica is switching, before the first pull, or on a fleet with
// fewer than two pooled replicas. Defaults: ttft_s 0.5 and itl_s 0.05 (Dynamo's SLA planner's
// defaults, components/planner/src/dynamo/planner/defaults.py), horizon_s 30, headroom 0.8,
// dead_band 0.25, patience 2, window 256, min_samples 10, smoothing 0.2, interval_s 5.
#include <algorithm>
#include <cmath>
#include <optional>

#include "policies/planners.h"
#include "policies/planners/common.h"
#include "policies/planners/forecast.h"
#include "policies/planners/pool_sizing.h"
#include "policies/planners/tool_waits.h"

namespace isim::policy {

namespace {

using cluster::Role;

struct OnlineConfig {
  double interval_s = 5, horizon_s = 30, smoothing = 0.2, dead_band = 0.25;
  planners::SloTargets slo{0.5, 0.05, 0.8};
  int32_t patience = 2, window = 256, min_samples = 10;
  bool forecast = true;
};

// An exponentially weighted average; the first sample sets it.
class Ewma {
 public:
  void add(double x, double w) { v_ = v_ ? w * x + (1 - w) * *v_ : x; }
  double value() const { return v_.value_or(0); }

 private:
  std::optional<double> v_;
};

class Online final : public cluster::Planner {
 public:
  explicit Online(const OnlineConfig& c) : cfg_(c), waits_(c.window, c.min_samples) {}
  std::string name() const override { return "online"; }
  double interval_s() const override { return cfg_.interval_s; }

  void observe(const cluster::FleetSnapshot& s) override {
    for (const cluster::InterceptEnded& e : s.intercepts_ended)
      waits_.add_wait(e.kind, e.duration_s, e.returned_tokens);
    for (const cluster::TurnAfterIntercept& t : s.resumed_turns)
      waits_.add_output(t.kind, t.output_tokens);
    const double w = cfg_.smoothing;
    if (s.dt_s > 0) {
      new_sessions_.add(static_cast<double>(s.arrivals) / s.dt_s, w);
      new_input_.add(static_cast<double>(s.arrival_input_tokens) / s.dt_s, w);
      routed_requests_.add(static_cast<double>(s.prefill_requests) / s.dt_s, w);
      routed_tokens_.add(static_cast<double>(s.prefill_tokens) / s.dt_s, w);
    }
    if (s.turns_finished > 0) {
      osl_.add(s.osl_mean, w);
      context_.add(s.isl_mean + s.osl_mean / 2, w);
    }
    latest_ = s;
  }

  std::vector<cluster::RoleChange> decide(const cluster::PlannerContext& c) override {
    const planners::Pools pools = planners::count_pools(c);
    if (!latest_ || pools.prefill < 1 || pools.decode < 1 || planners::any_switching(c) ||
        !load_sizing(c))
      return hold();
    const planners::PoolNeeds n = needs(c);
    const double vp = violation(pools.prefill, n.prefill), vd = violation(pools.decode, n.decode);
    const bool short_p = n.prefill - pools.prefill > cfg_.dead_band;
    const bool short_d = n.decode - pools.decode > cfg_.dead_band;
    if (!short_p && !short_d) return hold();
    const bool to_prefill = short_p && (!short_d || vp > vd);
    const Role from = to_prefill ? Role::kDecode : Role::kPrefill;
    const int32_t have_from = to_prefill ? pools.decode : pools.prefill;
    if (have_from < 2) return hold();
    const double gain = to_prefill ? vp + vd - violation(pools.prefill + 1, n.prefill) -
                                         violation(pools.decode - 1, n.decode)
                                   : vp + vd - violation(pools.prefill - 1, n.prefill) -
                                         violation(pools.decode + 1, n.decode);
    std::vector<cluster::RoleChange> out = planners::move_out(c, latest_->replicas, from, 1);
    if (out.empty() || !(gain > move_cost(c, out.front().replica))) return hold();
    const int dir = to_prefill ? 1 : -1;
    pending_ = dir == pending_dir_ ? pending_ + 1 : 1;
    pending_dir_ = dir;
    if (pending_ < cfg_.patience) return {};
    pending_ = 0;
    pending_dir_ = 0;
    return out;
  }

  std::vector<std::pair<std::string, std::string>> describe() const override {
    using planners::num;
    return {{"interval_s", num(cfg_.interval_s)},
            {"horizon_s", num(cfg_.horizon_s)},
            {"ttft_s", num(cfg_.slo.ttft_s)},
            {"itl_s", num(cfg_.slo.itl_s)},
            {"headroom", num(cfg_.slo.headroom)},
            {"dead_band", num(cfg_.dead_band)},
            {"patience", std::to_string(cfg_.patience)},
            {"forecast", cfg_.forecast ? "true" : "false"},
            {"window", std::to_string(cfg_.window)},
            {"min_samples", std::to_string(cfg_.min_samples)},
            {"smoothing", num(cfg_.smoothing)}};
  }

 private:
  std::vector<cluster::RoleChange> hold() {
    pending_ = 0;
    pending_dir_ = 0;
    return {};
  }

  bool load_sizing(const cluster::PlannerContext& c) {
    if (sizing_) return true;
    for (size_t r = 0; r < c.roles.size(); ++r) {
      if (c.roles[r] == Role::kMixed || r >= c.cost_models.size() || !c.cost_models[r]) continue;
      const int64_t kv = r < c.kv_capacity_tokens.size() ? c.kv_capacity_tokens[r] : 0;
      sizing_.emplace(c.cost_models[r]->profile(), c.max_num_batched_tokens.at(r),
                      c.max_num_seqs.at(r), kv, cfg_.slo);
      return true;
    }
    return false;
  }

  planners::PoolNeeds needs(const cluster::PlannerContext& c) const {
    planners::DemandRates r;
    r.new_sessions = new_sessions_.value();
    r.new_input_tokens = new_input_.value();
    r.routed_requests = routed_requests_.value();
    r.routed_tokens = routed_tokens_.value();
    r.output_per_turn = osl_.value();
    const planners::Demand d =
        cfg_.forecast
            ? planners::forecast(*latest_, c.kv_capacity_tokens, waits_, r, cfg_.horizon_s,
                                 cfg_.slo.itl_s)
            : planners::observed(*latest_, c.kv_capacity_tokens, r, cfg_.horizon_s, cfg_.slo.itl_s);
    return sizing_->needs(d, cfg_.horizon_s, context_.value());
  }

  // Replica-seconds short over the horizon, weighted by the overload need / have.
  double violation(int32_t have, double need) const {
    if (have < 1 || !(need > have)) return 0;
    return cfg_.horizon_s * (need - have) * need / have;
  }

  // The switch's cost plus the prefill seconds to rebuild the KV a decode replica holds.
  double move_cost(const cluster::PlannerContext& c, int32_t r) const {
    const auto i = static_cast<size_t>(r);
    double kv_s = 0;
    if (c.roles[i] == Role::kDecode && i < latest_->replicas.size() &&
        i < c.kv_capacity_tokens.size())
      kv_s = latest_->replicas[i].kv_utilization * static_cast<double>(c.kv_capacity_tokens[i]) /
             sizing_->prefill_tokens_per_s();
    return c.switch_cost_s + kv_s;
  }

  OnlineConfig cfg_;
  planners::ToolWaits waits_;
  Ewma new_sessions_, new_input_, routed_requests_, routed_tokens_, osl_, context_;
  std::optional<cluster::FleetSnapshot> latest_;
  std::optional<planners::PoolSizing> sizing_;
  int pending_dir_ = 0;  // direction of the move the last decisions agreed on
  int32_t pending_ = 0;  // how many consecutive decisions it has won
};

OnlineConfig read_config(const Params& p) {
  OnlineConfig c;
  c.interval_s = planners::interval_param(p, "interval_s", 5, "seconds between decisions");
  c.horizon_s = planners::interval_param(p, "horizon_s", 30, "seconds forecast ahead");
  c.slo.ttft_s = planners::seconds_param(p, "ttft_s", 0.5, "time-to-first-token target (s)");
  c.slo.itl_s = planners::seconds_param(p, "itl_s", 0.05, "inter-token latency target (s)");
  c.slo.headroom =
      p.get<double>("headroom", 0.8, above_upto(0, 1), "share of the SLO the plan aims for");
  c.dead_band = p.get<double>("dead_band", 0.25, in(0, 65536).because("the fleet's replica cap"),
                              "replicas of change ignored");
  c.patience =
      p.get<int32_t>("patience", 2, in(1, 1000000).because("10^6 intervals: longer than any run"),
                     "decisions in a row before acting");
  c.forecast = p.get<bool>("forecast", true);
  c.window = p.get<int32_t>("window", 256, in(1, 1000000).because("10^6 samples held in memory"),
                            "arrival samples in the forecast window");
  c.min_samples =
      p.get<int32_t>("min_samples", 10, in(1, 1000000).because("more than window can hold"),
                     "samples before forecasting");
  c.smoothing = p.get<double>("smoothing", 0.2, above_upto(0, 1), "exponential smoothing weight");
  return c;
}

}  // namespace

void add_planner_online(cluster::PlannerRegistry& reg) {
  reg.add("online",
          "ours (after Evolving Infra): SLO-sized pools from a paused-agent forecast, switch "
          "cost and hysteresis",
          [](const Params& p) {
            const OnlineConfig c = read_config(p);
            p.done("planner 'online'");
            return std::make_unique<Online>(c);
          });
}

}  // namespace isim::policy
