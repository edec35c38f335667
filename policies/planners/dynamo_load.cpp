// dynamo-load: NVIDIA Dynamo's current load-based planner ("load-based scaling", the SLA
// planner's reactive mode; docs/pages/design-docs/planner-design.md and
// components/src/dynamo/planner/utils/load_based_regression.py in ai-dynamo/dynamo), moved
// onto a fleet of fixed size.
//
// Each pull (metric_pulling_interval, 1 s: a stand-in for Dynamo's per-iteration engine
// metrics) adds, per replica, one observation to a sliding window of the last
// max_num_fpm_samples (64) for its pool:
// - prefill replicas that emitted first tokens: x = queued prefill tokens + their mean input
//   (Dynamo's active_prefill_tokens + ISL), y = their mean TTFT;
// - decode replicas that finished turns: x = active KV blocks (held by running, waiting or
//   moving requests; Dynamo's active_decode_blocks), y = their mean inter-token gap.
// Every load_adjustment_interval (5 s), for each pool with at least load_min_observations (5)
// observations, an ordinary least-squares line y = a x + b gives the largest load within the
// SLA (ttft_s 0.5, itl_s 0.05: Dynamo's ttft 500 ms, itl 50 ms): x_sla = (SLA - b) / a; with a
// slope <= 0, the smallest x observed under the SLA (or the smallest x). For prefill the load
// compared is the queue, so the target is x_sla less the window's mean input (no decision when
// that is <= 0: the SLA is out of reach whatever the queue). A pool wants
// - +1 when EVERY engine of it is above its target now (every engine's estimated latency
//   exceeds the SLA);
// - -1 when it has more than one engine and every engine is below
//   target x (n - 1) / n x load_scaling_down_sensitivity / 100 (80): the consolidation check,
//   the remaining n - 1 engines would stay within the SLA with the sensitivity's margin.
// The fleet is fixed, so the wishes become one move (Dynamo scales by +-1 per interval):
//   prefill +1, decode not +1 -> decode to prefill;   decode +1, prefill not +1 -> prefill to
//   decode;   prefill -1, decode 0 -> prefill to decode;   decode -1, prefill 0 -> decode to
//   prefill;   otherwise nothing.
// Scaling is blocking in Dynamo: while any prefill or decode replica is switching, no change.
#include <algorithm>
#include <deque>
#include <optional>
#include <vector>

#include "policies/planners.h"
#include "policies/planners/common.h"

namespace isim::policy {

namespace {

using cluster::Role;

struct RegressionConfig {
  double pull_s = 1, interval_s = 5, ttft_s = 0.5, itl_s = 0.05, sensitivity = 80;
  int32_t window = 64, min_obs = 5;
};

// A sliding window of (x, y) and its least-squares line, as Dynamo's LoadBasedRegressionModel.
class Window {
 public:
  explicit Window(size_t size) : size_(size) {}
  void add(double x, double y) {
    obs_.emplace_back(x, y);
    if (obs_.size() > size_) obs_.pop_front();
  }
  size_t size() const { return obs_.size(); }
  double mean_x() const {
    double s = 0;
    for (const auto& [x, y] : obs_) s += x;
    return obs_.empty() ? 0 : s / static_cast<double>(obs_.size());
  }
  // The largest x whose fitted y is within `sla` (>= 0); nothing below `min_obs` points.
  std::optional<double> x_at(double sla, size_t min_obs) const {
    if (obs_.size() < min_obs || obs_.empty()) return std::nullopt;
    const auto n = static_cast<double>(obs_.size());
    double mx = 0, my = 0;
    for (const auto& [x, y] : obs_) {
      mx += x / n;
      my += y / n;
    }
    double sxy = 0, sxx = 0;
    for (const auto& [x, y] : obs_) {
      sxy += (x - mx) * (y - my);
      sxx += (x - mx) * (x - mx);
    }
    const double a = sxx > 0 ? sxy / sxx : 0;
    if (a > 0) return std::max(0.0, (sla - (my - a * mx)) / a);
    // Non-positive slope: the smallest load seen under the SLA, else the smallest load.
    std::optional<double> below, any;
    for (const auto& [x, y] : obs_) {
      any = any ? std::min(*any, x) : x;
      if (y < sla) below = below ? std::min(*below, x) : x;
    }
    return std::max(0.0, below ? *below : *any);
  }

 private:
  size_t size_;
  std::deque<std::pair<double, double>> obs_;
};

class DynamoLoad final : public cluster::Planner {
 public:
  explicit DynamoLoad(const RegressionConfig& c)
      : cfg_(c),
        prefill_(static_cast<size_t>(c.window)),
        decode_(static_cast<size_t>(c.window)),
        isl_(static_cast<size_t>(c.window)) {}
  std::string name() const override { return "dynamo-load"; }
  double pull_interval_s() const override { return cfg_.pull_s; }
  double interval_s() const override { return cfg_.interval_s; }

  void observe(const cluster::FleetSnapshot& s) override {
    latest_ = s.replicas;
    for (const cluster::ReplicaMetrics& m : s.replicas) {
      if (m.role == Role::kPrefill && m.ttft_count > 0) {
        prefill_.add(static_cast<double>(m.queued_prefill_tokens) + m.ttft_isl_mean, m.ttft_mean_s);
        isl_.add(m.ttft_isl_mean, 0);
      } else if (m.role == Role::kDecode && m.itl_count > 0) {
        decode_.add(static_cast<double>(m.active_kv_blocks), m.itl_mean_s);
      }
    }
  }

  std::vector<cluster::RoleChange> decide(const cluster::PlannerContext& c) override {
    if (planners::any_switching(c)) return {};
    const auto min_obs = static_cast<size_t>(cfg_.min_obs);
    int dp = 0, dd = 0;
    if (const auto x = prefill_.x_at(cfg_.ttft_s, min_obs)) {
      const double target = *x - isl_.mean_x();
      if (target > 0)
        dp = wish(Role::kPrefill, target,
                  [](const cluster::ReplicaMetrics& m) { return double(m.queued_prefill_tokens); });
    }
    if (const auto x = decode_.x_at(cfg_.itl_s, min_obs))
      dd = wish(Role::kDecode, *x,
                [](const cluster::ReplicaMetrics& m) { return double(m.active_kv_blocks); });
    Role from = Role::kMixed;
    if (dp > 0 && dd <= 0) from = Role::kDecode;
    if (dd > 0 && dp <= 0) from = Role::kPrefill;
    if (dp < 0 && dd == 0) from = Role::kPrefill;
    if (dd < 0 && dp == 0) from = Role::kDecode;
    return planners::move_out(c, latest_, from, 1);
  }

  std::vector<std::pair<std::string, std::string>> describe() const override {
    using planners::num;
    return {{"metric_pulling_interval", num(cfg_.pull_s)},
            {"load_adjustment_interval", num(cfg_.interval_s)},
            {"ttft_s", num(cfg_.ttft_s)},
            {"itl_s", num(cfg_.itl_s)},
            {"max_num_fpm_samples", std::to_string(cfg_.window)},
            {"load_min_observations", std::to_string(cfg_.min_obs)},
            {"load_scaling_down_sensitivity", num(cfg_.sensitivity)}};
  }

 private:
  // +1: every engine of `pool` above `target`; -1: the consolidation check passes; else 0.
  template <class Load>
  int wish(Role pool, double target, Load load) const {
    std::vector<double> loads;
    for (const cluster::ReplicaMetrics& m : latest_)
      if (m.role == pool && !m.switching) loads.push_back(load(m));
    if (loads.empty()) return 0;
    const auto n = static_cast<double>(loads.size());
    if (std::all_of(loads.begin(), loads.end(), [&](double x) { return x > target; })) return 1;
    const double boundary = target * (n - 1) / n * cfg_.sensitivity / 100;
    if (loads.size() > 1 &&
        std::all_of(loads.begin(), loads.end(), [&](double x) { return x < boundary; }))
      return -1;
    return 0;
  }

  RegressionConfig cfg_;
  Window prefill_, decode_;
  Window isl_;  // the prefill observations' inputs (x only), for the queue target
  std::vector<cluster::ReplicaMetrics> latest_;
};

RegressionConfig read_regression(const Params& p) {
  RegressionConfig c;
  c.pull_s =
      planners::interval_param(p, "metric_pulling_interval", 1, "seconds between metric pulls");
  c.interval_s =
      planners::interval_param(p, "load_adjustment_interval", 5, "seconds between decisions");
  c.ttft_s = planners::seconds_param(p, "ttft_s", 0.5, "time-to-first-token target (s)");
  c.itl_s = planners::seconds_param(p, "itl_s", 0.05, "inter-token latency target (s)");
  c.sensitivity = p.get<double>("load_scaling_down_sensitivity", 80, in(0, 100),
                                "percent of the regression's need kept when scaling down");
  c.window = p.get<int32_t>("max_num_fpm_samples", 64,
                            in(1, 1000000).because("10^6 samples per replica in memory"),
                            "forward-pass samples kept for the regression");
  c.min_obs = p.get<int32_t>("load_min_observations", 5,
                             in(2, 1000000).because("more than max_num_fpm_samples can hold"),
                             "samples before the regression is used");
  if (c.interval_s < c.pull_s)
    p.fail("load_adjustment_interval",
           "must be at least metric_pulling_interval (" + planners::num(c.pull_s) + ")");
  return c;
}

}  // namespace

void add_planner_dynamo_load(cluster::PlannerRegistry& reg) {
  reg.add("dynamo-load",
          "Dynamo's load planner: regression of TTFT/ITL on load, +1 when every engine is "
          "over the SLA, -1 after a consolidation check, per 5 s",
          [](const Params& p) {
            const RegressionConfig c = read_regression(p);
            p.done("planner 'dynamo-load'");
            return std::make_unique<DynamoLoad>(c);
          });
}

}  // namespace isim::policy
