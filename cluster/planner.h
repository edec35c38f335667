// Planner: moves replicas between the mixed, prefill and decode roles while a fleet runs.
//
// Contract:
// - The cluster pulls a FleetSnapshot every `pull_interval_s()` of simulated time and hands it
//   to `observe`; every `interval_s()` it calls `decide`, which returns role changes. Both
//   intervals are > 0; the first pull is at the first arrival, the first decision one
//   interval later.
// - A snapshot holds only what a running system can observe: each replica's role and state
//   now, and what happened during the last pull interval (arrivals routed to prefill, tokens
//   emitted, first-token and inter-token latencies of the turns that completed them, fleet-wide
//   and per replica). Never a session's future; no trace look-ahead.
// - The paused-agent population (`paused`, appended): every session now in an intercept, with
//   what its harness knows (the tool's kind, how long it has waited, its context, the KV its
//   holder keeps). `intercepts_ended` and `resumed_turns` are the past only: a tool's returned
//   tokens are known once it returned, a turn's output once the turn finished.
// - `decide` sees the snapshots observed so far (it keeps what it needs) and the context: the
//   roles now and each replica's cost model (the profile, which Dynamo's SLA planner measures
//   before deployment). It returns changes for distinct replicas, none to a replica that is
//   switching; the cluster keeps at least one prefill and one decode replica in a
//   disaggregated fleet and raises std::logic_error for a change that breaks that.
// - Deterministic: equal snapshots give equal decisions.
// - Registered by name (policies/planners.h); adding one is one file plus one registration line.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/registry.h"
#include "sim/cost_model.h"
#include "sim/time.h"

namespace isim {
class Params;  // core/params.h
}  // namespace isim

namespace isim::cluster {

enum class Role : uint8_t { kMixed, kPrefill, kDecode };
const char* role_name(Role r);  // "mixed", "prefill", "decode"

struct ReplicaMetrics {
  Role role = Role::kMixed;
  bool switching = false;             // between roles (draining or paying the switch cost)
  int64_t queued_prefill_tokens = 0;  // prefill still to do (ReplicaLoad)
  int32_t waiting_sessions = 0;       // sessions queued for a first or resumed prefill
  int32_t running_sessions = 0;
  int32_t decoding_sessions = 0;
  double kv_utilization = 0;        // GPU blocks in use / GPU blocks, now
  double busy_fraction = 0;         // share of the last pull interval spent iterating
  double mean_iteration_s = 0;      // mean iteration time over the last pull interval (0: none)
  int64_t prefill_tokens_done = 0;  // prefill tokens computed during the last pull interval
  int64_t decode_tokens_done = 0;   // tokens decoded during the last pull interval
  // vLLM's kv_cache_usage: GPU blocks held by requests that are running, waiting, swapped or
  // moving / GPU blocks, now. Cached-free blocks and paused sessions' idle KV (which the
  // engine may evict) count as free, unlike in kv_utilization.
  double kv_cache_usage = 0;
  int64_t active_kv_blocks = 0;  // those blocks
  // Over the last pull interval, on this replica: turns that emitted their first token here,
  // their mean TTFT and mean context at that token (0: none); inter-token gaps of turns that
  // ended here and their mean.
  int64_t ttft_count = 0;
  double ttft_mean_s = 0;
  double ttft_isl_mean = 0;
  int64_t itl_count = 0;
  double itl_mean_s = 0;
};

// A session paused in an intercept at the pull (FleetSnapshot::paused).
struct PausedSession {
  std::string kind;            // the intercept's kind (the tool called; "" when untyped)
  double elapsed_s = 0;        // since it paused
  int64_t context_tokens = 0;  // its context now
  int64_t held_kv_tokens = 0;  // KV tokens its holder still keeps for it (GPU or CPU)
  int32_t replica = -1;        // the replica holding it
};

// An intercept that ended during the pull interval.
struct InterceptEnded {
  std::string kind;
  double duration_s = 0;
  int64_t returned_tokens = 0;  // the tool's result: the next turn's new input
};

// A turn that followed an intercept of `kind` and emitted its last token during the interval.
struct TurnAfterIntercept {
  std::string kind;
  int64_t output_tokens = 0;
};

struct FleetSnapshot {
  sim::Nanos t = 0;  // when it was pulled
  double dt_s = 0;   // the pull interval it covers
  std::vector<ReplicaMetrics> replicas;
  // Over the last pull interval:
  int64_t prefill_requests = 0;  // prefills the split sent to prefill replicas (new sessions
                                 // and resumed turns; local prefills are not counted here)
  int64_t prefill_tokens = 0;    // their uncached input tokens, as routed
  int64_t decode_tokens = 0;     // output tokens emitted, fleet-wide
  int64_t ttft_count = 0;        // turns that emitted their first token
  double ttft_mean_s = 0;        // their mean time to first token (0: none)
  int64_t itl_count = 0;         // inter-token gaps observed
  double itl_mean_s = 0;         // their mean (0: none)
  int64_t turns_finished = 0;    // turns (segments) that emitted their last token
  double isl_mean = 0;           // those turns' mean input: the whole context before their
                                 // outputs, as a stateless API receives it
  double osl_mean = 0;           // those turns' mean output tokens
  // The paused-agent population now (session order), and the past of the last pull interval.
  std::vector<PausedSession> paused;
  std::vector<InterceptEnded> intercepts_ended;
  std::vector<TurnAfterIntercept> resumed_turns;
  int64_t arrivals = 0;              // new sessions that arrived
  int64_t arrival_input_tokens = 0;  // their first turns' input (before any prefix-cache hit)
};

struct RoleChange {
  int32_t replica = 0;
  Role to = Role::kMixed;
  bool operator==(const RoleChange&) const = default;
};

struct PlannerContext {
  sim::Nanos now = 0;
  std::vector<Role> roles;      // by replica, now: a zero-downtime switch shows its new role at
                                // once; a draining replica its old role until its work is done
  std::vector<char> switching;  // by replica
  std::vector<const sim::CostModel*> cost_models;  // by replica
  std::vector<int32_t> max_num_seqs;               // by replica
  std::vector<int64_t> max_num_batched_tokens;     // by replica
  double switch_cost_s = 0;                        // cluster.switching.cost_s
  std::vector<int64_t> kv_capacity_tokens;         // by replica: GPU blocks x block tokens
};

class Planner {
 public:
  virtual ~Planner() = default;
  virtual std::string name() const = 0;
  virtual double pull_interval_s() const { return 1.0; }
  virtual double interval_s() const = 0;
  virtual void observe(const FleetSnapshot& s) = 0;
  virtual std::vector<RoleChange> decide(const PlannerContext& c) = 0;
  // Facts for the run's provenance (e.g. {"interval_s", "30"}).
  virtual std::vector<std::pair<std::string, std::string>> describe() const { return {}; }
};

using PlannerRegistry = Registry<Planner, const Params&>;

}  // namespace isim::cluster
