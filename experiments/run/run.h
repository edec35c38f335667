// Running an experiment: prepare its inputs once (trace with arrivals, profile), then simulate
// each policy on them.
//
// Contract:
// - `prepare` loads and validates everything the runs need; all bad input surfaces here as
//   InputError, before any simulation starts.
// - A run's time series takes at most kMaxTimeSamples samples: when the trace alone (its last
//   arrival plus that session's intercepts) lasts longer than that many
//   metrics.timeseries_interval_s, prepare throws InputError naming the key and an interval that
//   fits (-p metrics.timeseries_interval_s=...). The spec reader (experiment.h) also refuses
//   intervals below kMinTimeSeriesInterval_s, which no trace could sample usefully. A run that
//   outlasts its trace (queueing) stops at the same cap during the run (cluster/cluster.cpp).
// - `run_policy` is deterministic: the same Inputs and PolicySpec give identical results.
#pragma once

#include <string>
#include <vector>

#include "cluster/simulation.h"
#include "experiments/spec/experiment.h"
#include "sim/engine_config.h"
#include "sim/profile.h"
#include "traces/session.h"

namespace isim::exp {

using sim::kMaxTimeSamples;

struct Inputs {
  trace::Trace trace;
  sim::Profile profile;
  std::vector<sim::Profile> group_profiles;  // cluster groups, in order (their own or `profile`)
  std::string trace_fingerprint;      // FNV-1a 64 of the trace as native JSONL (after arrivals)
  std::vector<std::string> notes;     // what importers reported (dropped intercepts, ...)
  std::vector<std::string> warnings;  // what likely is not what was meant (a replay burst)
};

// `with_profile` false leaves Inputs::profile empty (isim validate --calibrate-first measures it).
Inputs prepare(const Experiment& e, bool with_profile = true);
// Derives each engine's KV capacity as the runs will (the spec's engine on `in.profile`, or each
// cluster group's on its profile): a reserve or pool that leaves no KV block throws InputError,
// so that `isim run` refuses before it makes its folder. Callers that change the engine after
// prepare (validate --against takes vLLM's block count) check their own.
void check_kv_capacity(const Experiment& e, const Inputs& in);

// The profile of each cluster group (InputError when a group's tp differs from its profile's).
std::vector<sim::Profile> load_group_profiles(const Experiment& e, const sim::Profile& base);
// InputError naming cluster.replicas[g].dp or .ep when group g's dp/ep cannot run on profile `p`
// (ep on a dense model, experts not dividing over dp x tp, a MoE profile without a MoE term).
void check_parallel(const Experiment& e, size_t g, const sim::Profile& p);
// The lockstep part of one DP group of `g` on profile `p` over `links` (cluster/lockstep.h):
// group `number` for a MoE model with dp > 1 or ep, -1 (independent cores) otherwise.
cluster::DpSpec dp_spec(const ReplicaGroup& g, const sim::Profile& p,
                        const cluster::LinksConfig& links, int32_t number = 0);
// Whether a replica's KV manager uses the fleet's KV tiers (cluster/kv_tiers.h).
bool uses_tiers(const Experiment& e);

// Runs policy `p` on the experiment's cluster (a cluster of one without `cluster:`): every
// replica gets its own executor and policy instance, the cluster its router and, when the
// fleet is disaggregated (cluster.roles), a fresh instance of its planner. `observer` (not
// owned; null: none) is told every replica's iterations and session activities; `progress`
// (null: none) how far the run is (cluster::Progress). The summary carries the SLO attainment
// of `e.slo` and the overload verdict (experiments/run/goodput.h). The result keeps every
// turn's gaps as keeps_gaps(e, every_token) says. `threads`: what the replicas advance on between
// fleet events (cluster::simulate; the results do not depend on it).
cluster::RunResult run_policy(const Experiment& e, const Inputs& in, const PolicySpec& p,
                              cluster::Checks checks = false, sim::RunObserver* observer = nullptr,
                              const cluster::ProgressFn& progress = nullptr,
                              bool every_token = false, int32_t threads = 1);
// Whether a run keeps every turn's gaps (sim/turn_metrics.h), decided before it starts: when
// bench.json lists them (metrics.bench_json: detailed, its itls) or the caller places every
// token (`every_token`: isim run --metrics, validate --against). Otherwise the run's tallies
// carry every aggregate its outputs print.
bool keeps_gaps(const Experiment& e, bool every_token);

}  // namespace isim::exp
