// agent-aware: ours (issues 15 and 35; docs/agent-kv.md). It uses what an agent harness can tell
// a server (traces/session.h: context events, retention hints, the intercept's kind) and the
// past, never the trace's future:
// - Worthless blocks are unhashed at once (sim/kv_manager.h): the part of a context a reset
//   summarised away, and an ended subagent's own blocks past the prefix it shares.
// - Block position (values_shared): released blocks of the shareable prefix (the prompt's
//   hashes, a fork's parent prefix) and blocks two sessions held at once leave the prefix cache
//   only after every other cached block. A shared system prompt outlives a session's own tail.
// - Eviction order among idle sessions holding GPU KV: the lowest retention priority first (the
//   hint in force, policies/kv_managers/hints.h; `default_priority` without one), then by
//   `value`:
//   - `reuse-cost` (the default): the lowest value first, where an idle session's value is
//       P(it returns within `horizon_s` | elapsed) x reload time / (bytes x expected idle time)
//     the reload time and the bytes of its KV as the fleet prices them (sim/kv_manager.h
//     ReloadPricer: a fetch from the tier it would go to, or a recompute, whichever is
//     cheaper; without a pricer, 1 s per token and 1 byte per token), the expected idle time
//     the mean residual life below (at least 1 ms). P comes from the stage's ended intercepts
//     (policies/estimator.h p_within); with fewer than `history_min_samples` of them, P = 1.
//     A waiting session's value is infinite (it needs its KV now). Ties: the newest arrival.
//   - `retention` (the issue-15 order, an ablation): the longest expected remaining idle time
//     first, then the newest arrival.
// - Expected remaining idle time: a waiting session's is 0. A paused one's is the mean residual
//   life of the completed intercepts of its stage, the elapsed time until `history_min_samples`
//   of its kind have ended. The stage is the intercept's kind and the session's role: a
//   subagent's tool calls and its root's (which include waiting for whole subagents, and the
//   user) are different populations. A stage with fewer than `history_min_samples` ended
//   intercepts uses its kind's history over both roles.
// - Tiers (cluster/kv_tiers.h): evicted KV whose active priority is 0 is dropped (the harness
//   said it goes first); KV expected to stay idle longer than `pool_after_s` goes to the pool
//   (when there is one), keeping the node's CPU tier for sessions about to return; the rest
//   goes to the node's CPU tier. Full tiers give up entries in the eviction order above.
// - Prefetch (`prefetch`, on by default; tiers only): every `prefetch_interval_s` the fleet asks
//   about each paused session whose KV is in a tier; it comes back to the GPU when, from the
//   stage's history, P(the tool returns within fetch time + `prefetch_margin_s` | elapsed) >=
//   `prefetch_threshold` (never without history). The fleet checks the replica's room.
// Parameters: default_priority (0..100, default 50), history_min_samples (>= 1, default 8),
// pool_after_s (>= 0, default 60), value (reuse-cost | retention), horizon_s (> 0, default 60),
// prefetch (default true), prefetch_threshold (0..1, default 0.5), prefetch_margin_s (>= 0,
// default 1), prefetch_interval_s (> 0, default 1), and two ablation switches, both on by
// default: value_shared (block position) and stage_history (the role in the stage).
#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "core/input_error.h"
#include "policies/estimator.h"
#include "policies/kv_managers.h"
#include "policies/kv_managers/hints.h"

namespace isim::policy {

namespace {

class AgentAware final : public sim::KvManager {
 public:
  struct Options {
    int32_t default_priority = 50;
    int64_t min_samples = 8;
    double pool_after_s = 60;
    bool reuse_cost = true;
    double horizon_s = 60;
    bool prefetch = true;
    double prefetch_threshold = 0.5;
    double prefetch_margin_s = 1;
    double prefetch_interval_s = 1;
    bool value_shared = true;
    bool stage_history = true;
  };
  explicit AgentAware(const Options& o)
      : o_(o),
        history_(estimator_registry().create("history", "kv manager 'agent-aware'",
                                             EstimatorOptions{o.min_samples})) {}
  std::string name() const override { return "agent-aware"; }
  bool frees_worthless() const override { return true; }
  bool values_shared() const override { return o_.value_shared; }
  void observe_intercept(const sim::SessionState& s, double duration_s) override {
    history_->observe(s.intercept_kind(), duration_s);
    if (!o_.stage_history) return;
    const std::string stage = stage_of(s);
    history_->observe(stage, duration_s);
    ++stage_samples_[stage];
  }
  bool evict_before(const sim::SessionState& a, const sim::SessionState& b,
                    sim::Nanos now) const override {
    const int32_t pa = priority(a, now), pb = priority(b, now);
    if (pa != pb) return pa < pb;
    if (o_.reuse_cost) {
      const double va = value(a, now), vb = value(b, now);
      if (va != vb) return va < vb;
    } else {
      const double ra = remaining_s(a, now), rb = remaining_s(b, now);
      if (ra != rb) return ra > rb;
    }
    return a.arrival > b.arrival;
  }
  bool uses_tiers() const override { return true; }
  sim::Demote demote_to(const sim::SessionState& s, sim::Nanos now, bool cpu,
                        bool pool) const override {
    if (priority(s, now) == 0 || (!cpu && !pool)) return sim::Demote::kDrop;
    if (pool && (!cpu || remaining_s(s, now) > o_.pool_after_s)) return sim::Demote::kPool;
    return sim::Demote::kNodeCpu;
  }
  void set_pricer(const sim::ReloadPricer* p) override { pricer_ = p; }
  double prefetch_interval_s() const override { return o_.prefetch ? o_.prefetch_interval_s : 0; }
  bool prefetch_now(const sim::SessionState& s, sim::Nanos now, double fetch_s) const override {
    if (!o_.prefetch || s.phase != sim::Phase::kPaused) return false;
    const double p =
        history_->p_within(history_key(s), elapsed_s(s, now), fetch_s + o_.prefetch_margin_s);
    return p >= 0 && p >= o_.prefetch_threshold;
  }
  std::vector<std::pair<std::string, std::string>> describe() const override {
    return {{"default_priority", std::to_string(o_.default_priority)},
            {"history_min_samples", std::to_string(o_.min_samples)},
            {"pool_after_s", fmt::format("{}", o_.pool_after_s)},
            {"value", o_.reuse_cost ? "reuse-cost" : "retention"},
            {"horizon_s", fmt::format("{}", o_.horizon_s)},
            {"prefetch", o_.prefetch ? "true" : "false"},
            {"prefetch_threshold", fmt::format("{}", o_.prefetch_threshold)},
            {"prefetch_margin_s", fmt::format("{}", o_.prefetch_margin_s)},
            {"prefetch_interval_s", fmt::format("{}", o_.prefetch_interval_s)},
            {"value_shared", o_.value_shared ? "true" : "false"},
            {"stage_history", o_.stage_history ? "true" : "false"}};
  }

 private:
  int32_t priority(const sim::SessionState& s, sim::Nanos now) const {
    return active_priority(s, now, o_.default_priority);
  }
  static double elapsed_s(const sim::SessionState& s, sim::Nanos now) {
    return sim::to_seconds(now - s.pause_start);
  }
  // The stage when it has enough history of its own, else the intercept's kind.
  std::string history_key(const sim::SessionState& s) const {
    const std::string stage = stage_of(s);
    const auto it = stage_samples_.find(stage);
    const bool known = it != stage_samples_.end() && it->second >= o_.min_samples;
    return known ? stage : s.intercept_kind();
  }
  double remaining_s(const sim::SessionState& s, sim::Nanos now) const {
    if (s.phase != sim::Phase::kPaused) return 0;
    return history_->remaining_s(history_key(s), elapsed_s(s, now));
  }
  // P(reuse within H) x reload seconds per byte-second held; +infinity for a waiting session.
  double value(const sim::SessionState& s, sim::Nanos now) const {
    if (s.phase != sim::Phase::kPaused) return std::numeric_limits<double>::infinity();
    const std::string key = history_key(s);
    const double e = elapsed_s(s, now);
    const double p_raw = history_->p_within(key, e, o_.horizon_s);
    const double p = p_raw < 0 ? 1.0 : p_raw;
    const double idle = std::max(history_->remaining_s(key, e), 1e-3);
    const int64_t tokens = std::max<int64_t>(s.kv, 1);
    const double reload = pricer_ ? pricer_->reload_s(tokens) : static_cast<double>(tokens);
    const double bytes = pricer_ ? pricer_->bytes(tokens) : static_cast<double>(tokens);
    return p * reload / (bytes * idle);
  }
  // Kinds are the trace's names; '\x1f' (a control character) keeps stage keys apart from them.
  static std::string stage_of(const sim::SessionState& s) {
    return s.intercept_kind() + (s.subagent() ? "\x1fsubagent" : "\x1froot");
  }

  Options o_;
  std::unique_ptr<DurationEstimator> history_;  // by kind, and by stage
  std::map<std::string, int64_t> stage_samples_;
  const sim::ReloadPricer* pricer_ = nullptr;  // not owned; null: no tiers
};

}  // namespace

void add_kv_manager_agent_aware(KvManagerRegistry& reg) {
  reg.add("agent-aware",
          "ours: frees what resets and ended subagents make worthless; keeps shared prefixes "
          "longest; evicts by retention hint, then reuse probability x reload cost per "
          "byte-second (history, no oracle); prefetches from tiers before a tool likely returns",
          [](const Params& p) {
            AgentAware::Options o;
            const Bound secs = in(0, 1e7).because("10^7 s (116 days): longer than any trace");
            o.default_priority = static_cast<int32_t>(p.get<int64_t>(
                "default_priority", 50, in(0, 100), "priority of a segment that gives none"));
            o.min_samples = p.get<int64_t>(
                "history_min_samples", 8,
                in(1, 1000000).because("10^6 past intercepts: more than any trace holds"),
                "past intercepts of a kind before its history is trusted");
            o.pool_after_s = p.get<double>("pool_after_s", 60.0, secs,
                                           "idle seconds before a session's KV joins the pool");
            o.reuse_cost = p.get<std::string>("value", "reuse-cost", "reuse-cost or retention",
                                              [](const std::string& v) {
                                                return v == "reuse-cost" || v == "retention";
                                              }) == "reuse-cost";
            o.horizon_s = p.get<double>(
                "horizon_s", 60.0,
                above_upto(0, 1e7).because("10^7 s (116 days): longer than any trace"),
                "seconds ahead a session's reuse is valued");
            o.prefetch = p.get<bool>("prefetch", true);
            o.prefetch_threshold = p.get<double>("prefetch_threshold", 0.5, in(0, 1),
                                                 "return chance above which KV is prefetched");
            o.prefetch_margin_s = p.get<double>("prefetch_margin_s", 1.0, secs,
                                                "seconds before the return a prefetch starts");
            o.prefetch_interval_s =
                p.get<double>("prefetch_interval_s", 1.0,
                              in(0.001, 1e7).because("10^7 s (116 days): longer than any trace"),
                              "seconds between prefetch checks (>= 1 ms, or a run is all checks)");
            o.value_shared = p.get<bool>("value_shared", true);
            o.stage_history = p.get<bool>("stage_history", true);
            p.done("kv manager 'agent-aware'");
            return std::make_unique<AgentAware>(o);
          });
}

}  // namespace isim::policy
