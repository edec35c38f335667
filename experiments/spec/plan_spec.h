// The input of `isim plan` (experiments/plan/plan.h runs it): the workload, the candidates
// (deployment x policy), routers, fleet layouts, SLOs and search settings.
//
// Contract:
// - A plan spec names a workload (`trace:` and `arrival:` as in an experiment, without a rate),
//   `peak_rate`, `slo:` (METRIC.STAT -> upper limit), `search:` settings, `seeds:`, default
//   `engine:` and `policies:`, `routers:` (default [session-affinity]) and `deployments:` (name
//   -> gpu, profile, tp, price_per_gpu_hour, optional engine, policies, dp, ep, ep_overlap and
//   expert_skew). A candidate is one deployment with one policy behind one router, in file
//   order (routers innermost). Every key is checked; errors are InputError("FILE:LINE: key:
//   reason").
// - SLO metrics are per session (slo_metrics(): the statistic over the sessions arriving in the
//   measured span) or per turn (turn_slo_metrics(): request_ttft_s, itl_max_s; the statistic
//   over the turns starting in that span, sim/turn_metrics.h), e.g. itl_max_s.p99: 0.1.
// - DP/EP deployments: dp, ep, ep_overlap and expert_skew have the bounds and meaning of a
//   cluster group's (cluster_spec.h, read by the same code) and are checked against the profile
//   when it is loaded (check_parallel_profile). The plan's unit is then one group of dp engine
//   cores of tp GPUs (dp x tp GPUs; on a MoE model the cores step in lockstep over the links of
//   the plan's `cluster: {links: ...}`); a P:D split with such a deployment is an error, as
//   lockstep groups in a disaggregated fleet are not simulated.
// - Disaggregation axes (experiments/spec/cluster_spec.h has the cluster side):
//     pd_splits: [mixed, "1:3", "1:1"]        # default [mixed]
//     planners: [static, dynamo-threshold, {name: online, PARAM: VALUE}]   # default [static]
//     cluster: {links: ..., split: ..., switching: ...}   # as in an experiment's cluster:
//   A split "P:D" is a ratio, since the plan sizes the fleet: a fleet of n replicas has
//   round(n x P / (P + D)) prefill replicas, at least 1 and at most n - 1, prefill first, the
//   rest decode (pd_ratio_roles); a fleet of one with a split fails. P and D are whole numbers
//   >= 1; two entries of one ratio (1:3, 2:6) are one listed twice. A fleet layout is one split
//   with one planner, splits outer: a mixed fleet takes only `static`, a planner other than
//   static needs a P:D split in the list. The capacity search (one replica, mixed) is shared by
//   every router and layout; the fleet search runs per router and layout. The report names
//   each result's split, planner and the sized fleet's prefill:decode counts.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "cluster/disagg.h"
#include "core/knobs.h"
#include "core/params.h"
#include "experiments/spec/experiment.h"
#include "experiments/spec/slo.h"

namespace isim::exp {

// The highest rate a plan may name (peak_rate, search rates), in sessions per second.
inline constexpr double kMaxPlanRate = 1e6;
// The most a fleet search may scale its first guess (search.max_fleet_factor).
inline constexpr double kMaxFleetFactor = 64;

// `search:`, one knob table (core/knobs.h). A run at rate r draws ceil(r x window_s) sessions
// (poisson), at most trace::kMaxSessions: peak_rate x window_s is checked when the spec is read,
// each probe's rate x window_s before it draws (experiments/plan/plan_sim.cpp).
struct SearchSpec {
  double start_rate = 1.0;      // sessions/s of the first probe
  double min_rate = 0;          // below it a candidate is infeasible (0 = start_rate / 64)
  double max_rate = 10000;      // a candidate passing here is reported as at least this
  double tolerance = 0.05;      // stop when (fail - pass) <= tolerance x pass
  double window_s = 300;        // poisson: sessions arrive over this long (ceil(rate x window))
  double warmup = 0.2;          // leading fraction of the arrival window not measured
  double drain_s = 120;         // slack past the last session's unqueued finish before a cut
  double divergence = 0.05;     // queue growth rate, as a fraction of the arrival rate
  double max_fleet_factor = 2;  // simulated fleets up to max(ceil(f x guess), guess + 4)

  template <class Visit>
  void knobs(Visit&& k) {
    const Bound rate = above_upto(0, kMaxPlanRate);
    k("start_rate", start_rate, rate, "sessions per second", "rate of the first probe");
    k("min_rate", min_rate, rate, "sessions per second",
      "below it a candidate is infeasible (absent: start_rate / 64)");
    k("max_rate", max_rate, rate, "sessions per second",
      "a candidate passing here is reported as at least this");
    k("tolerance", tolerance, above_below(0, 1), "a fraction",
      "stop when (fail - pass) <= tolerance x pass");
    k("window_s", window_s, above_upto(0, 1e7).because("about 116 days"), "seconds",
      "poisson: sessions arrive over this long (ceil(rate x window_s) per run)");
    k("warmup", warmup, from_below(0, 1), "a fraction of the arrival window",
      "leading fraction of the window not measured");
    k("drain_s", drain_s, above_upto(0, 1e7).because("about 116 days"), "seconds",
      "slack past the last session's unqueued finish before a cut");
    k("divergence", divergence, above_upto(0, 100), "a fraction of the arrival rate",
      "queue growth rate that marks a run overloaded");
    k("max_fleet_factor", max_fleet_factor,
      in(1, kMaxFleetFactor).because("fleets past 64 x the guess say the guess is wrong"),
      "a factor >= 1", "simulated fleets up to max(ceil(f x guess), guess + 4)");
  }
};

// The plan's own numeric keys (core/knobs.h); peak_rate is required.
struct PlanKnobs {
  double peak_rate = 0;
  template <class Visit>
  void knobs(Visit&& k) {
    k("peak_rate", peak_rate, above_upto(0, kMaxPlanRate), "sessions per second",
      "the rate the sized fleet must serve (required)");
  }
};

struct Deployment {
  std::string name;            // its key under deployments:
  std::string gpu;             // what the table calls the GPU, e.g. H100-SXM
  std::string profile;         // absolute path
  std::string profile_source;  // the profile's provenance source: measured, imported, ...
  int tp = 1;
  double price_per_gpu_hour = 0;
  // Data and expert parallelism, as a cluster group's keys (cluster_spec.h): the unit is one
  // group of dp engine cores of tp GPUs each (dp = 1 without ep: one replica, as before).
  ParallelKnobs par;
  bool parallel() const { return par.dp > 1 || par.ep; }
  int64_t gpus_per_group() const { return int64_t{par.dp} * tp; }
};

struct Candidate {
  size_t deployment = 0;  // index into PlanSpec::deployments
  std::string policy;     // label: name, with parameters as name(k=v,...)
  Experiment experiment;  // one policy; trace size, rate and seed are set per run
};

// One entry of `routers:`.
struct RouterChoice {
  std::string name;  // a registered router (policies/routers.h)
  Params params;
  std::string label;  // name, with parameters as name(k=v,...)
};

// One entry of `pd_splits:`: mixed, or prefill:decode replicas in the ratio P:D.
struct SplitChoice {
  std::string label = "mixed";      // "mixed" or "P:D" as given
  int32_t prefill = 0, decode = 0;  // 0:0 when mixed
  bool mixed() const { return prefill == 0; }
};

// One entry of `planners:`.
struct PlannerChoice {
  std::string name = "static";  // a registered planner (policies/planners.h)
  Params params;
  std::string label = "static";  // name, with parameters as name(k=v,...)
};

// A fleet layout: indices into PlanSpec::pd_splits and PlanSpec::planners.
struct Layout {
  size_t split = 0, planner = 0;
};

struct PlanSpec {
  std::string name = "plan";
  std::string origin;
  std::vector<uint64_t> seeds = {1, 2, 3};
  double peak_rate = 0;
  std::vector<Slo> slos;
  SearchSpec search;
  std::vector<Deployment> deployments;
  std::vector<Candidate> candidates;  // deployment x policy: what a capacity search runs
  std::vector<RouterChoice> routers = {{"session-affinity", Params{}, "session-affinity"}};
  std::vector<SplitChoice> pd_splits = {SplitChoice{}};
  std::vector<PlannerChoice> planners = {PlannerChoice{}};
  std::vector<Layout> layouts = {Layout{}};  // the valid (split, planner) pairs, splits outer
  cluster::DisaggConfig disagg;  // `cluster:` links, split and switching of the P:D fleets
};

PlanSpec parse_plan(const YAML::Node& root, const std::string& file, const std::string& base_dir);
// Loads a plan file and applies `-p key=value` overrides first (dotted paths, e.g.
// peak_rate=80, deployments.h100.price_per_gpu_hour=2.5, slo.ttft_s.p99=1).
PlanSpec load_plan(const std::string& path, const std::vector<std::string>& overrides);

}  // namespace isim::exp
