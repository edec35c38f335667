// agent-aware: ours (issue 15; docs/agent-kv.md). It uses what an agent harness can tell a
// server (traces/session.h: context events, retention hints, the intercept's kind) and the past,
// never the trace's future:
// - Worthless blocks are unhashed at once (sim/kv_manager.h): the part of a context a reset
//   summarised away, and an ended subagent's own blocks past the prefix it shares.
// - Block position (values_shared): released blocks of the shareable prefix (the prompt's
//   hashes, a fork's parent prefix) and blocks two sessions held at once leave the prefix cache
//   only after every other cached block. A shared system prompt outlives a session's own tail.
// - Eviction order among idle sessions holding GPU KV: the lowest retention priority first (the
//   highest priority among the session's active hints that cover its KV; `default_priority`
//   without one), then the longest expected remaining idle time, then the newest arrival.
// - Expected remaining idle time: a waiting session's is 0. A paused one's is the mean residual
//   life of the completed intercepts of its stage, the elapsed time until `history_min_samples`
//   of its kind have ended. The stage is the intercept's kind and the session's role: a
//   subagent's tool calls (file reads, searches) and its root's (which include waiting for whole
//   subagents, and the user) are different populations; in the Claude Code traces their think
//   times average 6.5 s and 206 s. A stage with fewer than `history_min_samples` ended
//   intercepts uses its kind's history over both roles.
// A hint is active while its segment is the session's current one (through the intercept after
// it), for at most `duration_s` from the segment's start when that is > 0.
// - Tiers (cluster/kv_tiers.h): evicted KV whose active priority is 0 is dropped (the harness
//   said it goes first); KV expected to stay idle longer than `pool_after_s` goes to the pool
//   (when there is one), keeping the node's CPU tier, shared by its replicas, for sessions
//   about to return; the rest goes to the node's CPU tier. Full tiers give up entries in the
//   eviction order above.
// Parameters: default_priority (0..100, default 50), history_min_samples (>= 1, default 8),
// pool_after_s (>= 0, default 60), and two switches for ablations, both on by default:
// value_shared (block position) and stage_history (the role in the stage; off: kind only).
#include <algorithm>
#include <map>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "core/input_error.h"
#include "policies/estimator.h"
#include "policies/kv_managers.h"

namespace isim::policy {

namespace {

class AgentAware final : public sim::KvManager {
 public:
  struct Options {
    int32_t default_priority = 50;
    int64_t min_samples = 8;
    double pool_after_s = 60;
    bool value_shared = true;
    bool stage_history = true;
  };
  explicit AgentAware(const Options& o)
      : default_priority_(o.default_priority),
        min_samples_(o.min_samples),
        pool_after_s_(o.pool_after_s),
        value_shared_(o.value_shared),
        stage_history_(o.stage_history),
        history_(estimator_registry().create("history", "kv manager 'agent-aware'",
                                             EstimatorOptions{o.min_samples})) {}
  std::string name() const override { return "agent-aware"; }
  bool frees_worthless() const override { return true; }
  bool values_shared() const override { return value_shared_; }
  void observe_intercept(const sim::SessionState& s, double duration_s) override {
    history_->observe(s.intercept_kind(), duration_s);
    if (!stage_history_) return;
    const std::string stage = stage_of(s);
    history_->observe(stage, duration_s);
    ++stage_samples_[stage];
  }
  bool evict_before(const sim::SessionState& a, const sim::SessionState& b,
                    sim::Nanos now) const override {
    const int32_t pa = priority(a, now), pb = priority(b, now);
    if (pa != pb) return pa < pb;
    const double ra = remaining_s(a, now), rb = remaining_s(b, now);
    if (ra != rb) return ra > rb;
    return a.arrival > b.arrival;
  }
  bool uses_tiers() const override { return true; }
  sim::Demote demote_to(const sim::SessionState& s, sim::Nanos now, bool cpu,
                        bool pool) const override {
    if (priority(s, now) == 0 || (!cpu && !pool)) return sim::Demote::kDrop;
    if (pool && (!cpu || remaining_s(s, now) > pool_after_s_)) return sim::Demote::kPool;
    return sim::Demote::kNodeCpu;
  }
  std::vector<std::pair<std::string, std::string>> describe() const override {
    return {{"default_priority", std::to_string(default_priority_)},
            {"history_min_samples", std::to_string(min_samples_)},
            {"pool_after_s", fmt::format("{}", pool_after_s_)},
            {"value_shared", value_shared_ ? "true" : "false"},
            {"stage_history", stage_history_ ? "true" : "false"}};
  }

 private:
  int32_t priority(const sim::SessionState& s, sim::Nanos now) const {
    const sim::Nanos start = s.segments_done() == 0 ? s.arrival : s.intercept_end;
    int32_t best = -1;
    for (const trace::Retention& r : s.retention()) {
      if (r.begin >= s.kv) continue;  // covers none of the KV it holds
      if (r.duration_s > 0 && now >= start + sim::from_seconds(r.duration_s)) continue;
      best = std::max(best, r.priority);
    }
    return best < 0 ? default_priority_ : best;
  }
  double remaining_s(const sim::SessionState& s, sim::Nanos now) const {
    if (s.phase != sim::Phase::kPaused) return 0;
    const double elapsed = sim::to_seconds(now - s.pause_start);
    const std::string stage = stage_of(s);
    const auto it = stage_samples_.find(stage);
    const bool known = it != stage_samples_.end() && it->second >= min_samples_;
    return history_->remaining_s(known ? stage : s.intercept_kind(), elapsed);
  }
  // Kinds are the trace's names; '\x1f' (a control character) keeps stage keys apart from them.
  static std::string stage_of(const sim::SessionState& s) {
    return s.intercept_kind() + (s.subagent() ? "\x1fsubagent" : "\x1froot");
  }

  int32_t default_priority_;
  int64_t min_samples_;
  double pool_after_s_;
  bool value_shared_;
  bool stage_history_;
  std::unique_ptr<DurationEstimator> history_;  // by kind, and by stage
  std::map<std::string, int64_t> stage_samples_;
};

}  // namespace

void add_kv_manager_agent_aware(KvManagerRegistry& reg) {
  reg.add("agent-aware",
          "ours: frees what resets and ended subagents make worthless; keeps shared prefixes "
          "longest; evicts by retention hint, then expected idle time by stage (history, no "
          "oracle)",
          [](const Params& p) {
            AgentAware::Options o;
            o.default_priority = static_cast<int32_t>(
                p.get<int64_t>("default_priority", 50, "an integer in [0, 100]",
                               [](int64_t v) { return v >= 0 && v <= 100; }));
            o.min_samples = p.get<int64_t>("history_min_samples", 8, "an integer >= 1",
                                           [](int64_t v) { return v >= 1; });
            o.pool_after_s = p.get<double>("pool_after_s", 60.0, "a number >= 0",
                                           [](double v) { return v >= 0; });
            o.value_shared = p.get<bool>("value_shared", true);
            o.stage_history = p.get<bool>("stage_history", true);
            p.done("kv manager 'agent-aware'");
            return std::make_unique<AgentAware>(o);
          });
}

}  // namespace isim::policy
