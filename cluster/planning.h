// Planning: a disaggregated fleet's planner loop (cluster/planner.h): the observations of each
// pull interval, the pulls and the decisions, whose role changes Roles applies.
//
// Contract:
// - The planner is pulled and asked at its intervals (> 0, else std::logic_error) from the
//   first arrival (`start`) until the last session ends; a pull sees what happened since the
//   last one (TTFTs, ITLs, turns, prefill requests, each replica's counters since then).
// - The paused-agent population: `paused` (from Intercepts) starts a session's entry, with the
//   kind of the tool it called; `intercept_ended` closes it, recording the duration and the
//   tool's returned tokens (the next turn's input, known now that it returned); the next turn's
//   output is reported by kind when `segment_done` says that turn finished. A pull lists every
//   open entry as the holder sees the session now (context, KV kept, replica).
// - `decide` hands the planner the switch cost it was built with and each replica's GPU KV
//   capacity in tokens.
// - Its events do not count as the run's activity: the run ends at the last other event.
// Events: kPull and kDecide (arg unused).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "cluster/fleet.h"
#include "cluster/planner.h"

namespace isim::cluster {

class Planning final : public Component {
 public:
  enum Event : int32_t { kPull = 0, kDecide = 1 };

  // `planner` may be null (static roles): nothing is pulled nor asked.
  Planning(Fleet& f, Planner* planner, double switch_cost_s = 0);
  void handle(const sim::Event& ev) override;
  bool keeps_run() const override { return false; }
  void start();
  // Observations of the current interval.
  // `r`: the replica that emitted the token (or ended the turn); -1: fleet-wide only.
  void first_token(sim::Nanos ttft, int32_t r = -1, int64_t context = 0);
  void segment_done(const sim::SessionState& s, int64_t outputs, double decode_s, int32_t r = -1);
  void prefill_request(int64_t uncached_tokens);
  void arrival(int64_t input_tokens);
  void paused(const sim::SessionState& s);
  void intercept_ended(int32_t i);

 private:
  // Per-replica counters at the last pull, to report what each replica did since.
  struct PullMark {
    int64_t prefill_tokens = 0, decode_tokens = 0, iterations = 0;
    sim::Nanos busy = 0;
  };
  struct PauseMark {
    std::string kind;
    sim::Nanos since = 0;
  };
  void pull();
  void decide();
  int64_t active_blocks(int32_t r);
  void list_paused(FleetSnapshot& snap) const;

  Planner* planner_;
  FleetSnapshot window_;
  double ttft_sum_ = 0, itl_sum_ = 0, isl_sum_ = 0, osl_sum_ = 0;
  std::vector<PullMark> marks_;
  // Per replica, this pull interval: first tokens (count, TTFT sum, context sum), gaps.
  struct ReplicaWindow {
    int64_t ttft_n = 0, itl_n = 0;
    double ttft_sum = 0, isl_sum = 0, itl_sum = 0;
  };
  std::vector<ReplicaWindow> per_replica_;
  // active_blocks' marks: block b of replica r was counted at pull `stamp_` (linear, no sort).
  std::vector<std::vector<uint32_t>> seen_;
  uint32_t stamp_ = 0;
  sim::Nanos last_pull_ = 0;
  double switch_cost_s_ = 0;
  std::map<int32_t, PauseMark> paused_;        // by session: in an intercept now
  std::map<int32_t, std::string> after_kind_;  // by session: the kind of the intercept that
                                               // preceded the turn it runs now
};

}  // namespace isim::cluster
