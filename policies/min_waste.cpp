// InferCept's min-waste policy (ICML 2024), re-deciding every iteration as the design says:
//   1. for every paused session holding GPU KV, m_i = min(W_p, W_dc);
//   2. visit sessions by m_i, largest first, and swap each out (pipelined, within this
//      iteration's swap-out budget and the CPU pool) while budget remains;
//   3. every other paused session is discarded if W_dc < W_p, otherwise preserved.
// Swaps never stall: the engine moves them beside compute within per-iteration PCIe budgets,
// swaps resumed sessions back in within the swap-in budget, and rebuilds discarded contexts in
// chunks of max(S - R, 1) tokens mixed with the decodes.
//
// The swap budget is the engine's own for this iteration (ReplicaView::swap_budget): its window
// is the iteration's forward estimate, swap-ins come first and the two directions share it.
//
// Two refinements, both stated in the README: a session is swapped only when its estimated
// remaining intercept is longer than its swap-in would take (otherwise the swap would delay its
// resume, which W_p does not see); and a session the CPU pool cannot take falls to step 3
// (discarded if W_dc < W_p, otherwise preserved); such a discard is counted
// (swap_fallback_discards).
//
// Parameters: estimator = oracle | elapsed | history (default oracle);
//             history_min_samples = N (default 8).
#include <algorithm>

#include "core/input_error.h"
#include "policies/builtin.h"
#include "policies/estimator.h"
#include "policies/waste.h"
#include "sim/policy.h"

namespace isim::policy {

namespace {

class MinWaste final : public sim::Policy {
 public:
  MinWaste(std::unique_ptr<DurationEstimator> est, int64_t min_samples)
      : est_(std::move(est)), min_samples_(min_samples) {}

  std::string name() const override { return "min-waste"; }
  bool pipelined_swap() const override { return true; }
  bool chunked_recompute() const override { return true; }
  std::vector<std::pair<std::string, std::string>> describe() const override {
    return {{"estimator", est_->name()}, {"history_min_samples", std::to_string(min_samples_)}};
  }

  // Decisions are made every iteration; at the pause itself the KV simply stays.
  sim::PauseAction on_pause(const sim::SessionState&, const sim::ReplicaView&) override {
    return sim::PauseAction::kPreserve;
  }

  void on_resume(const sim::SessionState& s, double duration_s, const sim::ReplicaView&) override {
    est_->observe(s.intercept_kind(), duration_s);
  }

  bool quiet_before_iteration(const sim::ReplicaView& e) const override {
    return e.paused().empty();
  }

  void before_iteration(const sim::ReplicaView& e, sim::KvDecisions& d) override {
    if (e.paused().empty()) return;
    const auto& cm = e.cost_model();
    const double S = static_cast<double>(cm.saturation_tokens());
    const double T_S = sim::to_seconds(cm.T(cm.saturation_tokens()));
    const double a = cm.marginal_ns_per_token() * 1e-9;
    const double M = static_cast<double>(e.running_kv_tokens());
    const double R = e.decoding_sessions();
    const double now = sim::to_seconds(e.now());
    const int64_t bt = e.block_tokens();
    const int64_t bytes_per_block = e.blocks().block_bytes;

    cands_.clear();
    for (int32_t idx : e.paused()) {
      const auto& s = e.session(idx);
      if (s.gpu_blocks.empty()) continue;
      Cand c;
      c.idx = idx;
      c.t_hat = est_->remaining_for(s, now - sim::to_seconds(s.pause_start));
      const double on_gpu = std::min<double>(static_cast<double>(s.kv),
                                             static_cast<double>(s.gpu_blocks.size() * bt));
      c.w_p = waste_preserve(c.t_hat, on_gpu);
      c.w_dc = waste_discard_chunked(static_cast<double>(s.kv), S, R, M, T_S, a);
      c.m = std::min(c.w_p, c.w_dc);
      cands_.push_back(c);
    }
    std::stable_sort(cands_.begin(), cands_.end(),
                     [](const Cand& x, const Cand& y) { return x.m > y.m; });

    // The budget the engine will apply this iteration: a copy, so that requests taken from it
    // are exactly what the engine moves.
    sim::SwapBudget budget = e.swap_budget();
    int64_t cpu_free = e.cpu().free();
    for (const Cand& c : cands_) {
      const auto& s = e.session(c.idx);
      const auto blocks = static_cast<int64_t>(s.gpu_blocks.size());
      const int64_t held = blocks + static_cast<int64_t>(s.cpu_blocks.size());
      const double t_in = sim::to_seconds(
          cm.transfer(held * bytes_per_block, 1, sim::Direction::kHostToDevice, false));
      const bool worth = c.t_hat > t_in && c.m > 0;
      const bool cpu_room = cpu_free >= blocks;
      if (worth && cpu_room) {
        const int64_t n =
            budget.blocks_that_fit(bytes_per_block, sim::Direction::kDeviceToHost, blocks);
        if (n > 0) {
          d.request_swap_out(c.idx, n);
          budget.take(n * bytes_per_block, sim::Direction::kDeviceToHost);
          cpu_free -= blocks;
          continue;
        }
      }
      // Step 3, also for a session the CPU pool cannot take.
      if (c.w_dc < c.w_p) {
        d.discard_paused(c.idx);
        if (worth && !cpu_room) d.count_swap_fallback();
      }
    }
  }

 private:
  struct Cand {
    int32_t idx;
    double t_hat, w_p, w_dc, m;
  };

  std::unique_ptr<DurationEstimator> est_;
  int64_t min_samples_;
  std::vector<Cand> cands_;
};

}  // namespace

namespace {

std::unique_ptr<sim::Policy> make_min_waste(const PolicyParams& p) {
  EstimatorOptions opt;
  const auto est = p.get<std::string>("estimator", "oracle");
  opt.history_min_samples =
      p.get<int64_t>("history_min_samples", opt.history_min_samples,
                     in(1, 1000000).because("10^6 past intercepts: more than any trace holds"),
                     "past intercepts of a kind before the history estimator trusts them");
  p.done("policy 'min-waste'");
  auto e = estimator_registry().create(est, p.key_path("estimator"), opt);
  return std::make_unique<MinWaste>(std::move(e), opt.history_min_samples);
}

}  // namespace

void add_policy_min_waste(PolicyRegistry& reg) {
  reg.add("min-waste",
          "InferCept: per iteration preserve, pipelined swap or chunked discard by least GPU "
          "memory waste (estimator=oracle|elapsed|history)",
          make_min_waste);
}

}  // namespace isim::policy
