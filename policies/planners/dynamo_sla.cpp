// dynamo-sla: NVIDIA Dynamo's SLA planner, throughput-based mode
// (https://docs.nvidia.com/dynamo/latest/architecture/sla_planner.html; defaults from
// components/planner/src/dynamo/planner/defaults.py in ai-dynamo/dynamo), on a fleet of fixed
// size.
//
// Every adjustment_interval (180 s, Dynamo's default) it takes the interval's measurements as
// the next interval's load (Dynamo's "constant" predictor):
//   rate = prefills routed / interval;  ISL = their uncached input tokens / prefills;
//   OSL, context ISL = mean output and input tokens of the turns finished (the last known when
//   none finished);
// and from the profile (the cost model of the lowest-index prefill or decode replica; Dynamo
// assumes identical workers):
//   prefill throughput = max_num_batched_tokens / forward(one chunk of max_num_batched_tokens);
//   decode throughput at an ITL = max over batches b <= max_num_seqs with forward(b decodes at
//   context ISL + OSL/2 each) <= ITL of b / forward (b = 1 when none fits).
// Correction factors (unless correction: false): prefill = measured mean TTFT / TTFT of one
// ISL prompt on an idle replica (chunks of max_num_batched_tokens); decode = measured mean ITL /
// forward(b = mean decoding sessions per decode replica). Then, as Dynamo computes them,
//   P* = max(1, ceil(rate x ISL x min(1, prefill correction) / prefill throughput))
//   D* = max(1, ceil(rate x OSL / decode throughput at itl_target_s / decode correction))
// and, since the fleet is fixed, Dynamo's pinned-budget rule (min = max GPU budget: replicas are
// redistributed proportionally): target prefill = clamp(floor(N x P* / (P* + D*)), 1, N - 1)
// over the N prefill and decode replicas, approached by at most `step` (1) moves a decision.
// No decision without a prefill routed in the interval or before any turn has finished.
#include <algorithm>
#include <cmath>
#include <optional>

#include "policies/planners.h"
#include "policies/planners/common.h"

namespace isim::policy {

namespace {

using cluster::Role;

struct SlaConfig {
  double interval_s = 180, itl_s = 0.05;
  int32_t step = 1;
  bool correction = true;
};

// What one adjustment interval observed.
struct IntervalSums {
  double dt = 0;
  int64_t requests = 0, prefill_tokens = 0, turns = 0, ttft_n = 0, itl_n = 0;
  double ttft_sum = 0, itl_sum = 0, isl_sum = 0, osl_sum = 0;
  double decoding_sum = 0;  // decoding sessions per decode replica, summed over pulls
  int64_t decoding_pulls = 0;

  void add(const cluster::FleetSnapshot& s) {
    dt += s.dt_s;
    requests += s.prefill_requests;
    prefill_tokens += s.prefill_tokens;
    ttft_n += s.ttft_count;
    ttft_sum += s.ttft_mean_s * static_cast<double>(s.ttft_count);
    itl_n += s.itl_count;
    itl_sum += s.itl_mean_s * static_cast<double>(s.itl_count);
    turns += s.turns_finished;
    isl_sum += s.isl_mean * static_cast<double>(s.turns_finished);
    osl_sum += s.osl_mean * static_cast<double>(s.turns_finished);
    int64_t decoding = 0, decoders = 0;
    for (const cluster::ReplicaMetrics& m : s.replicas)
      if (m.role == Role::kDecode) {
        decoding += m.decoding_sessions;
        ++decoders;
      }
    if (decoders == 0) return;
    decoding_sum += static_cast<double>(decoding) / static_cast<double>(decoders);
    ++decoding_pulls;
  }
};

// The profile of one worker, copied so that the planner's look-ups never count as the
// replica's own cost-model extrapolations.
struct Engine {
  sim::CostModel cm;
  int64_t max_batched_tokens;
  int32_t max_seqs;

  double seconds(const sim::BatchShape& b) const { return sim::to_seconds(cm.forward(b)); }
  double prefill_tokens_per_s() const {
    sim::BatchShape b;
    b.total_tokens = max_batched_tokens;
    b.num_logits = 1;
    b.prefills.push_back({max_batched_tokens, 0});
    return static_cast<double>(max_batched_tokens) / seconds(b);
  }
  double idle_ttft_s(double isl) const {
    const int64_t tokens = std::max<int64_t>(std::llround(isl), 1);
    double t = 0;
    for (int64_t done = 0; done < tokens; done += max_batched_tokens) {
      sim::BatchShape b;
      b.total_tokens = std::min(max_batched_tokens, tokens - done);
      b.num_logits = 1;
      b.prefills.push_back({b.total_tokens, done});
      t += seconds(b);
    }
    return t;
  }
  double decode_s(int32_t batch, double context) const {
    sim::BatchShape b;
    b.total_tokens = batch;
    b.num_decode = batch;
    b.decode_kv_tokens = std::llround(context * batch);
    b.num_logits = batch;
    return seconds(b);
  }
  double decode_tokens_per_s(double itl_s, double context) const {
    double best = 0;
    for (int32_t b = 1; b <= max_seqs; ++b) {
      const double t = decode_s(b, context);
      if (t <= itl_s) best = std::max(best, b / t);
    }
    return best > 0 ? best : 1 / decode_s(1, context);
  }
};

class DynamoSla final : public cluster::Planner {
 public:
  explicit DynamoSla(const SlaConfig& c) : cfg_(c) {}
  std::string name() const override { return "dynamo-sla"; }
  double interval_s() const override { return cfg_.interval_s; }
  void observe(const cluster::FleetSnapshot& s) override {
    latest_ = s.replicas;
    sums_.add(s);
  }
  std::vector<cluster::RoleChange> decide(const cluster::PlannerContext& c) override {
    const IntervalSums s = sums_;
    sums_ = {};
    if (s.turns > 0) {
      isl_ = s.isl_sum / static_cast<double>(s.turns);
      osl_ = s.osl_sum / static_cast<double>(s.turns);
    }
    if (s.requests == 0 || !(s.dt > 0) || !(osl_ > 0) || !load_engine(c)) return {};
    const double rate = static_cast<double>(s.requests) / s.dt;
    const double isl = static_cast<double>(s.prefill_tokens) / static_cast<double>(s.requests);
    const double context = isl_ + osl_ / 2;
    if (cfg_.correction) correct(s, isl, context);
    const double p =
        std::ceil(rate * isl * std::min(1.0, p_corr_) / engine_->prefill_tokens_per_s());
    const double itl = d_corr_ > 0 ? cfg_.itl_s / d_corr_ : cfg_.itl_s;
    const double d = std::ceil(rate * osl_ / engine_->decode_tokens_per_s(itl, context));
    const int32_t target =
        planners::split_of(std::max(p, 1.0), std::max(d, 1.0), planners::count_pools(c).total());
    return planners::step_toward(c, latest_, target, cfg_.step);
  }
  std::vector<std::pair<std::string, std::string>> describe() const override {
    return {{"adjustment_interval", planners::num(cfg_.interval_s)},
            {"itl_target_s", planners::num(cfg_.itl_s)},
            {"step", std::to_string(cfg_.step)},
            {"correction", cfg_.correction ? "true" : "false"}};
  }

 private:
  bool load_engine(const cluster::PlannerContext& c) {
    if (engine_) return true;
    for (size_t r = 0; r < c.roles.size(); ++r) {
      if (c.roles[r] == Role::kMixed || r >= c.cost_models.size() || !c.cost_models[r]) continue;
      engine_.emplace(Engine{sim::CostModel(c.cost_models[r]->profile()),
                             c.max_num_batched_tokens.at(r), c.max_num_seqs.at(r)});
      return true;
    }
    return false;
  }
  void correct(const IntervalSums& s, double isl, double context) {
    if (s.ttft_n > 0)
      p_corr_ = s.ttft_sum / static_cast<double>(s.ttft_n) / engine_->idle_ttft_s(isl);
    if (s.itl_n == 0 || s.decoding_pulls == 0) return;
    const double concurrency = s.decoding_sum / static_cast<double>(s.decoding_pulls);
    const auto b = static_cast<int32_t>(std::max<int64_t>(std::llround(concurrency), 1));
    d_corr_ = s.itl_sum / static_cast<double>(s.itl_n) / engine_->decode_s(b, context);
  }

  SlaConfig cfg_;
  IntervalSums sums_;
  std::vector<cluster::ReplicaMetrics> latest_;
  std::optional<Engine> engine_;
  double isl_ = 0, osl_ = 0;        // of the turns finished, the last known
  double p_corr_ = 1, d_corr_ = 1;  // measured / expected TTFT and ITL
};

}  // namespace

void add_planner_dynamo_sla(cluster::PlannerRegistry& reg) {
  reg.add("dynamo-sla",
          "Dynamo's SLA planner: ceil(rate x ISL / prefill thpt), ceil(rate x OSL / decode thpt "
          "at the ITL)",
          [](const Params& p) {
            SlaConfig c;
            c.interval_s = planners::interval_param(p, "adjustment_interval", 180,
                                                    "seconds between decisions");
            c.itl_s =
                planners::seconds_param(p, "itl_target_s", 0.05, "inter-token latency target (s)");
            c.step = planners::step_param(p);
            c.correction = p.get<bool>("correction", true);
            p.done("planner 'dynamo-sla'");
            return std::make_unique<DynamoSla>(c);
          });
}

}  // namespace isim::policy
