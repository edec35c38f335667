// online: our planner, in the spirit of Evolving Infra (2026): it sets the prefill:decode split
// of a fixed fleet from the live workload mix, using only what the running fleet reports (no
// profile, no trace look-ahead). docs/disaggregation-planners.md gives the reasoning.
//
// Every pull (1 s) it folds into exponentially weighted averages (weight `smoothing`, 0.2, for
// the newest pull):
//   demand   = prefill tokens the split sent to prefill replicas / dt;
//   capacity = prefill tokens done / busy seconds on prefill replicas (when they were busy);
//   backlog  = queued prefill tokens on prefill replicas;
//   K, R, W  = sums over decode replicas of KV utilisation, running and waiting sessions.
// Every interval_s (5 s) it sizes both pools in replicas' worth of work:
//   prefill need = demand / capacity + backlog / (capacity x drain_horizon_s)     (busy time)
//   decode need  = max(K x (R + W) / R, (R + W) / max_num_seqs)        (memory or batch slots)
// and targets the split at which both pools are equally utilised:
//   target prefill = clamp(round(N x prefill need / (prefill need + decode need)), 1, N - 1)
// over the N prefill and decode replicas. Hysteresis: a target one replica away is acted on
// only after `patience` (2) consecutive decisions agree on the direction; two or more away at
// once. At most `step` (1) replicas move a decision. Guard: no decode replica is taken while
// the decode replicas' mean KV utilisation (latest pull) exceeds kv_guard (0.9). No decision
// before the prefill replicas' capacity has been measured once, or when both needs are 0.
#include <algorithm>
#include <cmath>
#include <optional>

#include "policies/planners.h"
#include "policies/planners/common.h"

namespace isim::policy {

namespace {

using cluster::Role;

struct OnlineConfig {
  double interval_s = 5, smoothing = 0.2, horizon_s = 10, kv_guard = 0.9;
  int32_t patience = 2, step = 1;
};

// An exponentially weighted average; the first sample sets it.
class Ewma {
 public:
  void add(double x, double w) { v_ = v_ ? w * x + (1 - w) * *v_ : x; }
  bool known() const { return v_.has_value(); }
  double value() const { return v_.value_or(0); }

 private:
  std::optional<double> v_;
};

class Online final : public cluster::Planner {
 public:
  explicit Online(const OnlineConfig& c) : cfg_(c) {}
  std::string name() const override { return "online"; }
  double interval_s() const override { return cfg_.interval_s; }

  void observe(const cluster::FleetSnapshot& s) override {
    latest_ = s.replicas;
    int64_t done = 0, backlog = 0, run = 0, wait = 0, decoders = 0;
    double busy_s = 0, kv = 0;
    for (const cluster::ReplicaMetrics& m : s.replicas) {
      if (m.role == Role::kPrefill) {
        done += m.prefill_tokens_done;
        busy_s += m.busy_fraction * s.dt_s;
        backlog += m.queued_prefill_tokens;
      } else if (m.role == Role::kDecode) {
        kv += m.kv_utilization;
        run += m.running_sessions;
        wait += m.waiting_sessions;
        ++decoders;
      }
    }
    const double w = cfg_.smoothing;
    if (s.dt_s > 0)
      demand_.add(static_cast<double>(s.prefill_tokens) / s.dt_s, w);  // sent to prefill replicas
    if (busy_s > 0 && done > 0) capacity_.add(static_cast<double>(done) / busy_s, w);
    backlog_.add(static_cast<double>(backlog), w);
    kv_.add(kv, w);
    run_.add(static_cast<double>(run), w);
    wait_.add(static_cast<double>(wait), w);
    kv_now_ = decoders > 0 ? kv / static_cast<double>(decoders) : 0;
  }

  std::vector<cluster::RoleChange> decide(const cluster::PlannerContext& c) override {
    const planners::Pools pools = planners::count_pools(c);
    const int32_t target = target_prefill(c, pools.total());
    const int32_t diff = target < 0 ? 0 : target - pools.prefill;
    if (diff == 0) {
      pending_ = 0;
      return {};
    }
    const int dir = diff > 0 ? 1 : -1;
    pending_ = dir == pending_dir_ ? pending_ + 1 : 1;
    pending_dir_ = dir;
    if (std::abs(diff) < 2 && pending_ < cfg_.patience) return {};
    if (dir > 0 && kv_now_ > cfg_.kv_guard) return {};  // decode memory is the bottleneck
    std::vector<cluster::RoleChange> out = planners::step_toward(c, latest_, target, cfg_.step);
    if (!out.empty()) pending_ = 0;
    return out;
  }

  std::vector<std::pair<std::string, std::string>> describe() const override {
    using planners::num;
    return {{"interval_s", num(cfg_.interval_s)},        {"smoothing", num(cfg_.smoothing)},
            {"drain_horizon_s", num(cfg_.horizon_s)},    {"kv_guard", num(cfg_.kv_guard)},
            {"patience", std::to_string(cfg_.patience)}, {"step", std::to_string(cfg_.step)}};
  }

 private:
  // Mean max_num_seqs of the decode replicas (1 when there are none).
  static double decode_slots(const cluster::PlannerContext& c) {
    double sum = 0;
    int32_t n = 0;
    for (size_t r = 0; r < c.roles.size() && r < c.max_num_seqs.size(); ++r)
      if (c.roles[r] == Role::kDecode) {
        sum += c.max_num_seqs[r];
        ++n;
      }
    return n > 0 && sum > 0 ? sum / n : 1;
  }

  int32_t target_prefill(const cluster::PlannerContext& c, int32_t n) const {
    if (!capacity_.known() || n < 2) return -1;
    const double mu = capacity_.value();
    const double p = demand_.value() / mu + backlog_.value() / (mu * cfg_.horizon_s);
    const double r = run_.value(), sessions = r + wait_.value();
    const double kv_need = r > 0 ? kv_.value() * sessions / r : kv_.value();
    const double d = std::max(kv_need, sessions / decode_slots(c));
    if (!(p + d > 0)) return -1;
    const auto t = static_cast<int32_t>(std::llround(static_cast<double>(n) * p / (p + d)));
    return std::clamp(t, 1, n - 1);
  }

  OnlineConfig cfg_;
  std::vector<cluster::ReplicaMetrics> latest_;
  Ewma demand_, capacity_, backlog_, kv_, run_, wait_;
  double kv_now_ = 0;    // decode replicas' mean KV utilisation, latest pull
  int pending_dir_ = 0;  // direction of the last decisions' disagreement
  int32_t pending_ = 0;  // how many consecutive decisions it has lasted
};

OnlineConfig read_config(const Params& p) {
  OnlineConfig c;
  c.interval_s = planners::seconds_param(p, "interval_s", 5);
  c.smoothing = p.get<double>("smoothing", 0.2, "a number in (0, 1]",
                              [](double x) { return x > 0 && x <= 1; });
  c.horizon_s = planners::seconds_param(p, "drain_horizon_s", 10);
  c.kv_guard = planners::fraction_param(p, "kv_guard", 0.9);
  c.patience = p.get<int32_t>("patience", 2, "an integer >= 1", [](int32_t x) { return x >= 1; });
  c.step = planners::step_param(p);
  return c;
}

}  // namespace

void add_planner_online(cluster::PlannerRegistry& reg) {
  reg.add("online",
          "ours (after Evolving Infra): P:D for equal prefill/decode utilisation, live, no "
          "profile",
          [](const Params& p) {
            const OnlineConfig c = read_config(p);
            p.done("planner 'online'");
            return std::make_unique<Online>(c);
          });
}

}  // namespace isim::policy
