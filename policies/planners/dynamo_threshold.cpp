// dynamo-threshold: NVIDIA Dynamo's older load-based planner (queue and KV thresholds), as its
// documentation published it (https://docs.nvidia.com/dynamo/latest/architecture/load_planner.html;
// the rules are those of examples/llm/components/planner.py in ai-dynamo/dynamo), moved onto a
// fleet of fixed size. Dynamo's current load planner (regression on engine metrics) is
// dynamo-load (dynamo_load.cpp).
//
// Every pull (metric_pulling_interval, 1 s) it records
// - the prefill queue: sessions waiting on prefill replicas / prefill replicas (Dynamo counts
//   requests in its prefill queue; per worker here so that one threshold serves any pool size);
// - the KV cache utilisation of every decode replica.
// Every adjustment_interval (30 s) it averages them over the interval's pulls and wants
// - prefill +1 when the mean queue > prefill_queue_scale_up_threshold (0.5) and the queue's
//   trend, last + (last - first) x prefill_queue_buffer_intervals (3), is also above it
//   (Dynamo's NEW_PREFILL_WORKER_QUEUE_BUFFER_PERIOD); -1 when the mean < ..._down_threshold (0.2);
// - decode +1 when the mean KV > decode_kv_scale_up_threshold (0.9); -1 when < ..._down (0.5).
// The fleet is fixed, so a wish becomes a move of `step` (1) replicas, Dynamo's +-1:
//   prefill +1, decode not +1          -> decode to prefill
//   decode +1, prefill not +1          -> prefill to decode
//   prefill -1, decode 0               -> prefill to decode
//   decode -1, prefill 0               -> decode to prefill
//   both +1, both -1, both 0           -> nothing
// A move that removes a decode replica is refused for the no_decode_scale_down_intervals (3)
// decisions after one that added a decode replica (Dynamo's NEW_DECODE_WORKER_GRACE_PERIOD).
// While any prefill or decode replica is switching, Dynamo's "workers changed, no adjustment"
// applies: no change, and the grace window does not count down. The interval's samples are
// dropped after every decision.
#include <vector>

#include "policies/planners.h"
#include "policies/planners/common.h"

namespace isim::policy {

namespace {

using cluster::Role;

struct LoadConfig {
  double pull_s = 1, interval_s = 30;
  double kv_up = 0.9, kv_down = 0.5, queue_up = 0.5, queue_down = 0.2;
  int32_t grace = 3, buffer = 3, step = 1;
};

class DynamoThreshold final : public cluster::Planner {
 public:
  explicit DynamoThreshold(const LoadConfig& c) : cfg_(c) {}
  std::string name() const override { return "dynamo-threshold"; }
  double pull_interval_s() const override { return cfg_.pull_s; }
  double interval_s() const override { return cfg_.interval_s; }

  void observe(const cluster::FleetSnapshot& s) override {
    latest_ = s.replicas;
    int64_t waiting = 0, prefill = 0;
    for (const cluster::ReplicaMetrics& m : s.replicas) {
      if (m.role == Role::kPrefill) {
        waiting += m.waiting_sessions;
        ++prefill;
      } else if (m.role == Role::kDecode) {
        kv_sum_ += m.kv_utilization;
        ++kv_n_;
      }
    }
    if (prefill > 0) queue_.push_back(static_cast<double>(waiting) / static_cast<double>(prefill));
  }

  std::vector<cluster::RoleChange> decide(const cluster::PlannerContext& c) override {
    std::vector<cluster::RoleChange> out = adjust(c);
    queue_.clear();
    kv_sum_ = 0;
    kv_n_ = 0;
    return out;
  }

  std::vector<std::pair<std::string, std::string>> describe() const override {
    using planners::num;
    return {{"metric_pulling_interval", num(cfg_.pull_s)},
            {"adjustment_interval", num(cfg_.interval_s)},
            {"decode_kv_scale_up_threshold", num(cfg_.kv_up)},
            {"decode_kv_scale_down_threshold", num(cfg_.kv_down)},
            {"prefill_queue_scale_up_threshold", num(cfg_.queue_up)},
            {"prefill_queue_scale_down_threshold", num(cfg_.queue_down)},
            {"no_decode_scale_down_intervals", std::to_string(cfg_.grace)},
            {"prefill_queue_buffer_intervals", std::to_string(cfg_.buffer)},
            {"step", std::to_string(cfg_.step)}};
  }

 private:
  // -1, 0 or +1 for the prefill pool, from the interval's mean queue and its trend.
  int prefill_wish() const {
    double sum = 0;
    for (const double q : queue_) sum += q;
    const double mean = sum / static_cast<double>(queue_.size());
    const double trend = queue_.back() + (queue_.back() - queue_.front()) * cfg_.buffer;
    if (mean > cfg_.queue_up) return trend > cfg_.queue_up ? 1 : 0;
    return mean < cfg_.queue_down ? -1 : 0;
  }
  int decode_wish() const {
    const double mean = kv_sum_ / static_cast<double>(kv_n_);
    return mean > cfg_.kv_up ? 1 : (mean < cfg_.kv_down ? -1 : 0);
  }
  // The role that gives up a replica (kMixed: none), by the table above.
  static Role losing_role(int dp, int dd) {
    if (dp > 0 && dd <= 0) return Role::kDecode;
    if (dd > 0 && dp <= 0) return Role::kPrefill;
    if (dp < 0 && dd == 0) return Role::kPrefill;
    if (dd < 0 && dp == 0) return Role::kDecode;
    return Role::kMixed;
  }

  std::vector<cluster::RoleChange> adjust(const cluster::PlannerContext& c) {
    if (queue_.empty() || kv_n_ == 0 || planners::any_switching(c)) return {};
    const Role from = losing_role(prefill_wish(), decode_wish());
    std::vector<cluster::RoleChange> out;
    if (from == Role::kPrefill || (from == Role::kDecode && grace_left_ == 0))
      out = planners::move_out(c, latest_, from, cfg_.step);
    if (!out.empty() && from == Role::kPrefill)
      grace_left_ = cfg_.grace;  // a decode replica was added
    else if (grace_left_ > 0)
      --grace_left_;
    return out;
  }

  LoadConfig cfg_;
  std::vector<cluster::ReplicaMetrics> latest_;
  std::vector<double> queue_;  // per-worker prefill queue, one per pull this interval
  double kv_sum_ = 0;          // decode KV utilisation over (replica, pull) pairs
  int64_t kv_n_ = 0;
  int32_t grace_left_ = 0;  // decisions still barred from removing a decode replica
};

LoadConfig read_config(const Params& p) {
  LoadConfig c;
  c.pull_s =
      planners::interval_param(p, "metric_pulling_interval", 1, "seconds between metric pulls");
  c.interval_s =
      planners::interval_param(p, "adjustment_interval", 30, "seconds between decisions");
  c.kv_up = planners::fraction_param(p, "decode_kv_scale_up_threshold", 0.9,
                                     "decode KV use that adds a decode replica");
  c.kv_down = planners::fraction_param(p, "decode_kv_scale_down_threshold", 0.5,
                                       "decode KV use that removes one");
  c.queue_up = planners::non_negative_param(p, "prefill_queue_scale_up_threshold", 0.5,
                                            "prefill queue per replica that adds one");
  c.queue_down = planners::non_negative_param(p, "prefill_queue_scale_down_threshold", 0.2,
                                              "prefill queue per replica that removes one");
  const Bound intervals = in(0, 1000000).because("10^6 intervals: longer than any run");
  c.grace = p.get<int32_t>("no_decode_scale_down_intervals", 3, intervals,
                           "intervals after a decode scale-up before a scale-down");
  c.buffer = p.get<int32_t>("prefill_queue_buffer_intervals", 3, intervals,
                            "intervals of prefill queue kept as buffer");
  c.step = planners::step_param(p);
  if (c.kv_down > c.kv_up)
    p.fail("decode_kv_scale_down_threshold",
           "must not exceed decode_kv_scale_up_threshold (" + planners::num(c.kv_up) + ")");
  if (c.queue_down > c.queue_up)
    p.fail("prefill_queue_scale_down_threshold",
           "must not exceed prefill_queue_scale_up_threshold (" + planners::num(c.queue_up) + ")");
  if (c.interval_s < c.pull_s)
    p.fail("adjustment_interval",
           "must be at least metric_pulling_interval (" + planners::num(c.pull_s) + ")");
  return c;
}

}  // namespace

void add_planner_dynamo_threshold(cluster::PlannerRegistry& reg) {
  reg.add(
      "dynamo-threshold",
      "Dynamo's older threshold planner: prefill queue 0.5/0.2, decode KV 0.9/0.5, +-1 per 30 s",
      [](const Params& p) {
        const LoadConfig c = read_config(p);
        p.done("planner 'dynamo-threshold'");
        return std::make_unique<DynamoThreshold>(c);
      });
}

}  // namespace isim::policy
